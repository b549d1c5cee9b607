import { describe, expect, it } from "vitest";
import {
  ConfigError,
  GraphError,
  JobModuleError,
  NonRetryableError,
  RankFileError,
  RankGroupError,
  RemoteHostError,
  TeardownError,
} from "../../src/errors.ts";
import { serializeThrown } from "../../src/runtime/serializeThrown.ts";

const frame = { kind: "train", id: "3f2a", attempt: 1 };

describe("serializeThrown: which failures another attempt cannot help", () => {
  it.each([
    ["a NonRetryableError", new NonRetryableError("the input names no file")],
    ["a GraphError", new GraphError("UNKNOWN_KIND", 'no kind "x"')],
    ["a ConfigError (a launch baton refuses)", new ConfigError("worldSize must be an integer")],
    [
      "a rank group whose program is not there",
      new RankGroupError("LAUNCH_FAILED", "cannot start", "dep-1", {}, false),
    ],
    ["a JobModuleError (a kind the worker has no handler for)", new JobModuleError("no kind")],
    [
      "a malformed manifest, which blocks its name until replaced",
      new RankFileError("not JSON", "/run/d/manifest.json", "baton.manifest/1", "not JSON"),
    ],
    [
      "a name whose manifest cannot be reaped for good",
      new RankGroupError("DEPLOYMENT_BLOCKED", "not JSON", "d", {}, false),
    ],
    [
      "an ssh host without the rank's program",
      new RemoteHostError("SSH_REMOTE", "baton: train: not found on gpu-2", "ssh://gpu-2", false),
    ],
  ])("%s is not retryable", (_, thrown) => {
    expect(serializeThrown(thrown, frame).retryable).toBe(false);
  });

  it.each([
    ["an Error", new Error("ECONNRESET")],
    ["a rank that crashed", new RankGroupError("RANK_FAILED", "rank 1 exited 4", "dep-1")],
    ["a rank not ready in time", new RankGroupError("BARRIER_TIMEOUT", "rank 0", "dep-1")],
    ["a rank whose heartbeat stopped", new RankGroupError("RANK_LOST", "rank 0", "dep-1")],
    ["a rank that could not start for now", new RankGroupError("LAUNCH_FAILED", "EAGAIN", "d")],
    ["a name another launcher holds", new RankGroupError("DEPLOYMENT_BLOCKED", "live", "d")],
    [
      "an orphan a reap could not stop yet",
      new TeardownError("d", [{ pid: 7, state: "disk-sleep" }]),
    ],
    ["an ssh host that did not answer", new RemoteHostError("SSH_UNREACHABLE", "refused", "h")],
  ])("%s is retried", (_, thrown) => {
    expect(serializeThrown(thrown, frame)).not.toHaveProperty("retryable");
  });
});
