/**
 * Core throughput and memory: no-op jobs through the coordinator and connection machines
 * over the in-memory Net, against a bare loop calling the same handler in the same run.
 */
import { type Actor, createActor, setup } from "xstate";
import { job, type PlannedJob } from "../src/graph/job.ts";
import { planGraph } from "../src/graph/planGraph.ts";
import { connectionMachine } from "../src/machines/connection.ts";
import { coordinatorMachine } from "../src/machines/coordinator.ts";
import { createEngine } from "../src/runtime/engine.ts";
import { PROTOCOL } from "../src/transport/protocolVersion.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 100_000);
const WORKERS = 8;
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

async function engineRun(): Promise<number> {
  const engine = createEngine({ jobs: { noop }, workers: WORKERS });
  const graph = Array.from({ length: JOBS }, (_, i) => job("noop", i));
  const start = performance.now();
  const result = await engine.run(graph);
  const elapsed = performance.now() - start;
  if (!result.ok) throw new Error("the benchmark run failed");
  return (JOBS * 1000) / elapsed;
}

/**
 * The machines alone: the coordinator and one connection actor per worker, driven by hand
 * (each job frame the connections emit is answered at once with a completed RESULT), with no
 * frames, no Net and no worker code. The engine's figure minus this is the price of all that.
 */
function machinesOnly(): number {
  const jobs: PlannedJob[] = Array.from({ length: JOBS }, (_, i) => ({
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
  const start = performance.now();
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
  const elapsed = performance.now() - start;
  if (coordinator.getSnapshot().value !== "done")
    throw new Error("the machines-only run did not finish");
  for (const connection of connections) connection.stop();
  coordinator.stop();
  return (JOBS * 1000) / elapsed;
}

/**
 * The floor XState sets: events per second through a two-state machine that only toggles.
 * Each job costs the coordinator two events (LEASE, RESULT) and its connection two state
 * changes (idle → busy → idle), so this bounds what any XState-based dispatch can reach.
 */
function xstateToggle(): number {
  const toggle = setup({
    types: {} as { events: { type: "GO" } | { type: "BACK" } },
  }).createMachine({
    initial: "idle",
    states: { idle: { on: { GO: "busy" } }, busy: { on: { BACK: "idle" } } },
  });
  const actor = createActor(toggle).start();
  const events = 400_000;
  const start = performance.now();
  for (let i = 0; i < events / 2; i++) {
    actor.send({ type: "GO" });
    actor.send({ type: "BACK" });
  }
  return (events * 1000) / (performance.now() - start);
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
    heapBytesPerJobChain: Math.round(chain),
    heapBytesPerJobFanIn: Math.round(fanIn),
  }),
);
