/**
 * What a launch on ssh hosts refuses before it connects anywhere is a `ConfigError`, so a rank
 * job that meets it fails at once instead of spending its retries on the same refusal.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { spawnRemoteRank } from "../../src/runtime/remoteRank.ts";
import { sshHost } from "../../src/runtime/sshHost.ts";
import { parseRankHost, type SshTarget } from "../../src/runtime/sshTarget.ts";

const target = parseRankHost("ssh://alice@gpu-2") as SshTarget;

describe("an ssh launch's refusals before any connection", () => {
  it("refuses an ssh option not written Key=Value", () => {
    const host = () => sshHost(target, { options: ["StrictHostKeyChecking no"], multiplex: false });
    expect(host).toThrow(ConfigError);
    expect(host).toThrow(
      'ssh option "StrictHostKeyChecking no" must be written Key=Value (as after ssh -o)',
    );
  });

  it("refuses an environment variable name a remote rank cannot be given", () => {
    const spawn = () =>
      spawnRemoteRank({
        host: sshHost(target, { multiplex: false }),
        argv: ["python3", "train.py"],
        logFile: "/nonexistent/never-written.log",
        env: { "NCCL-DEBUG": "INFO" },
      });
    expect(spawn).toThrow(ConfigError);
    expect(spawn).toThrow(
      '"NCCL-DEBUG" is not a variable name a rank on an ssh host can be given (letters, digits and _, not first a digit): rename it in the launch\'s env',
    );
  });
});
