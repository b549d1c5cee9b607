/**
 * Simulation speed: seeds per second of the full system (100 drawn jobs, 8 in-process
 * workers, the default fault profile), and virtual time over wall time, against the goals
 * (≥ 50 seeds/s, ≥ 1,000×). BENCH_SIM_SEEDS sets the number of seeds (default 30).
 */
import { simulate } from "../src/sim/simulate.ts";

const SEEDS = Number(process.env.BENCH_SIM_SEEDS ?? 30);
const JOBS = 100;
const WORKERS = 8;

// Warm up the JIT on seeds outside the measured range.
for (let seed = 100_001; seed <= 100_003; seed++)
  await simulate({ seed, jobs: JOBS, workers: WORKERS });

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
const figures = {
  seeds: SEEDS,
  jobs: JOBS,
  workers: WORKERS,
  failed,
  seedsPerSecond: Number(((SEEDS * 1000) / wallMs).toFixed(2)),
  virtualOverWall: Math.round(virtualMs / wallMs),
  wallMsPerSeed: Number((wallMs / SEEDS).toFixed(1)),
  cpuMsPerSeed: Number(((cpu.user + cpu.system) / 1000 / SEEDS).toFixed(1)),
  virtualSecondsPerSeed: Number((virtualMs / SEEDS / 1000).toFixed(1)),
  stepsPerSeed: Math.round(steps / SEEDS),
  goals: { seedsPerSecond: 50, virtualOverWall: 1000 },
};
console.log(
  `${SEEDS} seeds of ${JOBS} jobs on ${WORKERS} workers: ${figures.seedsPerSecond} seeds/s, ` +
    `${figures.virtualOverWall}× real time (${figures.virtualSecondsPerSeed} virtual s and ` +
    `${figures.wallMsPerSeed} wall ms per seed, ${figures.cpuMsPerSeed} ms CPU), ${failed} failed`,
);
console.log(JSON.stringify(figures));
