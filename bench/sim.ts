/**
 * Simulation speed: seeds per second of the full system (100 drawn jobs, 8 in-process
 * workers, the default fault profile), and virtual time over wall time, against the goals
 * (≥ 50 seeds/s, ≥ 1,000×). Seeds run as `baton sim` runs them: `simulateSeeds` on a thread
 * per core (BENCH_SIM_SEEDS of them, default 600), and also on one thread (a fifth as many),
 * which gives the per-seed figures.
 *
 * Two floors measured in the same run put the figures in proportion:
 * - the engine's: `createEngine` running no-op jobs on 8 in-process workers in real time (no
 *   simulation, store, faults or checks); `JOBS` of them per seed give the most seeds per
 *   second a simulation that also costs nothing else could reach;
 * - the liveness traffic's: the same 8 workers holding one long job for 600 virtual seconds
 *   (pings, heartbeats, lease sweeps, each checked), in ms of wall time per virtual second; the
 *   job is a handler of one's own (a graph needs its handlers), so the handlers' watch, its hook
 *   on every promise, is in it too (about a seventh).
 *   Its inverse bounds virtual over wall time, and times the virtual seconds of a seed it is
 *   the part of a seed's cost that depends on the seed's length, not its jobs.
 */

import { setSeedThreadsV8Flags } from "../src/cli/seedThreadsV8Flags.ts";
import { job } from "../src/graph/job.ts";
import { createEngine } from "../src/runtime/engine.ts";
import { threadsFor } from "../src/sim/inSeedOrder.ts";
import { simulate } from "../src/sim/simulate.ts";
import { simulateSeeds } from "../src/sim/simulateSeeds.ts";

const SEEDS = Number(process.env.BENCH_SIM_SEEDS ?? 600);
const ONE_THREAD_SEEDS = Math.max(1, Math.round(SEEDS / 5));
const JOBS = 100;
const WORKERS = 8;
const FLOOR_JOBS = 4000;
const IDLE_MS = 600_000;

async function engineJobsPerSecond(): Promise<number> {
  const engine = createEngine({ jobs: { noop: (n: number) => n }, workers: WORKERS });
  const graph = Array.from({ length: FLOOR_JOBS }, (_, i) => job("noop", i));
  const started = performance.now();
  const result = await engine.run(graph);
  if (!result.ok) throw new Error("the engine floor run failed");
  return (FLOOR_JOBS * 1000) / (performance.now() - started);
}

/** Wall ms per virtual second of 8 workers holding one job, without faults or ranks. */
async function idleMsPerVirtualSecond(): Promise<number> {
  const options = (seed: number) => ({
    seed,
    graph: [job("hold", null)],
    workers: WORKERS,
    faults: [],
    ranks: false,
    handlers: ({ sleep }: { sleep: (ms: number) => Promise<void> }) => ({
      hold: () => sleep(IDLE_MS).then(() => null),
    }),
  });
  await simulate(options(100_000));
  let wallMs = 0;
  let virtualMs = 0;
  for (let seed = 1; seed <= 3; seed++) {
    // Timed here: a result's wallMs is whole ms, coarse beside an idle seed's few ms.
    const started = performance.now();
    const r = await simulate(options(seed));
    wallMs += performance.now() - started;
    if (!r.ok) throw new Error(`the idle run of seed ${seed} failed: ${r.violation?.message}`);
    virtualMs += r.virtualMs;
  }
  return wallMs / (virtualMs / 1000);
}

// Warm up the JIT on seeds outside the measured range.
for (let seed = 100_001; seed <= 100_003; seed++)
  await simulate({ seed, jobs: JOBS, workers: WORKERS });
await engineJobsPerSecond();

/** Seeds `1..seeds` on `threads` threads: wall ms, CPU ms, virtual ms, steps and failures. */
async function runSeeds(seeds: number, threads: number) {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let virtualMs = 0;
  let steps = 0;
  let failed = 0;
  const drawn = { jobs: JOBS, workers: WORKERS };
  for await (const r of simulateSeeds(1, seeds, drawn, { threads })) {
    virtualMs += r.virtualMs;
    steps += r.steps;
    if (!r.ok) failed++;
  }
  const cpu = process.cpuUsage(cpuBefore);
  return {
    wallMs: performance.now() - started,
    cpuMs: (cpu.user + cpu.system) / 1000,
    virtualMs,
    steps,
    failed,
  };
}

const one = await runSeeds(ONE_THREAD_SEEDS, 1);
const threads = threadsFor(SEEDS);
// As `baton sim` runs them; the floors below run with V8's defaults, as the engine does.
const restoreV8Flags = setSeedThreadsV8Flags(threads);
const { wallMs, virtualMs, failed } = await runSeeds(SEEDS, threads);
restoreV8Flags();

const engineJobs = await engineJobsPerSecond();
const idleMs = await idleMsPerVirtualSecond();
const seedsPerSecond = (SEEDS * 1000) / wallMs;
const oneThreadSeedsPerSecond = (ONE_THREAD_SEEDS * 1000) / one.wallMs;
const virtualSecondsPerSeed = one.virtualMs / ONE_THREAD_SEEDS / 1000;
const engineFloor = engineJobs / JOBS;
const livenessFloor = 1000 / (idleMs * virtualSecondsPerSeed);
const figures = {
  seeds: SEEDS,
  jobs: JOBS,
  workers: WORKERS,
  threads,
  failed: failed + one.failed,
  seedsPerSecond: Number(seedsPerSecond.toFixed(2)),
  virtualOverWall: Math.round(virtualMs / wallMs),
  oneThreadSeeds: ONE_THREAD_SEEDS,
  oneThreadSeedsPerSecond: Number(oneThreadSeedsPerSecond.toFixed(2)),
  wallMsPerSeed: Number((one.wallMs / ONE_THREAD_SEEDS).toFixed(1)),
  cpuMsPerSeed: Number((one.cpuMs / ONE_THREAD_SEEDS).toFixed(1)),
  virtualSecondsPerSeed: Number(virtualSecondsPerSeed.toFixed(1)),
  stepsPerSeed: Math.round(one.steps / ONE_THREAD_SEEDS),
  engineJobsPerSecond: Math.round(engineJobs),
  engineFloorSeedsPerSecond: Number(engineFloor.toFixed(1)),
  ratioToEngineFloor: Number((oneThreadSeedsPerSecond / engineFloor).toFixed(3)),
  idleWallMsPerVirtualSecond: Number(idleMs.toFixed(3)),
  virtualOverWallCap: Math.round(1000 / idleMs),
  livenessFloorSeedsPerSecond: Number(livenessFloor.toFixed(1)),
  ratioToLivenessFloor: Number((oneThreadSeedsPerSecond / livenessFloor).toFixed(3)),
  goals: { seedsPerSecond: 50, virtualOverWall: 1000 },
};
console.log(
  `${SEEDS} seeds of ${JOBS} jobs on ${WORKERS} workers, ${threads} threads: ${figures.seedsPerSecond} seeds/s, ` +
    `${figures.virtualOverWall}× real time, ${figures.failed} failed`,
);
console.log(
  `one thread, ${ONE_THREAD_SEEDS} seeds: ${figures.oneThreadSeedsPerSecond} seeds/s (${figures.virtualSecondsPerSeed} virtual s, ` +
    `${figures.wallMsPerSeed} wall ms and ${figures.cpuMsPerSeed} ms CPU per seed)`,
);
console.log(
  `engine floor: ${figures.engineJobsPerSecond} jobs/s, so at most ${figures.engineFloorSeedsPerSecond} seeds/s ` +
    `a thread of ${JOBS} jobs if nothing but the engine cost anything (one thread: ${figures.ratioToEngineFloor} of it)`,
);
console.log(
  `liveness floor: ${figures.idleWallMsPerVirtualSecond} wall ms per virtual s with ${WORKERS} idle workers, ` +
    `so at most ${figures.virtualOverWallCap}× real time a thread, and at most ${figures.livenessFloorSeedsPerSecond} seeds/s ` +
    `a thread of ${figures.virtualSecondsPerSeed} virtual s (one thread: ${figures.ratioToLivenessFloor} of it)`,
);
console.log(JSON.stringify(figures));
