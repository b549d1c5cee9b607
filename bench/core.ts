/**
 * Core throughput and memory: no-op jobs through the coordinator and connection machines
 * over the in-memory Net, against a bare loop calling the same handler in the same run.
 */
import { Session } from "node:inspector/promises";
import { type Actor, createActor, setup } from "xstate";
import { job, type PlannedJob } from "../src/graph/job.ts";
import { planGraph } from "../src/graph/planGraph.ts";
import { connectionMachine } from "../src/machines/connection.ts";
import { coordinatorMachine } from "../src/machines/coordinator.ts";
import { createEngine } from "../src/runtime/engine.ts";
import { PROTOCOL } from "../src/transport/protocolVersion.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 100_000);
const WORKERS = 8;
/** Jobs (and toggle cycles) a measurement of allocation runs: enough for the sampler, and quick. */
const ALLOCATION_JOBS = Math.min(JOBS, 20_000);
const noop = (n: number) => n;

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function bareLoop(): Promise<number> {
  const start = performance.now();
  let sink = 0;
  for (let i = 0; i < JOBS; i++) sink += await noop(i);
  if (sink < 0) throw new Error("unreachable");
  return (JOBS * 1000) / (performance.now() - start);
}

/** An engine and a graph of `jobs` no-op jobs; `run` plans and runs it once. */
function engineOf(jobs: number): () => Promise<void> {
  const engine = createEngine({ jobs: { noop }, workers: WORKERS });
  const graph = Array.from({ length: jobs }, (_, i) => job("noop", i));
  return async () => {
    const result = await engine.run(graph);
    if (!result.ok) throw new Error("the benchmark run failed");
  };
}

async function engineRun(): Promise<number> {
  const run = engineOf(JOBS);
  const start = performance.now();
  await run();
  return (JOBS * 1000) / (performance.now() - start);
}

/**
 * The machines alone: the coordinator and one connection actor per worker, driven by hand
 * (each job frame the connections emit is answered at once with a completed RESULT), with no
 * frames, no Net and no worker code. The engine's figure minus this is the price of all that.
 * Returns the drive of `count` jobs through machines built beforehand.
 */
function machinesOf(count: number): () => void {
  const jobs: PlannedJob[] = Array.from({ length: count }, (_, i) => ({
    id: `j${i}`,
    kind: "noop",
    input: i,
    deps: [],
    requires: {},
    retries: 3,
  }));
  const coordinator = createActor(coordinatorMachine, { input: { jobs } });
  const connections: Actor<typeof connectionMachine>[] = [];
  const granted: { conn: number; job: string }[] = [];
  coordinator.on("effects", ({ effects }) => {
    for (const effect of effects) {
      if (effect.type !== "lease.granted") continue;
      const { job: planned, deps, attempt } = effect;
      connections[Number(effect.conn)]!.send({
        type: "GRANT",
        job: planned.id,
        frame: {
          type: "job",
          id: planned.id,
          kind: planned.kind,
          input: planned.input,
          deps,
          attempt,
        },
        // Never encoded here, and no hello announces a worker's limit to compare it with.
        bytes: 0,
      });
    }
  });
  coordinator.start();
  for (let i = 0; i < WORKERS; i++) {
    const connection = createActor(connectionMachine, {
      input: { conn: String(i), coordinator, run: "bench", nonce: "n", protocol: PROTOCOL },
    });
    connection.on("send", ({ frame }) => {
      if (frame.type === "job") granted.push({ conn: i, job: frame.id });
    });
    connections.push(connection.start());
  }
  return () => {
    for (const [i, connection] of connections.entries()) {
      connection.send({
        type: "HELLO",
        frame: {
          type: "hello",
          protocol: [...PROTOCOL],
          worker: `w${i}`,
          resources: {},
          codeHash: "c",
          proof: "p",
        },
        authentic: true,
        welcomeProof: "p",
        holders: [],
      });
    }
    for (let next = 0; next < granted.length; next++) {
      const { conn, job: id } = granted[next]!;
      connections[conn]!.send({
        type: "RESULT",
        frame: { type: "result", job: id, status: "completed", value: null },
      });
    }
    if (coordinator.getSnapshot().value !== "done")
      throw new Error("the machines-only run did not finish");
    for (const connection of connections) connection.stop();
    coordinator.stop();
  };
}

function machinesOnly(): number {
  const drive = machinesOf(JOBS);
  const start = performance.now();
  drive();
  return (JOBS * 1000) / (performance.now() - start);
}

/**
 * The floor XState sets: events per second through a two-state machine that only toggles.
 * Each job costs the coordinator two events (LEASE, RESULT) and its connection two state
 * changes (idle → busy → idle), so this bounds what any XState-based dispatch can reach.
 */
function xstateToggle(): number {
  const events = 400_000;
  const drive = toggleOf(events);
  const start = performance.now();
  drive();
  return (events * 1000) / (performance.now() - start);
}

/** The drive of `events` events through a started toggle. */
function toggleOf(events: number): () => void {
  const toggle = setup({
    types: {} as { events: { type: "GO" } | { type: "BACK" } },
  }).createMachine({
    initial: "idle",
    states: { idle: { on: { GO: "busy" } }, busy: { on: { BACK: "idle" } } },
  });
  const actor = createActor(toggle).start();
  return () => {
    for (let i = 0; i < events / 2; i++) {
      actor.send({ type: "GO" });
      actor.send({ type: "BACK" });
    }
  };
}

/**
 * Bytes `drive` allocates, over `units`: V8's sampling heap profiler (a sample every 512
 * bytes) with the objects collected since counted, as nearly all of XState's die young.
 * Setting up what `drive` runs is left out.
 */
async function allocatedPer(units: number, drive: () => void | Promise<void>): Promise<number> {
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await drive();
  const { profile } = await session.post("HeapProfiler.stopSampling");
  session.disconnect();
  let bytes = 0;
  const nodes = [profile.head];
  for (let node = nodes.pop(); node !== undefined; node = nodes.pop()) {
    bytes += node.selfSize;
    nodes.push(...node.children);
  }
  return bytes / units;
}

/** Heap held by a planned graph and a started coordinator, per job. */
function heapPerJob(shape: "chain" | "fan-in"): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  let graph: ReturnType<typeof job>[];
  if (shape === "chain") {
    let last = job("noop", 0);
    for (let i = 1; i < JOBS; i++) last = job("noop", i, { after: [last] });
    graph = [last];
  } else {
    const leaves = Array.from({ length: JOBS - 1 }, (_, i) => job("noop", i));
    graph = [job("noop", -1, { after: leaves })];
  }
  const plan = planGraph(graph, { versionOf: () => "0" });
  graph = [];
  const actor = createActor(coordinatorMachine, { input: { jobs: plan.jobs.values() } }).start();
  gc();
  const after = process.memoryUsage().heapUsed;
  const perJob = (after - before) / JOBS;
  actor.stop();
  return perJob;
}

if (!(globalThis as { gc?: unknown }).gc) {
  console.error("note: run with --expose-gc for exact heap figures (npm run bench does)");
}
await engineRun(); // warm-up at full size: JIT and allocator
const bare = await bareLoop();
const engine = await engineRun();
machinesOnly(); // warm-up
const machines = machinesOnly();
const toggle = xstateToggle();
const allocated = {
  engine: await allocatedPer(ALLOCATION_JOBS, engineOf(ALLOCATION_JOBS)),
  machines: await allocatedPer(ALLOCATION_JOBS, machinesOf(ALLOCATION_JOBS)),
  toggle: await allocatedPer(ALLOCATION_JOBS * 4, toggleOf(ALLOCATION_JOBS * 4)),
};
const chain = heapPerJob("chain");
const fanIn = heapPerJob("fan-in");
console.log(`bare loop:          ${Math.round(bare).toLocaleString()} calls/s`);
console.log(
  `engine (${WORKERS} workers): ${Math.round(engine).toLocaleString()} jobs/s (goal ≥ 50,000)`,
);
console.log(
  `machines only:      ${Math.round(machines).toLocaleString()} jobs/s (coordinator + ${WORKERS} connection actors, no frames, no Net, no workers)`,
);
console.log(
  `xstate floor:       ${Math.round(toggle).toLocaleString()} state changes/s (a bare two-state toggle); at 4 events a job, at most ${Math.round(toggle / 4).toLocaleString()} jobs/s`,
);
console.log(`ratio engine/bare:  ${(engine / bare).toFixed(4)}`);
const kb = (bytes: number) => (bytes / 1024).toFixed(1);
console.log(
  `allocated per job:  engine ${kb(allocated.engine)} KiB, machines only ${kb(allocated.machines)} KiB; the xstate floor ${Math.round(allocated.toggle).toLocaleString()} B an event, ${kb(allocated.toggle * 4)} KiB at 4 events a job (sampled, collected objects counted, ${ALLOCATION_JOBS.toLocaleString()} jobs)`,
);
console.log(
  `heap per job:       chain ${Math.round(chain)} B, fan-in ${Math.round(fanIn)} B (goal ≤ 2048)`,
);
console.log(
  JSON.stringify({
    bench: "core",
    jobs: JOBS,
    workers: WORKERS,
    jobsPerSec: Math.round(engine),
    bareCallsPerSec: Math.round(bare),
    ratioToBare: Number((engine / bare).toFixed(5)),
    machinesOnlyJobsPerSec: Math.round(machines),
    xstateStateChangesPerSec: Math.round(toggle),
    allocatedBytesPerJob: Math.round(allocated.engine),
    machinesOnlyAllocatedBytesPerJob: Math.round(allocated.machines),
    xstateAllocatedBytesPerEvent: Math.round(allocated.toggle),
    heapBytesPerJobChain: Math.round(chain),
    heapBytesPerJobFanIn: Math.round(fanIn),
  }),
);
