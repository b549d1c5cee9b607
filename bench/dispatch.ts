/**
 * Dispatch over real sockets: no-op jobs through the engine with 2 and 8 `baton worker`
 * processes (localPool, WebSockets on 127.0.0.1), against a raw `ws` request/response loop
 * over the same number of connections to as many client processes, in the same run. Also
 * the coordinator's RSS with 100,000 jobs queued and no worker.
 *
 * Throughput is measured from the first job frame sent to the last result received, with
 * every worker connected before the first lease (the listener holds connections until all
 * N have arrived), so worker start-up is not counted; the raw loop is timed the same way.
 * No result store by default, so this is dispatch alone; BENCH_STORE=1 adds one (in a
 * throwaway directory) to see what writing each result durably costs: the engine's time then
 * ends at the last job completed (its result durable), not at the last result received.
 * BENCH_HANDLER_THREAD=1 runs the workers with `--handler-thread`, to see what handing each job
 * to a thread of its own costs.
 *
 * The worker and raw client processes are new for each measurement, so their JIT warms up
 * while they are measured (a `baton worker` runs its per-job code below V8's optimizing tier
 * for its first few thousand jobs); each side's CPU a job is also given for the second half of
 * the results alone. The machine's cores are all busy in both loops, so the ratio follows the
 * two sides' CPU a job, workers' included, more than either process alone. So the raw loop's
 * server also serves as many `baton worker` processes, greeted as the coordinator greets them:
 * their CPU a job is what a worker costs answered as fast as a raw client, and the engine's
 * workers' beyond it is what the coordinator's pace and work cost them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type WebSocket, WebSocketServer } from "ws";
import { job } from "../src/graph/job.ts";
import { createEngine } from "../src/runtime/engine.ts";
import { loadJobs } from "../src/runtime/jobModule.ts";
import { localPool } from "../src/runtime/localPool.ts";
import { moduleSource } from "../src/runtime/moduleSource.ts";
import { nodeProcs } from "../src/runtime/nodeProcs.ts";
import type { Link, Net } from "../src/runtime/ports.ts";
import { SECRET_ENV } from "../src/runtime/secret.ts";
import { jobsOf } from "../src/runtime/userModule.ts";
import { DEFAULT_MAX_FRAME_BYTES, wsNet } from "../src/runtime/wsNet.ts";
import { coordinatorProof } from "../src/transport/auth.ts";
import { negotiate, PROTOCOL } from "../src/transport/protocolVersion.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
if (!Number.isInteger(JOBS) || JOBS < 1) {
  console.error(
    `BENCH_JOBS must be a whole number of jobs, at least 1, not ${process.env.BENCH_JOBS}`,
  );
  process.exit(2);
}
const WORKER_COUNTS = [2, 8];
const QUEUED = 100_000;
/** BENCH_STORE=1: the engine writes every result to a result store (fsync per result). */
const WITH_STORE = process.env.BENCH_STORE === "1";
/** BENCH_HANDLER_THREAD=1: the workers run their handlers on a thread of their own. */
const HANDLER_THREAD = process.env.BENCH_HANDLER_THREAD === "1";
const JOBS_MODULE = fileURLToPath(new URL("./fixtures/noop.jobs.ts", import.meta.url));
const ECHO_CLIENT = fileURLToPath(new URL("./fixtures/wsEchoClient.mjs", import.meta.url));
const BATON_BIN = fileURLToPath(new URL("../bin/baton.js", import.meta.url));
const HOME = process.cwd();
/** USER_HZ: the unit of CPU times in /proc/PID/stat, 100 on every Linux platform Node runs on. */
const CLOCK_TICKS = 100;

const LEASE_LATENCY =
  "lease latency = on the coordinator, from a worker's result frame arriving on its socket " +
  "to that worker's next job frame being written to the socket (parse, connection and " +
  "coordinator machines, lease, encode); the network and the worker are not in it";

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
const fixed = (n: number, digits: number) => Number(n.toFixed(digits));

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * (sorted.length - 1)))]!;
}

/**
 * The safety net behind the pools: every worker process and raw client this process started
 * and that is still there, stopped by pid (the raw clients from their handles, the workers
 * found in /proc as children of this process running bin/baton.js).
 */
const clients = new Set<ChildProcess>();
function stopChildren(): void {
  for (const child of clients) if (child.exitCode === null) child.kill("SIGKILL");
  const procs = nodeProcs();
  for (const info of procs.list()) {
    const ours = info.ppid === process.pid && info.argv.includes(BATON_BIN);
    if (ours && info.state !== "zombie") procs.signal(info.pid, "SIGKILL");
  }
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    stopChildren();
    if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}

let tempDir: string | undefined;

/** A throwaway working directory: the engine puts `.baton/` (secret file, logs) in it. */
async function inTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "baton-bench-dispatch-"));
  tempDir = dir;
  process.chdir(dir);
  try {
    return await fn(dir);
  } finally {
    process.chdir(HOME);
    rmSync(dir, { recursive: true, force: true });
    tempDir = undefined;
  }
}

/**
 * CPU time (user + system, ms) of this process and of its child processes (the workers or
 * the raw clients; also tsx's idle esbuild service), from /proc: what a job costs each side.
 */
interface Cpu {
  self: number;
  children: number;
}

function cpuNow(): Cpu {
  const usage = process.cpuUsage();
  let ticks = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // After "PID (COMM) ": state, ppid, … utime and stime are the 12th and 13th fields.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[1]) === process.pid) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return { self: (usage.user + usage.system) / 1000, children: ticks * (1000 / CLOCK_TICKS) };
}

interface Timing {
  /** Results to wait for: the measurement ends at the last one. */
  expected: number;
  firstJobAt: number | undefined;
  lastResultAt: number | undefined;
  cpuAtFirstJob: Cpu | undefined;
  /** At the result that ends the first half: the second half is the processes' JIT warmer. */
  cpuAtHalf: Cpu | undefined;
  cpuAtLastResult: Cpu | undefined;
  results: number;
  /** ms from a result arriving to the next job frame on the same connection. */
  turnaround: number[];
  /** ms from a job frame sent to its result arriving. */
  roundTrip: number[];
}

const newTiming = (expected: number): Timing => ({
  expected,
  firstJobAt: undefined,
  lastResultAt: undefined,
  cpuAtFirstJob: undefined,
  cpuAtHalf: undefined,
  cpuAtLastResult: undefined,
  results: 0,
  turnaround: [],
  roundTrip: [],
});

/** One more result arrived at `now`: the CPU is read at the half and at the last. */
function countResult(timing: Timing, now: number): void {
  timing.results++;
  timing.lastResultAt = now;
  if (timing.results === Math.floor(timing.expected / 2)) timing.cpuAtHalf = cpuNow();
  if (timing.results === timing.expected) timing.cpuAtLastResult = cpuNow();
}

/** Timestamps job frames out and result frames in, on the coordinator's side of a link. */
function timedLink(link: Link, timing: Timing): Link {
  let resultAt: number | undefined;
  let jobAt: number | undefined;
  return {
    id: link.id,
    remote: link.remote,
    get bufferedAmount() {
      return link.bufferedAmount;
    },
    maxFrameBytes: link.maxFrameBytes,
    send(frame) {
      if (frame.startsWith('{"type":"job"')) {
        const now = performance.now();
        if (timing.firstJobAt === undefined) {
          timing.cpuAtFirstJob = cpuNow();
          timing.firstJobAt = performance.now();
        }
        if (resultAt !== undefined) timing.turnaround.push(now - resultAt);
        resultAt = undefined;
        jobAt = now;
      }
      link.send(frame);
    },
    onFrame(handler) {
      link.onFrame((frame) => {
        if (frame.startsWith('{"type":"result"')) {
          const now = performance.now();
          countResult(timing, now);
          if (jobAt !== undefined) timing.roundTrip.push(now - jobAt);
          jobAt = undefined;
          resultAt = now;
        }
        handler(frame);
      });
    },
    close: (code, reason) => link.close(code, reason),
    ping: () => link.ping(),
    admit: () => link.admit(),
    onPong: (handler) => link.onPong(handler),
    onPing: (handler) => link.onPing(handler),
    onClose: (handler) => link.onClose(handler),
  };
}

/**
 * wsNet, with each accepted link timed and held back until `gate` links have arrived, so
 * that every worker starts together.
 */
function timedNet(gate: number, timing: Timing): Net {
  const net = wsNet();
  return {
    connect: (address, options) => net.connect(address, options),
    async listen(address, options) {
      const listener = await net.listen(address, options);
      const handlers: ((link: Link) => void)[] = [];
      const held: Link[] = [];
      let open = gate <= 0;
      listener.onConnection((link) => {
        const timed = timedLink(link, timing);
        if (open) {
          for (const handler of handlers) handler(timed);
          return;
        }
        held.push(timed);
        if (held.length < gate) return;
        open = true;
        for (const waiting of held.splice(0)) for (const handler of handlers) handler(waiting);
      });
      return {
        address: listener.address,
        onConnection: (handler) => handlers.push(handler),
        close: () => listener.close(),
      };
    },
  };
}

const module = await import(JOBS_MODULE);
const jobs = loadJobs(jobsOf(module, JOBS_MODULE), moduleSource(JOBS_MODULE));
const noopGraph = (count: number, offset = 0) =>
  Array.from({ length: count }, (_, i) => job("noop", offset + i));

interface Measured {
  perSec: number;
  seconds: number;
  turnaround: number[];
  roundTrip: number[];
  /** CPU µs per job (or round trip): this process (coordinator, raw server) and its children. */
  selfCpuUs: number;
  childrenCpuUs: number;
  /** The same over the second half of the results alone. */
  secondHalfSelfCpuUs: number;
  secondHalfChildrenCpuUs: number;
}

function measured(timing: Timing): Measured {
  const { firstJobAt, lastResultAt, cpuAtFirstJob: start, cpuAtHalf: half } = timing;
  const end = timing.cpuAtLastResult;
  if (timing.results !== timing.expected || !start || !end || !firstJobAt || !lastResultAt) {
    throw new Error(`${timing.results} of ${timing.expected} results arrived`);
  }
  const seconds = (lastResultAt - firstJobAt) / 1000;
  // With one job there is no first half: the second half is then the whole.
  const from = half ?? start;
  const secondHalf = timing.expected - Math.floor(timing.expected / 2);
  return {
    perSec: timing.expected / seconds,
    seconds,
    turnaround: timing.turnaround.sort((x, y) => x - y),
    roundTrip: timing.roundTrip.sort((x, y) => x - y),
    selfCpuUs: ((end.self - start.self) * 1000) / timing.expected,
    childrenCpuUs: ((end.children - start.children) * 1000) / timing.expected,
    secondHalfSelfCpuUs: ((end.self - from.self) * 1000) / secondHalf,
    secondHalfChildrenCpuUs: ((end.children - from.children) * 1000) / secondHalf,
  };
}

/** No-op jobs through the engine and `workers` worker processes. */
async function engineRun(workers: number, count: number, offset: number): Promise<Measured> {
  return inTempDir(async (dir) => {
    const timing = newTiming(count);
    const engine = createEngine({
      jobs,
      workers: localPool({
        jobsModule: JOBS_MODULE,
        count: workers,
        handlerThread: HANDLER_THREAD,
      }),
      net: timedNet(workers, timing),
      ...(WITH_STORE && { store: join(dir, "store") }),
    });
    const run = engine.run(noopGraph(count, offset));
    if (WITH_STORE) {
      // Workers go on while results are written, so the last result in is not the end: the
      // run's throughput is counted to the last job completed, when its result is durable.
      let completed = 0;
      run.on("job", ({ state }) => {
        if (state !== "completed" || ++completed < count) return;
        timing.lastResultAt = performance.now();
        timing.cpuAtLastResult = cpuNow();
      });
    }
    const result = await run;
    if (!result.ok) throw new Error(`the engine run failed: ${JSON.stringify(result.counts)}`);
    return measured(timing);
  });
}

/**
 * Who answers the raw loop's server: its echo clients, or real `baton worker` processes, which
 * it greets as a coordinator does (challenge, then a welcome proving the secret) before the
 * loop. The workers, answered as fast as the echo clients, cost what a worker's own code and
 * transport cost; against the engine's, what the coordinator's pace and work add to them.
 */
type RawPeers = "echo clients" | "workers";

/**
 * The baseline: a `ws` server here and `connections` client processes (`peers`), each
 * answering job-shaped frames with result-shaped frames; the server hands out `count` requests
 * from one shared counter, the next to a connection as soon as its previous answer arrives.
 */
async function rawLoop(
  connections: number,
  count: number,
  peers: RawPeers = "echo clients",
): Promise<Measured> {
  const server = new WebSocketServer({
    host: "127.0.0.1",
    port: 0,
    perMessageDeflate: false,
    clientTracking: false,
  });
  await once(server, "listening");
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const secret = randomBytes(32);
  const timing = newTiming(count);
  const conns: { socket: WebSocket; sentAt: number }[] = [];
  const children: ChildProcess[] = [];
  let issued = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      const sendNext = (conn: { socket: WebSocket; sentAt: number }) => {
        if (issued >= count) return;
        const input = issued++;
        const id = input.toString(16).padStart(16, "0");
        conn.sentAt = performance.now();
        conn.socket.send(
          JSON.stringify({ type: "job", id, kind: "noop", input, deps: {}, attempt: 1 }),
        );
      };
      const ready = (conn: { socket: WebSocket; sentAt: number }) => {
        conns.push(conn);
        if (conns.length < connections) return;
        // Every client is connected (and welcomed): start them all.
        timing.cpuAtFirstJob = cpuNow();
        timing.firstJobAt = performance.now();
        for (const waiting of conns) sendNext(waiting);
      };
      server.on("connection", (socket) => {
        const conn = { socket, sentAt: 0 };
        const nonce = randomBytes(16).toString("hex");
        socket.on("message", (data: Buffer) => {
          const now = performance.now();
          const frame = JSON.parse(data.toString("utf8")) as {
            type: string;
            protocol: [number, number];
            proof: string;
          };
          if (frame.type === "hello" && peers === "workers") {
            const protocol = negotiate(PROTOCOL, frame.protocol);
            const proof = coordinatorProof(secret, nonce, frame.proof);
            // As the engine's welcome: pings every 5 s (so the worker watches for silence, as it
            // does in a run) and the frame limit (so it measures each result against it).
            socket.send(
              JSON.stringify({
                type: "welcome",
                protocol,
                run: "bench",
                proof,
                heartbeatMs: 5_000,
                maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
              }),
            );
            ready(conn);
            return;
          }
          if (frame.type !== "result") return reject(new Error(`unexpected ${frame.type}`));
          timing.roundTrip.push(now - conn.sentAt);
          countResult(timing, now);
          if (timing.results === count) resolve();
          else sendNext(conn);
        });
        if (peers === "workers") {
          socket.send(JSON.stringify({ type: "challenge", nonce, protocol: PROTOCOL }));
        } else ready(conn);
      });
      for (let i = 0; i < connections; i++) {
        const child =
          peers === "workers"
            ? spawn(
                process.execPath,
                [
                  BATON_BIN,
                  "worker",
                  ...["--connect", url, "--jobs", JOBS_MODULE, "--name", `paced-${i + 1}`],
                  ...(HANDLER_THREAD ? ["--handler-thread"] : []),
                ],
                {
                  // The secret in the environment, never on the command line.
                  env: { ...process.env, [SECRET_ENV]: secret.toString("hex") },
                  stdio: ["ignore", "ignore", "pipe"],
                },
              )
            : spawn(process.execPath, [ECHO_CLIENT, url], {
                stdio: ["ignore", "ignore", "inherit"],
              });
        // A worker's stderr is its line on how it stopped: kept to say why, if it stops early.
        let said = "";
        child.stderr?.on("data", (chunk: Buffer) => {
          said = (said + chunk.toString("utf8")).slice(-2_000);
        });
        clients.add(child);
        children.push(child);
        child.once("exit", (code) => {
          clients.delete(child);
          if (timing.results < count) {
            reject(new Error(`raw loop's ${peers} process ${child.pid} exited (${code}) ${said}`));
          }
        });
      }
    });
  } finally {
    for (const { socket } of conns) socket.close(1000, "done");
    await Promise.all(
      children.map((child) =>
        child.exitCode !== null || child.signalCode !== null ? undefined : once(child, "exit"),
      ),
    );
    server.close();
  }
  return measured(timing);
}

/** The coordinator's RSS with `QUEUED` ready jobs, its listener up and no worker at all. */
async function rssWithQueued(): Promise<{ before: number; queued: number }> {
  return inTempDir(async () => {
    gc();
    const before = process.memoryUsage().rss;
    const engine = createEngine({
      jobs,
      workers: localPool({ jobsModule: JOBS_MODULE, count: 0 }),
      progressIntervalMs: 20,
    });
    const run = engine.run(noopGraph(QUEUED));
    // The first progress event comes after the coordinator has started.
    await new Promise<void>((resolve) => run.once("progress", () => resolve()));
    gc();
    const queued = process.memoryUsage().rss;
    run.cancel("the benchmark has measured memory");
    const result = await run;
    if (result.counts.cancelled !== QUEUED) throw new Error("the queued run did not cancel");
    return { before, queued };
  });
}

if (!(globalThis as { gc?: unknown }).gc) {
  console.error("note: run with --expose-gc for steadier memory figures (npm run bench does)");
}

try {
  const rss = await rssWithQueued();
  // Warm-up at full size, as the core bench's: the coordinator's JIT (TurboFan keeps compiling
  // for the first several thousand jobs; after 2,000 the first timed run cost 12–27 µs a job more
  // than the next), and the raw loop's.
  await engineRun(2, JOBS, 10_000_000);
  await rawLoop(2, JOBS);

  console.log(
    `${JOBS.toLocaleString()} no-op jobs per measurement (BENCH_JOBS to change), ` +
      `${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(1)}, ` +
      (WITH_STORE ? "with a result store (BENCH_STORE=1)" : "no result store") +
      (HANDLER_THREAD ? ", handlers on a thread of their own (BENCH_HANDLER_THREAD=1)" : ""),
  );
  console.log(LEASE_LATENCY);
  const results = [];
  for (const workers of WORKER_COUNTS) {
    const raw = await rawLoop(workers, JOBS);
    const paced = await rawLoop(workers, JOBS, "workers");
    const engine = await engineRun(workers, JOBS, workers * 1_000_000);
    const ratio = engine.perSec / raw.perSec;
    const row = {
      workers,
      jobsPerSec: Math.round(engine.perSec),
      rawRoundTripsPerSec: Math.round(raw.perSec),
      ratio: fixed(ratio, 4),
      leaseLatencyMsP50: fixed(percentile(engine.turnaround, 0.5), 4),
      leaseLatencyMsP99: fixed(percentile(engine.turnaround, 0.99), 4),
      jobRoundTripMsP50: fixed(percentile(engine.roundTrip, 0.5), 4),
      jobRoundTripMsP99: fixed(percentile(engine.roundTrip, 0.99), 4),
      rawRoundTripMsP50: fixed(percentile(raw.roundTrip, 0.5), 4),
      rawRoundTripMsP99: fixed(percentile(raw.roundTrip, 0.99), 4),
      coordinatorCpuUsPerJob: fixed(engine.selfCpuUs, 1),
      workersCpuUsPerJob: fixed(engine.childrenCpuUs, 1),
      coordinatorBusy: fixed((engine.selfCpuUs * engine.perSec) / 1e6, 3),
      rawServerCpuUsPerRoundTrip: fixed(raw.selfCpuUs, 1),
      rawClientsCpuUsPerRoundTrip: fixed(raw.childrenCpuUs, 1),
      secondHalfCoordinatorCpuUsPerJob: fixed(engine.secondHalfSelfCpuUs, 1),
      secondHalfWorkersCpuUsPerJob: fixed(engine.secondHalfChildrenCpuUs, 1),
      secondHalfRawServerCpuUsPerRoundTrip: fixed(raw.secondHalfSelfCpuUs, 1),
      secondHalfRawClientsCpuUsPerRoundTrip: fixed(raw.secondHalfChildrenCpuUs, 1),
      pacedJobsPerSec: Math.round(paced.perSec),
      pacedWorkersCpuUsPerJob: fixed(paced.childrenCpuUs, 1),
      secondHalfPacedWorkersCpuUsPerJob: fixed(paced.secondHalfChildrenCpuUs, 1),
    };
    results.push(row);
    console.log(`${workers} workers:`);
    console.log(
      `  engine:  ${row.jobsPerSec.toLocaleString()} jobs/s (${engine.seconds.toFixed(2)} s)`,
    );
    console.log(
      `  raw ws:  ${row.rawRoundTripsPerSec.toLocaleString()} round trips/s (${raw.seconds.toFixed(2)} s)`,
    );
    console.log(`  ratio engine/raw: ${row.ratio.toFixed(3)} (goal ≥ 0.6)`);
    console.log(
      `  lease latency p50 ${row.leaseLatencyMsP50.toFixed(3)} ms, p99 ${row.leaseLatencyMsP99.toFixed(3)} ms`,
    );
    console.log(
      `  round trip (job frame out → result in) p50 ${row.jobRoundTripMsP50.toFixed(3)} ms, ` +
        `p99 ${row.jobRoundTripMsP99.toFixed(3)} ms; raw p50 ${row.rawRoundTripMsP50.toFixed(3)} ms, ` +
        `p99 ${row.rawRoundTripMsP99.toFixed(3)} ms`,
    );
    console.log(
      `  CPU per job: coordinator ${row.coordinatorCpuUsPerJob} µs ` +
        `(busy ${Math.round(row.coordinatorBusy * 100)}% of the time), workers ${row.workersCpuUsPerJob} µs; ` +
        `raw: server ${row.rawServerCpuUsPerRoundTrip} µs, clients ${row.rawClientsCpuUsPerRoundTrip} µs`,
    );
    console.log(
      `  CPU per job, the second half of the results alone: ` +
        `coordinator ${row.secondHalfCoordinatorCpuUsPerJob} µs, workers ${row.secondHalfWorkersCpuUsPerJob} µs; ` +
        `raw: server ${row.secondHalfRawServerCpuUsPerRoundTrip} µs, clients ${row.secondHalfRawClientsCpuUsPerRoundTrip} µs`,
    );
    console.log(
      `  baton workers at the raw loop's pace (its server answering each result at once): ` +
        `${row.pacedJobsPerSec.toLocaleString()} jobs/s, workers ${row.pacedWorkersCpuUsPerJob} µs a job ` +
        `(second half ${row.secondHalfPacedWorkersCpuUsPerJob} µs)`,
    );
  }
  console.log(
    `coordinator RSS with ${QUEUED.toLocaleString()} jobs queued: ${mb(rss.queued)} MB ` +
      `(${mb(rss.before)} MB before planning)`,
  );
  console.log(
    JSON.stringify({
      bench: "dispatch",
      jobs: JOBS,
      store: WITH_STORE,
      handlerThread: HANDLER_THREAD,
      leaseLatency: "coordinator: result frame in → same worker's next job frame out",
      results,
      coordinatorRssMbWith100kQueued: mb(rss.queued),
      coordinatorRssMbBeforePlanning: mb(rss.before),
      cores: availableParallelism(),
    }),
  );
} finally {
  stopChildren();
}
