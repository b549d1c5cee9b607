/**
 * The Slurm pool on a real one-node Slurm (CPUs=2), started and stopped by this benchmark
 * (test/fixtures/slurmCluster.ts):
 * - first job: time from `engine.run` to the first job running on a fresh allocation
 *   (the pool's first poll, sbatch, Slurm's scheduling, the worker's start and handshake),
 *   over BENCH_ROUNDS runs (default 3) of a one-job graph;
 * - throughput: BENCH_JOBS no-op jobs (default 1,000) on 2 allocations, against the same
 *   graph on the local pool with 2 worker processes in the same run (ratio slurm / local).
 *   Jobs/s count from the first job running to the last finished, so start-up is not in it;
 *   the wall time of each run is printed too.
 * No result store (the runs work in a throwaway directory), so this is the pool and dispatch.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { job } from "../src/graph/job.ts";
import { createEngine } from "../src/runtime/engine.ts";
import { loadJobs } from "../src/runtime/jobModule.ts";
import { localPool } from "../src/runtime/localPool.ts";
import { moduleSource } from "../src/runtime/moduleSource.ts";
import { slurmPool } from "../src/runtime/slurmPool.ts";
import type { WorkerPool } from "../src/runtime/workerPool.ts";
import { startSlurmCluster } from "../test/fixtures/slurmCluster.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
if (!Number.isInteger(JOBS) || JOBS < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error("BENCH_JOBS and BENCH_ROUNDS must be whole numbers of at least 1");
  process.exit(2);
}
const JOBS_MODULE = fileURLToPath(new URL("./fixtures/noop.jobs.ts", import.meta.url));
const module = await import(JOBS_MODULE);
const jobs = loadJobs(module.default, moduleSource(JOBS_MODULE));

interface Timed {
  /** From engine.run to the first job running. */
  firstJobMs: number;
  /** From engine.run to Slurm reporting the first allocation RUNNING (sampled every 50 ms). */
  allocationRunningMs: number;
  /** From the first job running to the last finished. */
  busyMs: number;
  wallMs: number;
  completed: number;
}

async function timedRun(workers: WorkerPool, count: number): Promise<Timed> {
  const engine = createEngine({ jobs, workers });
  const t0 = performance.now();
  let first: number | undefined;
  let last = t0;
  const run = engine.run(Array.from({ length: count }, (_, n) => job("noop", n)));
  let allocationRunning: number | undefined;
  const sampler = setInterval(() => {
    execFile("squeue", ["-h", "-t", "RUNNING", "-o", "%T"], (error, out) => {
      if (!error && out.includes("RUNNING")) allocationRunning ??= performance.now();
    });
  }, 50);
  run.on("job", (event) => {
    if (event.state === "running") first ??= performance.now();
    else if (event.state === "completed" || event.state === "failed") last = performance.now();
  });
  let result: Awaited<typeof run>;
  try {
    result = await run;
  } finally {
    clearInterval(sampler);
  }
  if (!result.ok) throw new Error(`the run did not complete: ${JSON.stringify(result.counts)}`);
  const end = performance.now();
  return {
    firstJobMs: (first ?? end) - t0,
    allocationRunningMs: (allocationRunning ?? end) - t0,
    busyMs: last - (first ?? t0),
    wallMs: end - t0,
    completed: result.counts.completed,
  };
}

const round1 = (n: number) => Math.round(n * 10) / 10;
const home = process.cwd();
const work = mkdtempSync(join(tmpdir(), "baton-bench-slurm-"));
const clusterStart = performance.now();
const cluster = await startSlurmCluster();
const clusterStartMs = performance.now() - clusterStart;
process.env.SLURM_CONF = cluster.conf;
try {
  // The runs' secret files and logs go to ./.baton of the working directory: a throwaway one.
  process.chdir(work);
  console.log(`cluster up in ${Math.round(clusterStartMs)} ms (munged, slurmctld, slurmd; CPUs=2)`);

  const firstJob: number[] = [];
  const allocationRunning: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const timed = await timedRun(slurmPool({ jobsModule: JOBS_MODULE, maxWorkers: 1 }), 1);
    firstJob.push(timed.firstJobMs);
    allocationRunning.push(timed.allocationRunningMs);
    console.log(
      `run → first job running on a fresh allocation: ${Math.round(timed.firstJobMs)} ms ` +
        `(allocation RUNNING after ${Math.round(timed.allocationRunningMs)} ms; the rest is the worker starting)`,
    );
  }
  const sorted = [...firstJob].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;

  const slurm = await timedRun(slurmPool({ jobsModule: JOBS_MODULE, maxWorkers: 2 }), JOBS);
  const local = await timedRun(localPool({ jobsModule: JOBS_MODULE, count: 2 }), JOBS);
  const rate = (t: Timed) => (t.completed * 1000) / Math.max(t.busyMs, 1);
  const ratio = rate(slurm) / rate(local);
  console.log(
    `${JOBS} no-op jobs on 2 Slurm allocations: ${Math.round(rate(slurm))} jobs/s ` +
      `(wall ${Math.round(slurm.wallMs)} ms, first job after ${Math.round(slurm.firstJobMs)} ms)`,
  );
  console.log(
    `${JOBS} no-op jobs on the local pool, 2 workers: ${Math.round(rate(local))} jobs/s ` +
      `(wall ${Math.round(local.wallMs)} ms, first job after ${Math.round(local.firstJobMs)} ms)`,
  );
  console.log(`ratio slurm / local: ${ratio.toFixed(2)}`);
  console.log(
    JSON.stringify({
      bench: "slurm",
      clusterStartMs: Math.round(clusterStartMs),
      firstJobMs: firstJob.map(Math.round),
      firstJobMsMedian: Math.round(median),
      allocationRunningMs: allocationRunning.map(Math.round),
      jobs: JOBS,
      slurmJobsPerSec: round1(rate(slurm)),
      localJobsPerSec: round1(rate(local)),
      ratio: Number(ratio.toFixed(3)),
      slurmWallMs: Math.round(slurm.wallMs),
      localWallMs: Math.round(local.wallMs),
      cores: availableParallelism(),
    }),
  );
} finally {
  process.chdir(home);
  await cluster.stop();
  rmSync(work, { recursive: true, force: true });
}
