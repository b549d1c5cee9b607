import { describe, expect, it } from "vitest";
import { describeRuns, type RunStatus } from "../../src/cli/runStatus.ts";

/** A running run as `readRunStatuses` gives it. */
const running: RunStatus = {
  state: "running",
  pid: 4242,
  host: "login1",
  graph: "/home/me/pipeline.graph.ts",
  argv: ["node", "baton", "run", "pipeline.graph.ts"],
  startedAt: "2026-12-06T06:00:00.000Z",
  ageMs: 4_000,
  address: "ws://login1:7000",
  secretFile: "/home/me/.baton/run/run-1-4242@login1.secret",
  lock: "/home/me/.baton/run/graph-0123456789abcdef.lock",
  lockRenewedAgoMs: 1_000,
};

describe("describeRuns", () => {
  it("says where workers join, and where a run listening on every interface listens", () => {
    const wildcard = { ...running, listenAddress: "ws://0.0.0.0:7000" };
    expect(describeRuns(".baton/run", [wildcard], [])).toContain(
      "\n  workers join at ws://login1:7000 (listening on ws://0.0.0.0:7000) with --secret-file /home/me/.baton/run/run-1-4242@login1.secret\n",
    );
    expect(describeRuns(".baton/run", [running], [])).toContain(
      "\n  workers join at ws://login1:7000 with --secret-file",
    );
  });
});
