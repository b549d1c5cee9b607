import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { parseRankHost } from "../../src/runtime/sshTarget.ts";

describe("parseRankHost", () => {
  it("reads local and ssh:// hosts, with and without a port", () => {
    expect(parseRankHost("local")).toEqual({ kind: "local", spec: "local" });
    expect(parseRankHost("ssh://alice@gpu-2")).toEqual({
      kind: "ssh",
      user: "alice",
      host: "gpu-2",
      port: undefined,
      spec: "ssh://alice@gpu-2",
    });
    expect(parseRankHost("ssh://bob.smith@10.0.0.7:2222")).toMatchObject({
      user: "bob.smith",
      host: "10.0.0.7",
      port: 2222,
      spec: "ssh://bob.smith@10.0.0.7:2222",
    });
    expect(parseRankHost("ssh://ci@[fe80::1]:22")).toMatchObject({
      host: "fe80::1",
      port: 22,
      spec: "ssh://ci@[fe80::1]:22",
    });
    expect(parseRankHost("ssh://ci@node_7.cluster")).toMatchObject({ host: "node_7.cluster" });
  });

  it.each([
    ["", /neither `local` nor an ssh:\/\/ URL/],
    ["LOCAL", /neither/],
    ["gpu-2", /neither/],
    ["ssh://gpu-2", /user is missing/],
    ["ssh://alice:hunter2@gpu-2", /passwords are never accepted/],
    ["ssh://-oProxyCommand=x@gpu-2", /user "-oProxyCommand=x"/],
    ["ssh://alice@-oProxyCommand=x", /host "-oProxyCommand=x"/],
    ["ssh://alice@gpu-2/path", /host "gpu-2\/path"/],
    ["ssh://alice@gpu 2", /host "gpu 2"/],
    ["ssh://alice@gpu-2:0", /port "0"/],
    ["ssh://alice@gpu-2:65536", /port "65536"/],
    ["ssh://alice@gpu-2:22x", /port "22x"/],
    ["ssh://alice@gpu-2:", /port ""/],
    ["ssh://alice@[fe80::1", /not closed/],
    ["ssh://alice@[gpu-2]", /not an IPv6 address/],
    // What JavaScript may pass: each was a TypeError (spec.startsWith is not a function).
    [5 as never, /^a host must be a string, not 5;/],
    [undefined as never, /^a host must be a string, not undefined;/],
    [{ host: "gpu-2" } as never, /^a host must be a string, not \{"host":"gpu-2"\};/],
  ])("refuses %j with a ConfigError that says what to write", (spec: string, why) => {
    let error: unknown;
    try {
      parseRankHost(spec);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(why);
    expect((error as Error).message).toMatch(/ssh:\/\/USER@HOST\[:PORT\]/);
  });

  it("refuses this machine by its loopback name, naming `local`, the host list's word for it", () => {
    expect(() => parseRankHost("localhost")).toThrow(
      new ConfigError(
        'host "localhost" is this machine\'s loopback, which a host list calls `local`: write `local` (as in local*2), or ssh://USER@localhost to start its ranks over ssh',
      ),
    );
    expect(() => parseRankHost("127.0.0.1")).toThrow(/loopback, which a host list calls `local`/);
    expect(() => parseRankHost("::1")).toThrow(/or ssh:\/\/USER@\[::1\] to start its ranks/);
  });
});
