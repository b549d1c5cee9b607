/**
 * `wsNet` as a JavaScript caller may call it: options it cannot take are a `ConfigError` at
 * the call, where `wsNet(null)` was a TypeError (reading 'connectTimeoutMs'), a wait given as
 * text (`"5s"`) or 0 made `connect` give up at once, and a typo of an option was ignored.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { wsNet } from "../../src/runtime/wsNet.ts";

describe("wsNet's options", () => {
  it.each([
    [
      null,
      "wsNet: the options must be an object, { connectTimeoutMs, closeTimeoutMs, lookup }, or nothing, not null",
    ],
    [
      { connectTimeout: 5_000 },
      "wsNet: unknown option connectTimeout; it takes connectTimeoutMs, closeTimeoutMs, lookup; did you mean connectTimeoutMs?",
    ],
    [
      { connectTimeoutMs: "5s" },
      'wsNet: connectTimeoutMs must be a positive number of ms, not "5s"',
    ],
    [{ closeTimeoutMs: 0 }, "wsNet: closeTimeoutMs must be a positive number of ms, not 0"],
    [
      { lookup: "127.0.0.1" },
      `wsNet: lookup must be a function, dns.lookup's (hostname, options, callback), not "127.0.0.1"`,
    ],
  ])("refuses options it cannot take, naming them (%#)", (options, message) => {
    const make = () => wsNet(options as never);
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(message);
  });

  it("takes no options, or its own", () => {
    expect(Object.keys(wsNet())).toEqual(["listen", "connect"]);
    expect(Object.keys(wsNet({ connectTimeoutMs: 1_000, closeTimeoutMs: 500 }))).toEqual([
      "listen",
      "connect",
    ]);
  });
});
