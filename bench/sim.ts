/**
 * Simulation speed: seeds per second of the full system (100 drawn jobs, 8 in-process
 * workers, the default fault profile), and virtual time over wall time, against the goals
 * (≥ 50 seeds/s, ≥ 1,000×). BENCH_SIM_SEEDS sets the number of seeds (default 30).
 *
 * Two floors measured in the same run put the figures in proportion:
 * - the engine's: `createEngine` running no-op jobs on 8 in-process workers in real time (no
 *   simulation, store, faults or checks); `JOBS` of them per seed give the most seeds per
 *   second a simulation that also costs nothing else could reach;
 * - the liveness traffic's: the same 8 workers holding one long job for 600 virtual seconds
 *   (pings, heartbeats, lease sweeps, each checked), in ms of wall time per virtual second.
 *   Its inverse bounds virtual over wall time, and times the virtual seconds of a seed it is
 *   the part of a seed's cost that depends on the seed's length, not its jobs.
 */
import { job } from "../src/graph/job.ts";
import { createEngine } from "../src/runtime/engine.ts";
import { simulate } from "../src/sim/simulate.ts";

const SEEDS = Number(process.env.BENCH_SIM_SEEDS ?? 30);
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
    const r = await simulate(options(seed));
    if (!r.ok) throw new Error(`the idle run of seed ${seed} failed: ${r.violation?.message}`);
    wallMs += r.wallMs;
    virtualMs += r.virtualMs;
  }
  return wallMs / (virtualMs / 1000);
}

// Warm up the JIT on seeds outside the measured range.
for (let seed = 100_001; seed <= 100_003; seed++)
  await simulate({ seed, jobs: JOBS, workers: WORKERS });
await engineJobsPerSecond();

const cpuBefore = process.cpuUsage();
const started = performance.now();
let virtualMs = 0;
let steps = 0;
let failed = 0;
for (let seed = 1; seed <= SEEDS; seed++) {
  const r = await simulate({ seed, jobs: JOBS, workers: WORKERS });
  virtualMs += r.virtualMs;
  steps += r.steps;
  if (!r.ok) failed++;
}
const wallMs = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);

const engineJobs = await engineJobsPerSecond();
const idleMs = await idleMsPerVirtualSecond();
const seedsPerSecond = (SEEDS * 1000) / wallMs;
const virtualSecondsPerSeed = virtualMs / SEEDS / 1000;
const engineFloor = engineJobs / JOBS;
const livenessFloor = 1000 / (idleMs * virtualSecondsPerSeed);
const figures = {
  seeds: SEEDS,
  jobs: JOBS,
  workers: WORKERS,
  failed,
  seedsPerSecond: Number(seedsPerSecond.toFixed(2)),
  virtualOverWall: Math.round(virtualMs / wallMs),
  wallMsPerSeed: Number((wallMs / SEEDS).toFixed(1)),
  cpuMsPerSeed: Number(((cpu.user + cpu.system) / 1000 / SEEDS).toFixed(1)),
  virtualSecondsPerSeed: Number(virtualSecondsPerSeed.toFixed(1)),
  stepsPerSeed: Math.round(steps / SEEDS),
  engineJobsPerSecond: Math.round(engineJobs),
  engineFloorSeedsPerSecond: Number(engineFloor.toFixed(1)),
  ratioToEngineFloor: Number((seedsPerSecond / engineFloor).toFixed(3)),
  idleWallMsPerVirtualSecond: Number(idleMs.toFixed(3)),
  virtualOverWallCap: Math.round(1000 / idleMs),
  livenessFloorSeedsPerSecond: Number(livenessFloor.toFixed(1)),
  ratioToLivenessFloor: Number((seedsPerSecond / livenessFloor).toFixed(3)),
  goals: { seedsPerSecond: 50, virtualOverWall: 1000 },
};
console.log(
  `${SEEDS} seeds of ${JOBS} jobs on ${WORKERS} workers: ${figures.seedsPerSecond} seeds/s, ` +
    `${figures.virtualOverWall}× real time (${figures.virtualSecondsPerSeed} virtual s and ` +
    `${figures.wallMsPerSeed} wall ms per seed, ${figures.cpuMsPerSeed} ms CPU), ${failed} failed`,
);
console.log(
  `engine floor: ${figures.engineJobsPerSecond} jobs/s, so at most ${figures.engineFloorSeedsPerSecond} seeds/s ` +
    `of ${JOBS} jobs if nothing but the engine cost anything (this run: ${figures.ratioToEngineFloor} of it)`,
);
console.log(
  `liveness floor: ${figures.idleWallMsPerVirtualSecond} wall ms per virtual s with ${WORKERS} idle workers, ` +
    `so at most ${figures.virtualOverWallCap}× real time, and at most ${figures.livenessFloorSeedsPerSecond} seeds/s ` +
    `of ${figures.virtualSecondsPerSeed} virtual s (this run: ${figures.ratioToLivenessFloor} of it)`,
);
console.log(JSON.stringify(figures));
