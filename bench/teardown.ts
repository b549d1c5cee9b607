/**
 * Rank-group teardown and launch on real processes (the Python example rank), against
 * baselines measured in the same run:
 *
 * - stop() to verified for 8 ranks that exit on TERM, against the machine's reaping delay
 *   (a plain `sleep` sent SIGKILL, until it is reaped); goal: at most 100 ms beyond it;
 * - stop() to verified for 8 ranks that ignore TERM, against the TERM grace; goal: at most
 *   grace + 100 ms;
 * - launch to all-ready for 8 trivial ranks, against 8 bare `python3` interpreters started
 *   at once and run to their exit.
 *
 * Each figure is the median of BENCH_ROUNDS rounds (default 3), with the fastest and slowest
 * round beside it; the ratios divide the medians by their baselines. BENCH_GRACE_MS sets the
 * grace (default 1000 ms).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchGroup } from "../src/runtime/launchGroup.ts";
import { nodeProcs } from "../src/runtime/nodeProcs.ts";
import type { RankGroup } from "../src/runtime/rankGroup.ts";

const RANKS = 8;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const GRACE_MS = Number(process.env.BENCH_GRACE_MS ?? 1000);
for (const [name, value] of [
  ["BENCH_ROUNDS", ROUNDS],
  ["BENCH_GRACE_MS", GRACE_MS],
] as const) {
  if (!Number.isInteger(value) || value < 1) {
    console.error(`${name} must be a whole number of at least 1, not ${process.env[name]}`);
    process.exit(2);
  }
}
const PYTHON = "/usr/bin/python3";
const RANK_PY = fileURLToPath(new URL("../examples/ranks/rank.py", import.meta.url));
const procs = nodeProcs();
const loadAtStart = loadavg()[0]!;
const stateDir = mkdtempSync(join(tmpdir(), "baton-bench-teardown-"));
const groups: RankGroup[] = [];

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const ms = (value: number) => Math.round(value * 10) / 10;
const ratio = (value: number, baseline: number) => Math.round((value / baseline) * 100) / 100;
/** The fastest and the slowest round. */
const spread = (values: number[]) => [ms(Math.min(...values)), ms(Math.max(...values))];

/** A plain process sent SIGKILL: the time until the kernel and Node have reaped it. */
async function reapingDelay(): Promise<number> {
  const child = procs.spawn({ argv: ["/bin/sleep", "60"], newGroup: true });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const started = performance.now();
  procs.signal(child.pid, "SIGKILL");
  await child.exited;
  return performance.now() - started;
}

/** 8 bare interpreters, started at once and run to their exit. */
async function interpreters(): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from(
      { length: RANKS },
      () => procs.spawn({ argv: [PYTHON, "-c", "import json, os"] }).exited,
    ),
  );
  return performance.now() - started;
}

/** Launches 8 ranks, waits for the barrier; returns the group and the time it took. */
async function launchReady(args: string[]): Promise<{ group: RankGroup; readyMs: number }> {
  const started = performance.now();
  const group = launchGroup({
    argv: [PYTHON, RANK_PY, "--step-ms", "50", ...args],
    worldSize: RANKS,
    stateDir,
    timeouts: { watchMs: 20 },
    teardown: { termGraceMs: GRACE_MS },
  });
  groups.push(group);
  await group.ready;
  return { group, readyMs: performance.now() - started };
}

async function stopped(group: RankGroup): Promise<{ stopMs: number; teardownMs: number }> {
  const started = performance.now();
  const report = await group.stop("bench");
  return { stopMs: performance.now() - started, teardownMs: report.elapsedMs };
}

try {
  const reap: number[] = [];
  const bare: number[] = [];
  const ready: number[] = [];
  const onTerm: number[] = [];
  const onTermTeardown: number[] = [];
  const ignoring: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    reap.push(await reapingDelay());
    bare.push(await interpreters());
    const polite = await launchReady([]);
    ready.push(polite.readyMs);
    const politeStop = await stopped(polite.group);
    onTerm.push(politeStop.stopMs);
    onTermTeardown.push(politeStop.teardownMs);
    const stubborn = await launchReady(["--ignore-term"]);
    ignoring.push((await stopped(stubborn.group)).stopMs);
  }
  const figures = {
    bench: "teardown",
    ranks: RANKS,
    rounds: ROUNDS,
    graceMs: GRACE_MS,
    reapingDelayMs: ms(median(reap)),
    reapingDelaySpreadMs: spread(reap),
    stopExitOnTermMs: ms(median(onTerm)),
    stopExitOnTermSpreadMs: spread(onTerm),
    stopExitOnTermBeyondReapingMs: ms(median(onTerm) - median(reap)),
    stopExitOnTermVsReaping: ratio(median(onTerm), median(reap)),
    /** The part of that stop() spent in tearDown (its report's elapsedMs). */
    teardownExitOnTermMs: ms(median(onTermTeardown)),
    stopIgnoreTermMs: ms(median(ignoring)),
    stopIgnoreTermSpreadMs: spread(ignoring),
    stopIgnoreTermBeyondGraceMs: ms(median(ignoring) - GRACE_MS),
    stopIgnoreTermVsGrace: ratio(median(ignoring), GRACE_MS),
    launchToReadyMs: ms(median(ready)),
    launchToReadySpreadMs: spread(ready),
    bareInterpretersMs: ms(median(bare)),
    launchToReadyVsBare: ratio(median(ready), median(bare)),
    cores: availableParallelism(),
    load1AtStart: Math.round(loadAtStart * 100) / 100,
    load1: Math.round(loadavg()[0]! * 100) / 100,
  };
  const range = ([low, high]: number[]) => `rounds ${low}–${high} ms`;
  console.log(
    `reaping delay (plain sleep, SIGKILL → reaped): ${figures.reapingDelayMs} ms ` +
      `(${range(figures.reapingDelaySpreadMs)})`,
  );
  console.log(
    `stop() of ${RANKS} ranks that exit on TERM: ${figures.stopExitOnTermMs} ms ` +
      `(${range(figures.stopExitOnTermSpreadMs)}; ${figures.stopExitOnTermVsReaping}× the ` +
      `reaping delay, ${figures.stopExitOnTermBeyondReapingMs} ms beyond it; goal ≤ 100; ` +
      `${figures.teardownExitOnTermMs} ms of it in tearDown)`,
  );
  console.log(
    `stop() of ${RANKS} ranks that ignore TERM: ${figures.stopIgnoreTermMs} ms ` +
      `(${range(figures.stopIgnoreTermSpreadMs)}; ${figures.stopIgnoreTermVsGrace}× the ` +
      `${GRACE_MS} ms grace, ${figures.stopIgnoreTermBeyondGraceMs} ms beyond it; goal ≤ 100)`,
  );
  console.log(
    `launch to all-ready, ${RANKS} ranks: ${figures.launchToReadyMs} ms ` +
      `(${range(figures.launchToReadySpreadMs)}; ${figures.launchToReadyVsBare}× ${RANKS} bare ` +
      `python3 interpreters: ${figures.bareInterpretersMs} ms)`,
  );
  console.log(
    `load average (1 min): ${figures.load1AtStart} at the start, ${figures.load1} at the end, ` +
      `on ${figures.cores} cores`,
  );
  console.log(JSON.stringify(figures));
} finally {
  for (const group of groups) await group.stop("bench over").catch(() => {});
  rmSync(stateDir, { recursive: true, force: true });
}
