/**
 * The pieces of remote-rank wiring that need no host: the manifest's remote ranks (their
 * host's state dir, and older manifests of local ranks still read) and the verdict over
 * several hosts (`tearDownAcrossHosts`: verified only when every host is, and the local
 * teardown retried once when only it failed).
 */
import { describe, expect, it } from "vitest";
import { RemoteHostError, TeardownError } from "../../src/errors.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { encodeStateFile, parseStateFile } from "../../src/rank/stateFile.ts";
import type { TeardownReport } from "../../src/runtime/tearDown.ts";
import { tearDownAcrossHosts } from "../../src/runtime/tearDownAcrossHosts.ts";

const base = {
  format: "baton.manifest/1",
  deployment: "dep-abcdefabcdef",
  launcher: { pid: 10, token: "t", host: "here" },
  worldSize: 2,
  argv: ["python3", "rank.py"],
  startedAt: 1,
};
const parse = (ranks: unknown[]) =>
  parseStateFile(MANIFEST_FORMAT, JSON.stringify({ ...base, ranks }), "/s/manifest.json");

describe("the manifest's remote ranks", () => {
  it("reads a remote rank with its host's state dir, and local ranks without one", () => {
    const ranks = [
      { rank: 0, localRank: 0, host: "local", pid: 11, pgid: 11 },
      {
        rank: 1,
        localRank: 0,
        host: "ssh://alice@gpu-2:2222",
        pid: 12,
        pgid: 12,
        stateDir: "/home/alice/.baton/run",
      },
    ];
    const manifest = parse(ranks);
    expect(manifest.ranks).toEqual(ranks);
    expect(manifest.ranks[0]).not.toHaveProperty("stateDir");
    const { format: _format, ...fields } = base;
    expect(
      parseStateFile(
        MANIFEST_FORMAT,
        encodeStateFile(MANIFEST_FORMAT, { ...fields, ranks: manifest.ranks }),
        "/s/m",
      ),
    ).toEqual(manifest);
  });

  it("refuses a remote rank without an absolute state dir, naming the field", () => {
    const remote = { rank: 1, localRank: 0, host: "ssh://alice@gpu-2", pid: 12, pgid: 12 };
    expect(() => parse([remote])).toThrow(/ranks\[0\]\.stateDir" must be an absolute path/);
    expect(() => parse([{ ...remote, stateDir: "relative/run" }])).toThrow(
      /ranks\[0\]\.stateDir" must be an absolute path; got "relative\/run"/,
    );
  });
});

const report = (steps: string[], elapsedMs = 5, swept: number[] = []): TeardownReport => ({
  verified: true,
  deployment: "dep-abcdefabcdef",
  elapsedMs,
  steps,
  swept,
  stopped: [],
  others: [],
  forbiddenGroups: [],
});

describe("tearDownAcrossHosts", () => {
  it("merges the reports of every host: the longest time, every step and swept pid", async () => {
    const merged = await tearDownAcrossHosts(
      async () => report(["here"], 5, [1]),
      [async () => report(["there"], 40, [2]), async () => report(["elsewhere"], 20)],
    );
    expect(merged).toMatchObject({ elapsedMs: 40, swept: [1, 2] });
    expect(merged.steps).toEqual(["here", "there", "elsewhere"]);
  });

  it("fails when one remote host is not verified or cannot be reached", async () => {
    const unreachable = new RemoteHostError("SSH_UNREACHABLE", "no route", "ssh://a@b");
    await expect(
      tearDownAcrossHosts(async () => report(["here"]), [async () => Promise.reject(unreachable)]),
    ).rejects.toBe(unreachable);
    const stuck = new TeardownError("dep-abcdefabcdef", [{ pid: 7, state: "disk-sleep" }]);
    await expect(
      tearDownAcrossHosts(async () => report(["here"]), [async () => Promise.reject(stuck)]),
    ).rejects.toBe(stuck);
  });

  it("runs the local teardown once more when only it failed, and fails if it fails again", async () => {
    const survivors = new TeardownError("dep-abcdefabcdef", [{ pid: 9, state: "sleeping" }]);
    let calls = 0;
    const flaky = async () => {
      calls++;
      if (calls === 1) throw survivors;
      return report(["here, again"]);
    };
    const merged = await tearDownAcrossHosts(flaky, [async () => report(["there"])]);
    expect(calls).toBe(2);
    expect(merged.steps).toEqual(["here, again", "there"]);

    let attempts = 0;
    const failing = async () => {
      attempts++;
      throw survivors;
    };
    await expect(tearDownAcrossHosts(failing, [async () => report(["there"])])).rejects.toBe(
      survivors,
    );
    expect(attempts).toBe(2);
    // With no remote host there is nothing to wait for: no second attempt.
    attempts = 0;
    await expect(tearDownAcrossHosts(failing, [])).rejects.toBe(survivors);
    expect(attempts).toBe(1);
  });
});
