/**
 * Graph jobs with `ranks`: the job module declares what each rank runs, the worker that
 * leases the job launches the group, and the group's outcome is the job's result. Cancelling
 * the run, or the job's timeout, tears the group down. Real rank processes (the Python
 * example rank); every one is stopped by its pid when the test ends.
 */
import { existsSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createEngine, job } from "../../src/index.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT, type Manifest } from "../../src/rank/manifestFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import {
  type EndedLogsRetention,
  KEEP_ENDED_DEPLOYMENTS,
} from "../../src/runtime/deploymentLogs.ts";
import { defineJobs } from "../../src/runtime/jobModule.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { ROOT } from "../fixtures/batonCli.ts";
import { DAY, deploymentFolder, endedDeployments } from "../fixtures/endedDeployments.ts";
import { cleanUpRanks, procs, stray, tempDir } from "../fixtures/rankStrays.ts";

const RANK_PY = join(ROOT, "examples/ranks/rank.py");

afterEach(async () => {
  await cleanUpRanks();
});

const jobs = defineJobs({
  train: {
    ranks: (input: {
      stateDir: string;
      steps: number;
      failAt?: number;
      keepEndedLogs?: EndedLogsRetention | "not one";
    }) => ({
      argv: [
        "/usr/bin/python3",
        RANK_PY,
        "--steps",
        String(input.steps),
        "--step-ms",
        "30",
        ...(input.failAt === undefined
          ? []
          : ["--fail-at", String(input.failAt), "--exit-code", "4"]),
      ],
      stateDir: input.stateDir,
      ...(input.keepEndedLogs !== undefined && {
        keepEndedLogs: input.keepEndedLogs as EndedLogsRetention,
      }),
      timeouts: { watchMs: 50 },
      teardown: { termGraceMs: 300 },
    }),
  },
  /**
   * A rank that starts a helper and forgets it: the helper is still running when the rank
   * exits 0. The rank exits once the helper's exec of `sleep` began (its name is `sleep`), so
   * the teardown never finds it still the shell it was forked as.
   */
  leaky: {
    ranks: (input: { stateDir: string }) => ({
      argv: [
        "/bin/sh",
        "-c",
        'sleep 30 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done; exit 0',
      ],
      stateDir: input.stateDir,
      timeouts: { watchMs: 50 },
      teardown: { termGraceMs: 300 },
    }),
  },
});

/** The pids of the `count` ranks of the one deployment in `dir`, once its manifest lists them. */
async function rankPids(dir: string, count: number): Promise<number[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error("the group never started");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [deployment] = readdirSync(dir);
    if (deployment === undefined) continue;
    const manifest = await readStateFile(
      nodeFiles(),
      MANIFEST_FORMAT,
      deploymentPaths(dir, deployment).manifest,
    ).catch(() => undefined);
    const pids = manifest?.ranks.map((rank) => rank.pid) ?? [];
    for (const pid of pids) stray(pid, deployment);
    if (pids.length >= count) return pids;
  }
}

function expectGone(pids: number[]): void {
  for (const pid of pids) {
    const state = procs.inspect(pid)?.state;
    expect(state === undefined || state === "zombie").toBe(true);
  }
}

describe("graph jobs with ranks", () => {
  it("runs the group in the worker that leases the job; the group's outcome is the result", async () => {
    const dir = tempDir();
    const train = job("train", { stateDir: dir, steps: 3 }, { ranks: 2 });
    const result = await createEngine({ jobs, workers: 1 }).run([train]);
    expect(result.ok).toBe(true);
    const value = result.get(train).value as {
      deployment: string;
      worldSize: number;
      ranks: unknown[];
    };
    expect(value.worldSize).toBe(2);
    expect(value.ranks).toEqual([
      { rank: 0, code: 0 },
      { rank: 1, code: 0 },
    ]);
    // Nothing left running: nothing said.
    expect(value).not.toHaveProperty("leftRunning");
    expect(readdirSync(join(dir, value.deployment)).sort()).toEqual([
      "outcome.json",
      "rank-0.log",
      "rank-1.log",
    ]);
  }, 30_000);

  it("names in the result what the ranks left running and the teardown stopped", async () => {
    const dir = tempDir();
    const leaky = job("leaky", { stateDir: dir }, { ranks: 1 });
    const result = await createEngine({ jobs, workers: 1 }).run([leaky]);
    expect(result.ok).toBe(true);
    const value = result.get(leaky).value as { ranks: unknown[]; leftRunning?: { pid: number }[] };
    expect(value.ranks).toEqual([{ rank: 0, code: 0 }]);
    expect(value.leftRunning).toEqual([
      { pid: expect.any(Number), rank: 0, program: "sleep", outsideGroup: false },
    ]);
    expectGone(value.leftRunning?.map(({ pid }) => pid) ?? []);
  }, 30_000);

  it("a failing rank fails the job with the rank's exit code and log", async () => {
    const train = job(
      "train",
      { stateDir: tempDir(), steps: 20, failAt: 2 },
      { ranks: 2, retries: 0 },
    );
    const result = await createEngine({ jobs, workers: 1 }).run([train]);
    const outcome = result.get(train);
    expect(outcome.status).toBe("failed");
    expect(outcome.error?.name).toBe("RankGroupError");
    expect(outcome.error?.message).toMatch(/rank \d exited with code 4/);
    expect(outcome.error?.message).toContain("failing at step 2 with exit code 4");
  }, 30_000);

  it("keeps the logs of ended deployments as its keepEndedLogs says, else as BATON_KEEP_ENDED_LOGS says, and refuses one that is not a retention before any rank starts", async () => {
    const dir = tempDir();
    const now = Date.now();
    endedDeployments(dir, 3, 30, now);
    const engine = createEngine({ jobs, workers: 1 });
    process.env.BATON_KEEP_ENDED_LOGS = "forever";
    try {
      const kept = job("train", { stateDir: dir, steps: 2 }, { ranks: 1, retries: 0 });
      expect((await engine.run([kept])).get(kept).status).toBe("completed");
      expect(readdirSync(dir)).toHaveLength(4);
    } finally {
      delete process.env.BATON_KEEP_ENDED_LOGS;
    }
    const pruned = job(
      "train",
      { stateDir: dir, steps: 2, keepEndedLogs: { keep: 1, keptMs: 0 } },
      { ranks: 1, retries: 0 },
    );
    const result = await engine.run([pruned]);
    const own = (result.get(pruned).value as { deployment: string }).deployment;
    expect(readdirSync(dir)).toEqual([own]);

    const fresh = tempDir();
    const refused = job(
      "train",
      { stateDir: fresh, steps: 2, keepEndedLogs: "not one" },
      { ranks: 1, retries: 0 },
    );
    const error = (await engine.run([refused])).get(refused).error;
    expect(error?.message).toBe(
      'job kind "train": keepEndedLogs must be { keep, keptMs } or false (keep them all), not "not one"',
    );
    expect(readdirSync(fresh)).toEqual([]);
  }, 30_000);

  it("refuses a launch's worldSize, which the job's ranks option sets, before any rank starts", async () => {
    const dir = tempDir();
    const sized = defineJobs({
      train: {
        ranks: (stateDir: string) =>
          ({ argv: ["/usr/bin/python3", RANK_PY], stateDir, worldSize: 8 }) as never,
      },
    });
    // Another attempt would be refused the same way: the first is the last, whatever retries says.
    const train = job("train", dir, { ranks: 1, retries: 3 });
    const outcome = (await createEngine({ jobs: sized, workers: 1 }).run([train])).get(train);
    expect(outcome).toMatchObject({ status: "failed", attempts: 1 });
    expect(outcome.error?.retryable).toBe(false);
    expect(outcome.error?.message).toBe(
      'the ranks function of job kind "train" returned worldSize 8, which a rank job does not take: the job\'s ranks option is its group\'s size; leave worldSize out and give each job its size, job("train", input, { ranks: 8 })',
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it("fails a job whose ranks' program is not there at its first attempt, saying what to fix", async () => {
    const missing = defineJobs({
      train: { ranks: (stateDir: string) => ({ argv: ["/nonexistent/train-program"], stateDir }) },
    });
    const train = job("train", tempDir(), { ranks: 2, retries: 3 });
    const outcome = (await createEngine({ jobs: missing, workers: 1 }).run([train])).get(train);
    expect(outcome).toMatchObject({ status: "failed", attempts: 1 });
    expect(outcome.error).toMatchObject({ name: "RankGroupError", retryable: false });
    expect(outcome.error?.message).toContain(
      `rank 0 of 2 could not be started: cannot start "/nonexistent/train-program": /nonexistent/train-program does not exist; give the program's path`,
    );
  });

  it("retries a job whose deployment name a live launcher holds, saying to give it a backoff; fails one whose name an unreadable manifest blocks at once", async () => {
    // Control files written here stand for the other launcher: no rank process starts.
    const named = defineJobs({
      train: {
        ranks: (input: { stateDir: string; name: string }) => ({
          argv: ["/nonexistent/never-started"],
          ...input,
        }),
      },
    });
    const engine = createEngine({ jobs: named, workers: 1 });
    const dir = tempDir();
    const held = deploymentPaths(dir, "held");
    await nodeFiles().mkdirp(held.dir);
    const launcher = { pid: process.pid, token: "other", host: hostname() };
    await nodeFiles().writeAtomic(
      held.manifest,
      encodeStateFile(MANIFEST_FORMAT, {
        deployment: "held",
        launcher,
        ranks: [],
        worldSize: 1,
        argv: ["x"],
        startedAt: Date.now(),
      }),
    );
    await nodeFiles().writeAtomic(
      held.lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment: "held",
        pid: process.pid,
        token: "other",
        renewedAt: Date.now(),
        staleAfterMs: 600_000,
      }),
    );
    const waits = job("train", { stateDir: dir, name: "held" }, { ranks: 1, retries: 1 });
    const retried = (await engine.run([waits])).get(waits);
    expect(retried).toMatchObject({ status: "failed", attempts: 2 });
    expect(retried.error).toMatchObject({ name: "RankGroupError" });
    expect(retried.error?.retryable).toBeUndefined();
    expect(retried.error?.message).toBe(
      `deployment held: it cannot be launched: it is running under a live launcher (pid ${process.pid}); stop that one first or pick another --name. Each retry of job ${retried.id} (kind "train", this was attempt 2) launches it again, which works only once the name is free: give the job a backoff that outlasts what holds the name, job("train", input, { backoff: { initialMs: 30_000 } }), or its retries follow at once and fail alike. Jobs that run at the same time never share a name: let each job's ranks function give its own name (from its input), or give none.`,
    );

    const other = tempDir();
    const broken = deploymentPaths(other, "broken");
    await nodeFiles().mkdirp(broken.dir);
    writeFileSync(broken.manifest, "[]");
    const blocked = job("train", { stateDir: other, name: "broken" }, { ranks: 1, retries: 3 });
    const final = (await engine.run([blocked])).get(blocked);
    expect(final).toMatchObject({ status: "failed", attempts: 1 });
    expect(final.error).toMatchObject({ name: "RankGroupError", retryable: false });
    expect(final.error?.message).toBe(
      `deployment broken: it cannot be launched: its last reap failed, and no reap will succeed until that is fixed: ${broken.manifest} is not a valid baton.manifest/1 file: not a JSON object (the format is documented in ARCHITECTURE.md, "Rank-side files and library"; a file no baton process owns can be removed).`,
    );
  });

  it("once its group ended, removes the logs of deployments that ended over a week ago beyond the newest 20, never a failed rank's nor one with a manifest", async () => {
    const dir = tempDir();
    const now = Date.now();
    const old = endedDeployments(dir, KEEP_ENDED_DEPLOYMENTS + 1, 30, now);
    // A deployment another machine launched into this shared state dir two months ago: alive
    // or not, it is that machine's reaper's, and its logs stay.
    const elsewhere = deploymentFolder(dir, "dep-elsewhere", now - 60 * DAY, ["rank-0.log"]);
    const manifest: Manifest = {
      deployment: "dep-elsewhere",
      launcher: { pid: 4242, token: "t", host: "another-machine" },
      ranks: [],
      worldSize: 1,
      argv: ["python3", "serve.py"],
      startedAt: now - 60 * DAY,
    };
    writeFileSync(join(elsewhere, "manifest.json"), encodeStateFile(MANIFEST_FORMAT, manifest));
    utimesSync(elsewhere, new Date(now - 60 * DAY), new Date(now - 60 * DAY));
    const train = job("train", { stateDir: dir, steps: 20, failAt: 2 }, { ranks: 2, retries: 0 });
    const result = await createEngine({ jobs, workers: 1 }).run([train]);

    const error = result.get(train).error;
    expect(error?.name).toBe("RankGroupError");
    const logFile = /Its log is (\S+rank-\d\.log)\./.exec(error?.message ?? "")?.[1];
    expect(logFile !== undefined && existsSync(logFile)).toBe(true);
    const left = readdirSync(dir);
    // Of 21 old ended deployments and the failed one, the 20 newest are kept.
    expect(left.sort()).toEqual(
      [
        ...old.slice(2).map((folder) => folder.slice(dir.length + 1)),
        "dep-elsewhere",
        logFile?.split("/").at(-2),
      ].sort(),
    );
  }, 30_000);

  it("cancelling the run tears the group down, verified", async () => {
    const dir = tempDir();
    const train = job("train", { stateDir: dir, steps: 0 }, { ranks: 2 });
    const run = createEngine({ jobs, workers: 1 }).run([train]);
    const pids = await rankPids(dir, 2);
    run.cancel("test");
    const result = await run;
    expect(result.get(train).status).toBe("cancelled");
    expectGone(pids);
  }, 30_000);

  it("a group past its job's timeoutMs is torn down, verified, and the job fails as JobTimeout", async () => {
    const dir = tempDir();
    const train = job(
      "train",
      { stateDir: dir, steps: 0 },
      { ranks: 2, timeoutMs: 3_000, retries: 0 },
    );
    const run = createEngine({ jobs, workers: 1 }).run([train]);
    const pids = await rankPids(dir, 2);
    const result = await run;
    expect(result.get(train)).toMatchObject({ status: "failed", attempts: 1 });
    expect(result.get(train).error).toMatchObject({ name: "JobTimeout" });
    expectGone(pids);
  }, 30_000);

  it("a rank job without the ranks option is refused before anything runs, saying how to fix it", () => {
    const train = job("train", { stateDir: tempDir(), steps: 1 }, { retries: 0 });
    expect(() => createEngine({ jobs, workers: 1 }).run([train])).toThrow(
      'kind "train" launches ranks; say how many: job("train", input, { ranks: 4 })',
    );
  });
});
