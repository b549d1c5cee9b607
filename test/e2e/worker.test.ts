/**
 * `baton worker` as a user runs it: a real `node bin/baton.js worker` child process against a
 * coordinator built in the test from the library pieces (coordinator machine, CoordinatorServer,
 * wsNet on 127.0.0.1). Every child still running when its test ends is killed by its pid.
 */
import { spawn } from "node:child_process";
import {
  chmodSync,
  closeSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Socket } from "node:net";
import { availableParallelism, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { type JobSpec, job } from "../../src/graph/job.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { moduleSource } from "../../src/runtime/moduleSource.ts";
import { nodeEntropy } from "../../src/runtime/nodeEntropy.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { keptSecret, readSecret, writeSecretFile } from "../../src/runtime/secret.ts";
import { jobsOf } from "../../src/runtime/userModule.ts";
import { describeRange, PROTOCOL } from "../../src/transport/protocolVersion.ts";
import { type BatonProcess, ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { closedPort } from "../fixtures/closedPort.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { silentCoordinator } from "../fixtures/silentCoordinator.ts";
import { startSocketCoordinator } from "../fixtures/socketCoordinator.ts";
import { stderrMatches } from "../fixtures/stderrMatches.ts";
import { startTcpProxy } from "../fixtures/tcpProxy.ts";
import { within } from "../fixtures/within.ts";
import * as fixture from "../fixtures/worker.jobs.ts";

const JOBS = "test/fixtures/worker.jobs.ts";
const NAME = "e2e-worker";

type Cleanup = () => Promise<void> | void;

/**
 * The helpers of a test, each undoing what it starts or makes through `defer`: a temporary
 * directory, a coordinator, `baton worker` processes.
 */
function helpers(defer: (cleanup: Cleanup) => void) {
  /** A temporary directory, removed after the test. */
  function tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), "baton-worker-"));
    defer(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /**
   * A coordinator for `graph` on a fresh 127.0.0.1 port, run from this test's process;
   * `impatient` pings every 500 ms and drops a worker silent for 2 s.
   */
  async function startCoordinator(
    graph: JobSpec[],
    secret: Uint8Array,
    impatient = false,
    listen?: string,
  ) {
    const jobs = loadJobs(jobsOf(fixture, JOBS), moduleSource(join(ROOT, JOBS)));
    const coordinator = await startSocketCoordinator({
      graph,
      jobs,
      secret,
      run: "e2e",
      ...(impatient && { heartbeatMs: 500, deadAfterMs: 2_000 }),
      ...(listen !== undefined && { listen }),
    });
    defer(coordinator.close);
    return coordinator;
  }

  /** Starts `baton worker ...args` without the caller's BATON_SECRET; killed by pid after the test. */
  function worker(args: string[], env: Record<string, string> = {}): BatonProcess {
    const started = startBaton(["worker", ...args], { env: { BATON_SECRET: undefined, ...env } });
    const { child } = started;
    defer(() => {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL");
    });
    return started;
  }

  return { tempDir, startCoordinator, worker, defer };
}

/** What the tests that run one at a time started or made, undone after each. */
const cleanups: Cleanup[] = [];
const { tempDir, startCoordinator, worker } = helpers((cleanup) => cleanups.push(cleanup));

async function cleanUp(): Promise<void> {
  stopBatons();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/**
 * The helpers of a test that runs beside others (`describe.concurrent`): what they start is
 * undone when that test ends, not when another does.
 */
function scoped(onTestFinished: (hook: () => Promise<void>) => void) {
  const own: Cleanup[] = [];
  onTestFinished(async () => {
    for (const cleanup of own.splice(0).reverse()) await cleanup();
  });
  return helpers((cleanup) => own.push(cleanup));
}

/** `baton worker`'s arguments for the coordinator at `address`, the secret in `secretFile`. */
function workerArgs(address: string, secretFile: string, ...more: string[]): string[] {
  return ["--connect", address, "--secret-file", secretFile, "--jobs", JOBS, ...more];
}

/**
 * A coordinator whose one job, `hang`, runs on a first `baton worker --name gpu-1`, which holds
 * that name while the test lasts; with the test's helpers, for a second worker.
 */
async function nameHeld(helpers: ReturnType<typeof scoped>) {
  const { path, secret } = await writeSecretFile(helpers.tempDir());
  const held = job("hang");
  const coordinator = await helpers.startCoordinator([held], secret);
  const first = helpers.worker(workerArgs(coordinator.address, path, "--name", "gpu-1"));
  await vi.waitFor(() => expect(coordinator.record(held).state).toBe("running"), {
    timeout: 30_000,
  });
  return { ...helpers, coordinator, path, held, first };
}

/** What `baton worker --retry-for` says of a refusal of its name "gpu-1" by the coordinator at `address`. */
const nameHeldBy = (address: string) =>
  `connection to the coordinator at ${address} closed with code 4010: name in use: another worker process named "gpu-1" is connected to this run; give each worker its own --name; if the worker that had it is gone unseen (its host lost), the coordinator lets the name go within 20.0 s by default`;
/** `baton worker`'s flag for a JSON line on stderr at each attempt to connect again. */
const INFO = ["--log-level", "info"];

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** The command line of a running process, as every user on the machine can read it. */
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");

describe("baton worker", () => {
  afterEach(cleanUp);

  it("runs the coordinator's jobs and exits 0 when the coordinator stops it", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    const a = job("double", 20);
    const b = job("double", 1);
    const total = job("sum", null, { after: [a, b] });
    const env = job("secretInEnv");
    const coordinator = await startCoordinator([total, env], secret);
    const { child, exit } = worker(
      workerArgs(coordinator.address, path, "--name", NAME, "--log-level", "trace"),
    );
    // Once the child has exec'd node on bin/baton.js (before, it shows this process's argv).
    await vi.waitFor(() => expect(cmdline(child.pid!)).toContain("worker"));
    const argv = cmdline(child.pid!);

    await coordinator.finished;
    const { code, stdout, stderr } = await exit;
    expect(code).toBe(0);
    expect(coordinator.record(a)).toMatchObject({ state: "completed", value: 40 });
    expect(coordinator.record(b)).toMatchObject({ state: "completed", value: 2 });
    expect(coordinator.record(total)).toMatchObject({ state: "completed", value: 42 });
    expect(coordinator.record(env)).toMatchObject({ state: "completed", value: "absent" });
    expect(stderr).toContain(
      `baton worker: the coordinator at ${coordinator.address} stopped this worker (the run is finished) after 4 jobs finished here\n`,
    );
    expect(argv).toContain(path);
    for (const text of [stdout, stderr, argv.join(" ")]) expect(text).not.toContain(hex(secret));
  });

  it("runs its jobs and exits 0 when its stderr is a file on a full disk, its logging given up", async () => {
    // A pool's worker logs to a file in the run's logs folder; /dev/full fails each write with
    // ENOSPC, as that folder's full disk does.
    const { path, secret } = await writeSecretFile(tempDir());
    const a = job("double", 20);
    const b = job("double", 1);
    const total = job("sum", null, { after: [a, b] });
    const coordinator = await startCoordinator([total], secret);
    const full = openSync("/dev/full", "w");
    cleanups.push(() => closeSync(full));
    const { exit } = startBaton(
      ["worker", ...workerArgs(coordinator.address, path, "--log-level", "trace")],
      { env: { BATON_SECRET: undefined }, stderrTo: full },
    );
    await coordinator.finished;
    expect((await exit).code).toBe(0);
    expect(coordinator.record(total)).toMatchObject({ state: "completed", value: 42 });
  });

  it("runs its jobs and exits 0 when its handlers print to a stdout on a full disk, saying once that it drops that", async () => {
    // A pool's worker's stdout is its log too: a handler that printed to it on a full disk
    // ended the worker, after each attempt of its job.
    const { path, secret } = await writeSecretFile(tempDir());
    const prints = [job("print", "one"), job("print", "three")];
    const coordinator = await startCoordinator(prints, secret);
    const full = openSync("/dev/full", "w");
    cleanups.push(() => closeSync(full));
    const { exit } = startBaton(["worker", ...workerArgs(coordinator.address, path)], {
      env: { BATON_SECRET: undefined },
      stdoutTo: full,
    });
    await coordinator.finished;
    const { code, stderr } = await exit;
    expect(code).toBe(0);
    expect(prints.map((p) => coordinator.record(p))).toMatchObject([
      { state: "completed", value: 3, attempts: 1 },
      { state: "completed", value: 5, attempts: 1 },
    ]);
    expect(stderr.match(/cannot write stdout/g)).toEqual(["cannot write stdout"]);
    expect(stderr).toContain(
      "baton worker: cannot write stdout: no space left on the disk; what its job handlers print there is dropped from now on, and its jobs go on [ENOSPC]\n",
    );
  });

  it("exits 5, not 0, saying so, when a job handler ends its process with process.exit(0)", async () => {
    // A worker that exits 0 is one its coordinator stopped: the local pool did not replace it.
    const { path, secret } = await writeSecretFile(tempDir());
    const coordinator = await startCoordinator([job("exitZero")], secret);
    const { code, stderr } = await worker(workerArgs(coordinator.address, path)).exit;
    expect(code).toBe(5);
    expect(stderr).toContain(
      "baton worker: this process is ending with exit code 0 while it serves a run, which baton never does: a job handler called process.exit(0)?",
    );
  });

  it("takes the secret from BATON_SECRET and keeps it out of its handlers' environment", async () => {
    const secret = nodeEntropy().bytes(32);
    const env = job("secretInEnv");
    const coordinator = await startCoordinator([env], secret);
    const { exit } = worker(
      ["--connect", coordinator.address, "--jobs", JOBS, "--log-level", "trace"],
      { BATON_SECRET: hex(secret) },
    );
    const { code, stdout, stderr } = await exit;
    expect(code).toBe(0);
    expect(coordinator.record(env)).toMatchObject({ state: "completed", value: "absent" });
    expect(`${stdout}${stderr}`).not.toContain(hex(secret));
  });

  it("exits 4 naming the auth failure (4001) when its secret is not the run's", async () => {
    const coordinator = await startCoordinator([job("double", 1)], nodeEntropy().bytes(32));
    const { path, secret } = await writeSecretFile(tempDir());
    const { code, stdout, stderr } = await worker(workerArgs(coordinator.address, path)).exit;
    expect(code).toBe(4);
    // The coordinator's reason, once, and which secret this worker used.
    expect(stderr).toMatch(
      /^baton worker: connection to the coordinator at ws:\/\/127\.0\.0\.1:\d+ closed with code 4001: authentication failed: [^\n]*; this worker's secret was read from \/\S+$/m,
    );
    expect(stderr.match(/authentication failed/g)).toHaveLength(1);
    // Starting it again the same way would not help.
    expect(stderr).not.toContain("--retry-for");
    expect(`${stdout}${stderr}`).not.toContain(hex(secret));
  });

  it("exits 4 naming the code mismatch (4006) when it loaded another job module", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    const coordinator = await startCoordinator([job("double", 1)], secret);
    const { code, stderr } = await worker([
      "--connect",
      coordinator.address,
      "--secret-file",
      path,
      "--jobs",
      "test/fixtures/counted.graph.ts",
    ]).exit;
    expect(code).toBe(4);
    // The coordinator's reason with the two hashes, then what it loaded, to hold against the
    // --jobs of the command baton run prints; the advice said once, where the code's meaning
    // repeated it in other words ("deploy the same module): code mismatch: … deploy the same files").
    expect(stderr).toMatch(
      new RegExp(
        `^baton worker: connection to the coordinator at ws://127\\.0\\.0\\.1:\\d+ closed with code 4006: job module mismatch: coordinator has \\w+, worker has \\w+; deploy the same module; this worker loaded ${join(ROOT, "test/fixtures/counted.graph.ts")}: give --jobs the file the coordinator loaded \\(baton run's --jobs, or its graph module without --jobs\\), with the same local files it imports$`,
        "m",
      ),
    );
    expect(stderr.match(/mismatch/g)).toHaveLength(1);
  });

  it("is refused (4006) when a file its job module imports differs, and joins when the tree is the same", async () => {
    const graphText = [
      `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};`,
      'export { default as jobs } from "./jobs.ts";',
      'export default [job("calc", 21)];',
    ].join("\n");
    const treeWith = (factor: number) => {
      const dir = tempDir();
      writeFileSync(join(dir, "graph.ts"), graphText);
      writeFileSync(join(dir, "jobs.ts"), `export default { calc: (n: number) => n * ${factor} };`);
      return join(dir, "graph.ts");
    };
    const coordinatorGraph = treeWith(2);
    const module = (await import(coordinatorGraph)) as Record<string, unknown>;
    const jobs = loadJobs(jobsOf(module, coordinatorGraph), moduleSource(coordinatorGraph));
    const { path, secret } = await writeSecretFile(tempDir());
    const [calc] = module.default as JobSpec[];
    const coordinator = await startSocketCoordinator({
      graph: [calc!],
      jobs,
      secret,
      run: "e2e",
    });
    cleanups.push(coordinator.close);
    // The worker of the same tree starts as the other does, its connection held by a paused
    // proxy (within a welcome timeout no start under load outlasts) until that one is refused.
    const proxy = await startTcpProxy({
      host: "127.0.0.1",
      port: Number(new URL(coordinator.address).port),
    });
    cleanups.push(proxy.close);
    proxy.pause();
    const same = worker([
      ...["--connect", proxy.address, "--secret-file", path, "--jobs", treeWith(2)],
      ...["--welcome-timeout-ms", "120000"],
    ]);

    // Same graph file, another handler file behind it: refused before it can lease a job.
    const refused = await worker([
      "--connect",
      coordinator.address,
      "--secret-file",
      path,
      "--jobs",
      treeWith(1000),
    ]).exit;
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/closed with code 4006: job module mismatch/);
    expect(refused.stderr).toContain("give --jobs the file the coordinator loaded");
    expect(coordinator.record(calc!).state).toBe("ready");

    proxy.resume();
    const joined = await same.exit;
    expect(joined.code).toBe(0);
    expect(coordinator.record(calc!)).toMatchObject({ state: "completed", value: 42 });
  });

  it("refused (4006) by a coordinator started after its job module changed on disk, says to start it again", async () => {
    // A worker kept up with --retry-for while the module is edited and the run started again.
    const dir = tempDir();
    const module = join(dir, "jobs.ts");
    writeFileSync(module, 'export { default } from "./calc.ts";');
    writeFileSync(join(dir, "calc.ts"), "export default { calc: (n: number) => n * 1000 };");
    const { path, secret } = await writeSecretFile(tempDir());
    const address = `ws://127.0.0.1:${await closedPort()}`;
    const waiting = worker([
      "--connect",
      address,
      "--secret-file",
      path,
      "--jobs",
      module,
      "--retry-for",
      "1m",
    ]);
    await stderrMatches(waiting.stderr, /trying again for up to 1m/);
    writeFileSync(join(dir, "calc.ts"), "export default { calc: (n: number) => n * 2 };");
    const calc = job("calc", 21);
    const now = (await import(module)) as Record<string, unknown>;
    const coordinator = await startSocketCoordinator({
      graph: [calc],
      jobs: loadJobs(jobsOf(now, module), moduleSource(module)),
      secret,
      run: "e2e",
      listen: address,
    });
    cleanups.push(coordinator.close);
    const { code, stderr } = await within(waiting.exit, 10_000, "the worker's exit");
    expect(code).toBe(4);
    expect(stderr).toContain(
      `; this worker loaded ${module}, which has changed since (it or a local file it imports): start the worker again, to load it as it is now\n`,
    );
  });

  it("exits 3 saying it gave up (4009) when the coordinator goes silent after the welcome", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    const coordinator = await silentCoordinator({ secret, heartbeatMs: 50 });
    cleanups.push(() => coordinator.close());
    const { code, stderr } = await worker(workerArgs(coordinator.address, path)).exit;
    expect(code).toBe(3);
    // Said once: the worker's own log line about it stays below the default level.
    expect(stderr).toBe(
      `baton worker: gave up on the coordinator at ${coordinator.address} (code 4009): no frame or ping from the coordinator for 200 ms; it may have crashed or the network dropped the connection; check that it is still running and reachable from here; start the worker again once the coordinator is reachable, or give it --retry-for DURATION to have it try by itself (a run started again keeps its address and secret only when baton run is given --listen HOST:PORT and --secret-file FILE)\n`,
    );
    expect((await coordinator.closed).code).toBe(4009);
  });

  it("exits 4 naming both ranges, without proving the secret, when the coordinator shares no protocol version with it", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    const newer = await silentCoordinator({ secret, heartbeatMs: 50, protocol: [99, 100] });
    cleanups.push(newer.close);
    const { code, stderr } = await within(
      worker(workerArgs(newer.address, path)).exit,
      10_000,
      "the worker's exit",
    );
    const reason = `no common protocol version: the coordinator speaks 99..100, the worker speaks ${describeRange(PROTOCOL)}; install matching baton versions`;
    expect(await newer.closed).toEqual({ code: 4002, reason });
    expect(code).toBe(4);
    expect(stderr).toBe(
      `baton worker: connection to the coordinator at ${newer.address} closed with code 4002 (${reason}): protocol version mismatch: the two sides share no protocol version; upgrade the older side\n`,
    );
  });

  it("says what to check for a coordinator host name that does not resolve, not to wait for the coordinator", async () => {
    const { path } = await writeSecretFile(tempDir());
    const env = { NODE_OPTIONS: `--import=${join(ROOT, "test/fixtures/unresolvedNames.mjs")}` };
    const notFound = await worker(workerArgs("ws://no-such-host.invalid:7000", path), env).exit;
    expect(notFound.code).toBe(3);
    expect(notFound.stderr).toBe(
      "baton worker: cannot connect to ws://no-such-host.invalid:7000: the host name no-such-host.invalid could not be resolved: no such name (ENOTFOUND); check its spelling against the address baton run printed, and that this machine resolves the coordinator's host by that name (getent hosts no-such-host.invalid), or give the coordinator's IP address (baton run prints the address workers connect to); then start the worker again\n",
    );
    const noAnswer = await worker(workerArgs("ws://head.dns-down.invalid:7000", path), env).exit;
    expect(noAnswer.code).toBe(3);
    expect(noAnswer.stderr).toBe(
      "baton worker: cannot connect to ws://head.dns-down.invalid:7000: the host name head.dns-down.invalid could not be resolved: the name servers did not answer (EAI_AGAIN); check this machine's network and DNS (/etc/resolv.conf), and try again, or give the coordinator's IP address (baton run prints the address workers connect to); or give it --retry-for DURATION to have it try by itself until they answer\n",
    );
  });

  it("exits 2 with the chmod hint when the secret file is readable by others", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    chmodSync(path, 0o644);
    const { code, stdout, stderr } = await worker(workerArgs("ws://127.0.0.1:9", path)).exit;
    expect(code).toBe(2);
    expect(stderr).toContain(
      `secret file ${path} is readable by others (mode 0644); chmod 600 ${path}`,
    );
    expect(`${stdout}${stderr}`).not.toContain(hex(secret));
  });

  it("warns when --cpus or --memory offers more than this machine has, and goes on", async () => {
    const { path } = await writeSecretFile(tempDir());
    const cores = availableParallelism();
    const mib = Math.floor(totalmem() / 2 ** 20);
    const { code, stderr } = await worker(
      workerArgs(`ws://127.0.0.1:${await closedPort()}`, path, "--cpus", String(cores + 1)),
    ).exit;
    expect(code).toBe(3);
    expect(stderr).toContain(
      `baton worker: --cpus ${cores + 1} offers more than this machine's ${cores} cores: jobs that require up to ${cores + 1} are sent here, and share the ${cores}\n`,
    );
    expect(stderr).not.toContain("--memory");
    const over = await worker(
      workerArgs(`ws://127.0.0.1:${await closedPort()}`, path, "--memory", String(mib + 1)),
    ).exit;
    expect(over.stderr).toContain(
      `baton worker: --memory ${mib + 1} offers more than this machine's ${mib} MiB of memory`,
    );
    expect(over.stderr).not.toContain("--cpus");
  });

  it("exits 2 for bad usage and 3 when nothing listens at the address", async () => {
    const { path } = await writeSecretFile(tempDir());
    const usage = await worker(["--connect", "ws://127.0.0.1:9", "--jobs", JOBS]).exit;
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/no run secret: pass --secret-file FILE .* or set BATON_SECRET/);
    // Port 0 is "any free port" to baton run --listen: no coordinator is there.
    // Each says what is wrong with it, which the generic words left to be guessed.
    for (const [connect, why] of [
      [
        "ws://127.0.0.1:0",
        "port 0 is baton run --listen's any free port, and names no coordinator: give the port the run printed",
      ],
      ["http://127.0.0.1:7000", "http://: a coordinator takes WebSocket connections, ws://"],
      ["127.0.0.1", "it names no port"],
    ]) {
      const { code, stderr } = await worker(workerArgs(connect!, path)).exit;
      expect(code).toBe(2);
      expect(stderr).toContain(
        `baton worker: --connect: "${connect}" is not a coordinator's address (${why}): give the HOST:PORT or ws://HOST:PORT it listens on, as in the baton worker command baton run printed`,
      );
      expect(stderr).not.toContain("port 0 for any free port");
    }
    // Everything missing is named at once, the secret too.
    const bare = await worker([]).exit;
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(
      "baton worker: give --connect, --jobs and --secret-file (or BATON_SECRET): the baton worker command that baton run prints has them all",
    );
    const positional = await worker(["deadbeef"]).exit;
    expect(positional.code).toBe(2);
    expect(positional.stderr).not.toContain("deadbeef");

    const address = `ws://127.0.0.1:${await closedPort()}`;
    const refused = await worker(workerArgs(address, path)).exit;
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(
      `baton worker: cannot connect to ${address}: connection refused`,
    );
  });

  it("with --retry-for, started before its coordinator listens, joins it once it does", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    const port = await closedPort();
    const address = `ws://127.0.0.1:${port}`;
    const waiting = worker(workerArgs(address, path, "--retry-for", "1m"));
    await stderrMatches(
      waiting.stderr,
      new RegExp(
        `^baton worker: cannot connect to ${address}: connection refused .*; trying again for up to 1m \\(--retry-for\\)$`,
        "m",
      ),
    );
    const doubled = job("double", 21);
    const coordinator = await startCoordinator([doubled], secret, false, address);
    await coordinator.finished;
    const { code, stderr } = await within(waiting.exit, 10_000, "the worker's exit");
    expect(code).toBe(0);
    expect(coordinator.record(doubled)).toMatchObject({ state: "completed", value: 42 });
    // It says it is trying once, not at every attempt, and when it got through.
    expect(stderr.match(/trying again/g)).toHaveLength(1);
    expect(stderr).toContain(`baton worker: joined run e2e at ${address}\n`);
  });

  it("with --retry-for, started before the run makes its --secret-file, waits for the file, then joins", async () => {
    const dir = tempDir();
    const path = join(dir, "cluster.secret");
    const port = await closedPort();
    const address = `ws://127.0.0.1:${port}`;
    const waiting = worker(workerArgs(address, path, "--retry-for", "1m"));
    await stderrMatches(waiting.stderr, /does not exist yet/);
    // The run makes the file whole (written aside, then renamed), and listens.
    const made = await writeSecretFile(tempDir());
    renameSync(made.path, path);
    const doubled = job("double", 21);
    const coordinator = await startCoordinator([doubled], made.secret, false, address);
    await coordinator.finished;
    const { code, stderr } = await within(waiting.exit, 10_000, "the worker's exit");
    expect(code).toBe(0);
    expect(coordinator.record(doubled)).toMatchObject({ state: "completed", value: 42 });
    expect(stderr).toContain(
      `baton worker: secret file ${path} does not exist yet: waiting for the run that makes it (baton run makes it as it starts) for up to 1m (--retry-for)\n`,
    );
    expect(stderr.match(/does not exist yet/g)).toHaveLength(1);
  });

  it("with --retry-for, gives up on a --secret-file that does not appear in time, naming the run that makes it", async () => {
    const path = join(tempDir(), "cluster.secret");
    const { code, stderr } = await worker(
      workerArgs(`ws://127.0.0.1:${await closedPort()}`, path, "--retry-for", "1s"),
    ).exit;
    expect(code).toBe(2);
    expect(stderr).toContain(
      `gave up: secret file ${path} did not appear within 1s (--retry-for); start the run that makes it (baton run --secret-file ${path}), or pass the path of the file the current run printed`,
    );
    expect(stderr.match(/does not exist yet/g)).toHaveLength(1);
  });

  it("with --retry-for, does not retry a refusal that connecting again cannot cure (4001)", async () => {
    const coordinator = await startCoordinator([job("double", 1)], nodeEntropy().bytes(32));
    const { path } = await writeSecretFile(tempDir());
    const started = Date.now();
    const { code, stderr } = await worker(
      workerArgs(coordinator.address, path, "--retry-for", "1m"),
    ).exit;
    expect(code).toBe(4);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(stderr).toMatch(/closed with code 4001: authentication failed/);
    expect(stderr).not.toContain("trying again");
  });

  it("with --retry-for, refused (4001) by the run started again with a new secret, says so", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    // Its host's crash, as the worker sees it: the connection goes while a job runs.
    const first = await startCoordinator([job("hang")], secret);
    const waiting = worker(workerArgs(first.address, path, "--retry-for", "1m"));
    await vi.waitFor(() => expect(first.running.size).toBe(1), { timeout: 20_000 });
    await first.close();
    await startCoordinator([job("double", 2)], nodeEntropy().bytes(32), false, first.address);
    const { code, stderr } = await within(waiting.exit, 10_000, "the worker's exit");
    expect(code).toBe(4);
    expect(stderr).toContain(
      `; this worker's secret was read from ${path}, with which it joined a run at this address before: a run started again has a new secret unless baton run is given --secret-file FILE, which keeps it\n`,
    );
  });

  it("on SIGTERM aborts the running job, which goes back to the coordinator, and exits 143", async () => {
    const { path, secret } = await writeSecretFile(tempDir());
    const hang = job("hang");
    const coordinator = await startCoordinator([hang], secret);
    const { child, exit } = worker(workerArgs(coordinator.address, path, "--name", NAME));
    await vi.waitFor(() => expect(coordinator.running.size).toBe(1), { timeout: 20_000 });
    const signalledAt = Date.now();
    process.kill(child.pid!, "SIGTERM");
    const { code, stderr } = await exit;
    expect(code).toBe(143);
    expect(Date.now() - signalledAt).toBeLessThan(3_000);
    expect(stderr).toContain("baton worker: SIGTERM: stopping");
    expect(stderr).not.toContain("still running");
    await vi.waitFor(() =>
      expect(coordinator.record(hang)).toMatchObject({ state: "ready", lostWorkers: [NAME] }),
    );
  });
});

describe("baton worker --handler-thread", () => {
  afterEach(cleanUp);

  it("exits 2 naming the problem when its job module does not load", async () => {
    const dir = tempDir();
    const { path } = await writeSecretFile(dir);
    const broken = join(dir, "broken.jobs.mjs");
    writeFileSync(broken, "export default { notAHandler: 42 };\n");
    const { code, stderr } = await worker([
      "--connect",
      "ws://127.0.0.1:9",
      "--secret-file",
      path,
      "--jobs",
      broken,
      "--handler-thread",
    ]).exit;
    expect(code).toBe(2);
    expect(stderr).toContain(
      'baton worker: job kind "notAHandler" must be a handler function, { run, version } or { ranks, version }, not number [JOB_MODULE]',
    );
  });
});

/**
 * Tests that spend most of their time waiting on a worker's own timers (its abort grace, made
 * short with --abort-grace, --retry-for windows, silence limits) or on a handler that blocks
 * for 6 s, and quick refusals of bad flags: side by side, each undoing what it started when it
 * ends. Test files run one at a time, and one at a time these left CI's second core idle for
 * most of a minute.
 */
describe.concurrent("baton worker, side by side", () => {
  it("with --retry-for, says so when the handler cut off with its coordinator does not return, and gives up at the end of the window", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, startCoordinator, worker, defer } = scoped(onTestFinished);
    const { path, secret } = await writeSecretFile(tempDir());
    const coordinator = await startCoordinator([job("forsaken")], secret);
    const proxy = await startTcpProxy({
      host: "127.0.0.1",
      port: Number(new URL(coordinator.address).port),
    });
    defer(proxy.close);
    const { exit } = worker(
      workerArgs(proxy.address, path, "--retry-for", "2s", "--abort-grace", "300ms"),
    );
    await vi.waitFor(() => expect(coordinator.running.size).toBe(1), { timeout: 20_000 });
    // The job frame is on its way when the lease is granted: let it arrive before the reset.
    await new Promise((r) => setTimeout(r, 300));
    proxy.reset();
    // Its handler's promise can never settle: Node used to end the waiting worker with 13.
    const { code, stderr } = await within(exit, 30_000, "the worker's exit");
    expect(code).toBe(3);
    expect(stderr).toMatch(/closed with code 1006 .*; trying again for up to 2s \(--retry-for\)\n/);
    // Twice the abort grace, past the one after which --handler-thread ends a handler.
    expect(stderr).toContain(
      "baton worker: the handler of the job this worker was running has not returned 600 ms after it was aborted (it does not stop on ctx.signal); a worker runs one job at a time, so it connects again once that handler returns, for up to 2s (--retry-for) since it lost the coordinator (with --handler-thread, a handler that does not stop is ended 300 ms after it is aborted: --abort-grace)\n",
    );
    expect(stderr).toContain(
      "baton worker: gave up: the handler of the job this worker was running did not return within 2s (--retry-for) of losing the coordinator\n",
    );
    expect(stderr).not.toContain("joined run");
  });

  it("exits 4 naming the name (4010) when another worker process connected under its --name holds it, saying to give each its own", async ({
    expect,
    onTestFinished,
  }) => {
    const { worker, coordinator, path, held, first } = await nameHeld(scoped(onTestFinished));
    const { code, stderr } = await within(
      worker(workerArgs(coordinator.address, path, "--name", "gpu-1")).exit,
      30_000,
      "the second worker's exit",
    );
    expect(code).toBe(4);
    expect(stderr).toBe(
      `baton worker: connection to the coordinator at ${coordinator.address} closed with code 4010: name in use: another worker process named "gpu-1" is connected to this run; give each worker its own --name; if the worker that had it is gone unseen (its host lost), the coordinator lets the name go within 20.0 s by default: start this one again then, or give it --retry-for DURATION to have it wait for that\n`,
    );
    // The first keeps its connection and its job.
    expect(first.child.exitCode).toBeNull();
    expect(coordinator.record(held)).toMatchObject({ state: "running", attempts: 1 });
    expect(coordinator.record(held).lostWorkers).toEqual([]);
  });

  it("with --retry-for, keeps trying while another worker process holds its --name (4010), saying so once, and joins once the name is let go", async ({
    expect,
    onTestFinished,
  }) => {
    const { worker, coordinator, path, held, first } = await nameHeld(scoped(onTestFinished));
    const second = worker(
      workerArgs(coordinator.address, path, ...["--name", "gpu-1", "--retry-for", "1m"], ...INFO),
    );
    // Refused more than once while the first holds the name; said once.
    const tries = () => second.stderr().match(/"msg":"coordinator lost; trying again"/g) ?? [];
    await vi.waitFor(() => expect(tries().length).toBeGreaterThan(1), { timeout: 30_000 });
    // Its connection closes with it; one whose host is lost unseen goes at the ping limit.
    process.kill(first.child.pid!, "SIGKILL");
    await vi.waitFor(
      () => expect(coordinator.record(held)).toMatchObject({ state: "running", attempts: 2 }),
      { timeout: 30_000 },
    );
    process.kill(second.child.pid!, "SIGTERM");
    const { code, stderr } = await within(second.exit, 30_000, "the second worker's exit");
    expect(code).toBe(143);
    expect(stderr.split("\n").filter((line) => line.startsWith("baton worker:"))).toEqual([
      `baton worker: ${nameHeldBy(coordinator.address)}; trying again for up to 1m (--retry-for)`,
      `baton worker: joined run e2e at ${coordinator.address}`,
      expect.stringMatching(/^baton worker: SIGTERM: stopping/),
    ]);
  });

  it("with --retry-for, exits 4 when the name was not let go within it", async ({
    expect,
    onTestFinished,
  }) => {
    const { worker, coordinator, path } = await nameHeld(scoped(onTestFinished));
    const { code, stderr } = await within(
      worker(workerArgs(coordinator.address, path, "--name", "gpu-1", "--retry-for", "2s")).exit,
      30_000,
      "the second worker's exit",
    );
    expect(code).toBe(4);
    expect(stderr).toBe(
      `baton worker: ${nameHeldBy(coordinator.address)}; trying again for up to 2s (--retry-for)\nbaton worker: ${nameHeldBy(coordinator.address)}; gave up: the name was not let go within 2s (--retry-for)\n`,
    );
  });

  it("connects again at once after its connection went half-open: the coordinator replaces the old connection (4008) and the job runs again there", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, startCoordinator, worker, defer } = scoped(onTestFinished);
    const { path, secret } = await writeSecretFile(tempDir());
    const held = job("hang");
    // The default ping limit (20 s): a reconnect refused until it let the old connection go
    // would exit 4, and one taken beside it would leave the job with the old connection.
    const coordinator = await startCoordinator([held], secret);
    const proxy = await startTcpProxy({
      host: "127.0.0.1",
      port: Number(new URL(coordinator.address).port),
    });
    defer(proxy.close);
    const { child, exit } = worker(
      workerArgs(proxy.address, path, "--name", "gpu-1", "--retry-for", "1m"),
    );
    await vi.waitFor(() => expect(coordinator.record(held).state).toBe("running"), {
      timeout: 20_000,
    });
    proxy.vanishWorkers();
    await vi.waitFor(
      () => expect(coordinator.record(held)).toMatchObject({ state: "running", attempts: 2 }),
      { timeout: 30_000 },
    );
    expect(coordinator.record(held).lostWhy).toEqual([
      { code: 4008, reason: "replaced by a newer connection of the same worker" },
    ]);
    expect(child.exitCode).toBeNull();
    process.kill(child.pid!, "SIGTERM");
    const { code, stderr } = await within(exit, 30_000, "the worker's exit");
    expect(code).toBe(143);
    expect(stderr).toMatch(/closed with code 1006 .*; trying again for up to 1m \(--retry-for\)\n/);
    // "again" only when the worker had read its first welcome before the proxy cut it: the
    // coordinator counts the job running when it sends it, which may be still in the proxy.
    expect(stderr).toMatch(
      new RegExp(
        `baton worker: joined run e2e at ${proxy.address.replaceAll(".", "\\.")}( again)?\n`,
      ),
    );
  });

  it("says its own event loop was blocked when a synchronous handler cost it its connection", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, startCoordinator, worker } = scoped(onTestFinished);
    const { path, secret } = await writeSecretFile(tempDir());
    const coordinator = await startCoordinator([job("block", 6_000)], secret, true);
    const { code, stderr } = await worker(workerArgs(coordinator.address, path)).exit;
    expect(code).toBe(3);
    expect(stderr).toMatch(
      /^baton worker: this worker's event loop was blocked for up to \d+\.\d s at a time, which may be why: a blocked worker cannot answer the coordinator's pings/m,
    );
    expect(stderr).toContain("await new Promise(setImmediate)");
  });

  it("with --handler-thread, keeps its connection through a synchronous handler that would have cost it, and runs every job", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, startCoordinator, worker } = scoped(onTestFinished);
    const { path, secret } = await writeSecretFile(tempDir());
    const blocked = job("block", 6_000);
    const needed = job("needDouble", 21);
    const env = job("secretInEnv");
    const coordinator = await startCoordinator([blocked, needed, env], secret, true);
    const { code, stderr } = await worker(
      workerArgs(coordinator.address, path, "--name", NAME, "--handler-thread"),
    ).exit;
    expect(stderr).not.toContain("event loop was blocked");
    expect(code).toBe(0);
    expect(coordinator.record(blocked)).toMatchObject({
      state: "completed",
      value: 6_000,
      lostWorkers: [],
    });
    expect(coordinator.record(needed)).toMatchObject({ state: "completed", value: 42 });
    expect(coordinator.record(env)).toMatchObject({ state: "completed", value: "absent" });
  });

  it("exits after its abort grace when a handler ignores its AbortSignal", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, startCoordinator, worker } = scoped(onTestFinished);
    const { path, secret } = await writeSecretFile(tempDir());
    const coordinator = await startCoordinator([job("stubborn")], secret);
    const { child, exit } = worker(workerArgs(coordinator.address, path, "--abort-grace", "500ms"));
    await vi.waitFor(() => expect(coordinator.running.size).toBe(1), { timeout: 20_000 });
    const signalledAt = Date.now();
    process.kill(child.pid!, "SIGTERM");
    const { code, stderr } = await exit;
    expect(code).toBe(143);
    expect(Date.now() - signalledAt).toBeLessThan(8_000);
    // The pause before the exit is explained.
    expect(stderr).toContain(
      "baton worker: still running 500 ms after SIGTERM (--abort-grace), most likely a job handler that does not stop on ctx.signal: stopping without it\n",
    );
  });

  it("with --handler-thread, on SIGTERM aborts the running job and exits 143, within its abort grace when it ignores that", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, startCoordinator, worker } = scoped(onTestFinished);
    const { path, secret } = await writeSecretFile(tempDir());
    for (const kind of ["hang", "stubborn"]) {
      const coordinator = await startCoordinator([job(kind)], secret);
      const { child, exit } = worker(
        workerArgs(
          coordinator.address,
          path,
          "--name",
          NAME,
          "--handler-thread",
          "--abort-grace",
          "500ms",
        ),
      );
      await vi.waitFor(() => expect(coordinator.running.size).toBe(1), { timeout: 20_000 });
      const signalledAt = Date.now();
      process.kill(child.pid!, "SIGTERM");
      expect((await exit).code).toBe(143);
      expect(Date.now() - signalledAt).toBeLessThan(kind === "hang" ? 3_000 : 8_000);
      await vi.waitFor(() =>
        expect(coordinator.record(job(kind))).toMatchObject({
          state: "ready",
          lostWorkers: [NAME],
        }),
      );
    }
  });

  it("with --retry-for, gives up and exits 3 once the coordinator stayed unreachable that long", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, worker } = scoped(onTestFinished);
    const { path } = await writeSecretFile(tempDir());
    const address = `ws://127.0.0.1:${await closedPort()}`;
    const started = Date.now();
    const { code, stderr } = await worker(workerArgs(address, path, "--retry-for", "2s")).exit;
    expect(code).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(stderr).toMatch(
      new RegExp(
        `^baton worker: cannot connect to ${address}: connection refused .*; gave up: the coordinator was not reachable again within 2s \\(--retry-for\\)$`,
        "m",
      ),
    );
    const bad = await worker(workerArgs(address, path, "--retry-for", "10")).exit;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      '--retry-for must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "10"',
    );
  });

  it("with --retry-for, on SIGTERM between attempts exits 143 without speaking of a job it does not hold", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, worker } = scoped(onTestFinished);
    const { path } = await writeSecretFile(tempDir());
    const address = `ws://127.0.0.1:${await closedPort()}`;
    const waiting = worker(workerArgs(address, path, "--retry-for", "1m"));
    await stderrMatches(waiting.stderr, /trying again for up to 1m/);
    process.kill(waiting.child.pid!, "SIGTERM");
    const { code, stderr } = await within(waiting.exit, 10_000, "the worker's exit");
    expect(code).toBe(143);
    expect(stderr).toContain("baton worker: SIGTERM: stopping (SIGTERM again to stop at once)\n");
    expect(stderr).not.toContain("running job");
  });

  it("takes its limits from --welcome-timeout-ms and --silence-limit-ms", async ({
    expect,
    onTestFinished,
  }) => {
    const { tempDir, worker, defer } = scoped(onTestFinished);
    const { path, secret } = await writeSecretFile(tempDir());
    const mute = await silentCoordinator({ secret, mute: true });
    defer(() => mute.close());
    // A coordinator whose process froze: its host accepts the connection, nothing answers.
    const accepted: Socket[] = [];
    const frozen = createServer((socket) => accepted.push(socket));
    await new Promise<void>((resolve) => frozen.listen(0, "127.0.0.1", resolve));
    defer(() => {
      for (const socket of accepted) socket.destroy();
      return new Promise<void>((resolve) => frozen.close(() => resolve()));
    });
    const frozenAt = `ws://127.0.0.1:${(frozen.address() as { port: number }).port}`;
    const silent = await silentCoordinator({ secret, heartbeatMs: 50 });
    defer(() => silent.close());
    // Each against its own coordinator, at once: the wait in each is its own limit.
    const [unwelcomed, unanswered, patient, bad] = await Promise.all([
      worker(workerArgs(mute.address, path, "--welcome-timeout-ms", "300")).exit,
      worker(workerArgs(frozenAt, path, "--welcome-timeout-ms", "300")).exit,
      worker(workerArgs(silent.address, path, "--silence-limit-ms", "700")).exit,
      worker(workerArgs(silent.address, path, "--silence-limit-ms", "20s")).exit,
    ]);
    expect(unwelcomed.code).toBe(3);
    expect(unwelcomed.stderr).toContain(
      `baton worker: gave up on the coordinator at ${mute.address} (code 4009): no welcome from the coordinator within 300 ms of connecting`,
    );
    expect(unanswered.code).toBe(3);
    expect(unanswered.stderr).toContain(
      `baton worker: cannot connect to ${frozenAt}: no answer within 300 ms`,
    );
    expect(patient.code).toBe(3);
    expect(patient.stderr).toContain("no frame or ping from the coordinator for 700 ms");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      'baton worker: --silence-limit-ms must be a whole number of milliseconds ≥ 1, not "20s" [CONFIG]',
    );
  });

  it.for<[string[], string]>([
    // A negative number gets the flag's own message, not parseArgs' about a leading dash.
    [["--cpus", "-1"], '--cpus must be a number of 0 or more, such as 4 or 0.5, not "-1"'],
    [
      ["--memory", "0x400"],
      '--memory must be a number of 0 or more, such as 4 or 0.5, not "0x400"',
    ],
    [["--gpus", "1e1"], '--gpus must be a number of 0 or more, such as 4 or 0.5, not "1e1"'],
    // As sbatch --mem takes it: the MiB are said, as --slurm-resources says them.
    [["--memory", "16G"], "--memory is in MiB, without a unit: for 16G give --memory 16384"],
    // baton cannot count a machine's gpus: a typo's extra digits were taken unsaid.
    [
      ["--gpus", "1000000000000"],
      "--gpus 1000000000000 is more than any machine offers: give at most 1024, the gpus of this worker's machine (nvidia-smi -L lists them) [CONFIG]",
    ],
    // Read as Infinity, which the hello frame cannot carry: the coordinator refused the worker.
    [
      ["--memory", "9".repeat(400)],
      `--memory ${"9".repeat(400)} is more than any machine offers: give at most 9007199254740991`,
    ],
    [
      ["--silence-limit-ms", "-5"],
      '--silence-limit-ms must be a whole number of milliseconds ≥ 1, not "-5"',
    ],
    [["--secret-file", ""], "--secret-file is empty: give it a value, or leave it out"],
    [
      ["--retry-for", "-5s"],
      "--retry-for must be a duration: a whole number above 0 and its unit, such as 90s",
    ],
  ])("refuses %j with exit 2: %s", async ([flags, says], { expect, onTestFinished }) => {
    const { worker } = scoped(onTestFinished);
    const { code, stderr } = await worker([
      "--connect",
      "ws://127.0.0.1:9",
      "--jobs",
      JOBS,
      ...flags,
    ]).exit;
    expect(code).toBe(2);
    expect(stderr).toContain(`baton worker: ${says}`);
  });
});

describe("the run secret", () => {
  afterEach(cleanUp);

  it("is written as 64 hex digits to a new 0600 file and read back as the same bytes", async () => {
    const dir = tempDir();
    const { path, secret } = await writeSecretFile(dir);
    expect(path.startsWith(dir)).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    expect(secret).toHaveLength(32);
    await expect(readSecret({ secretFile: path })).resolves.toEqual(secret);
    await expect(readSecret({ env: { BATON_SECRET: hex(secret) } })).resolves.toEqual(secret);
    expect((await writeSecretFile(dir)).path).not.toBe(path);
  });

  it("kept in a file of the operator's is made 0600 when missing and then read as it is", async () => {
    const path = join(tempDir(), "kept", "cluster.secret");
    const made = await keptSecret(path);
    expect(made.created).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const again = await keptSecret(path);
    expect(again).toEqual({ secret: made.secret, created: false });
    chmodSync(path, 0o644);
    await expect(keptSecret(path)).rejects.toThrow(
      `secret file ${path} is readable by others (mode 0644); chmod 600 ${path}`,
    );
  });

  it("kept in a file beside temp files of it that runs killed while making it left: those of gone writers untouched for a minute are removed", async () => {
    const dir = tempDir();
    const path = join(dir, "cluster.secret");
    const made = await keptSecret(path);
    const dead = await deadPid();
    const writer = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      stdio: "ignore",
    });
    try {
      await new Promise((resolve) => writer.once("spawn", resolve));
      const old = new Date(Date.now() - 120_000);
      // Killed right after its link (a second name of the secret), before it (a file of its
      // own), one that a writer still running here makes, and one being written right now.
      const linked = `.cluster.secret.${dead}.0123456789ab.tmp`;
      const unlinked = `.cluster.secret.${dead}.fedcba987654.tmp`;
      const running = `.cluster.secret.${writer.pid}.0123456789ab.tmp`;
      const fresh = `.cluster.secret.${dead}.00000000aaaa.tmp`;
      linkSync(path, join(dir, linked));
      for (const name of [unlinked, running, fresh]) {
        writeFileSync(join(dir, name), "0123", { mode: 0o600 });
      }
      for (const name of [unlinked, running]) utimesSync(join(dir, name), old, old);
      utimesSync(path, old, old);
      const info = vi.fn();
      expect(await keptSecret(path, { logger: { info, warn: vi.fn() } })).toEqual({
        secret: made.secret,
        created: false,
      });
      expect(readdirSync(dir).sort()).toEqual(["cluster.secret", fresh, running].sort());
      expect(info).toHaveBeenCalledWith(
        { dir, files: [linked, unlinked].sort() },
        expect.stringContaining("removed temp files that writers killed while writing left"),
      );
    } finally {
      writer.kill("SIGKILL");
    }
  });

  it("kept in a file whose folder's sweep fails is read all the same, the failure a warning unless there is nothing of this user's to sweep", async () => {
    const dir = tempDir();
    const path = join(dir, "cluster.secret");
    const made = await keptSecret(path);
    const failing = (code: string, self: boolean): Files => ({
      ...nodeFiles(),
      async list(folder) {
        throw Object.assign(new Error(`${code}: it failed, scandir '${folder}'`), {
          code,
          syscall: "scandir",
          path: folder,
        });
      },
      owner: async () => ({ uid: self ? 0 : 4242, self }),
    });
    const warned = async (code: string, self: boolean) => {
      const logger = { info: vi.fn(), warn: vi.fn() };
      const kept = await keptSecret(path, { files: failing(code, self), logger });
      expect(kept).toEqual({ secret: made.secret, created: false });
      return logger.warn.mock.calls;
    };
    // Swallowed, whatever it was, until the thirty-second session.
    expect(await warned("EIO", true)).toEqual([
      [
        { secretFile: path, code: "EIO" },
        `could not remove the temp files that runs killed while making the secret file ${path} left beside it (${dir}: it failed (EIO)); any there stay, and the secret is read as it is`,
      ],
    ]);
    const denied = await warned("EACCES", true);
    expect(denied).toHaveLength(1);
    expect(denied[0]![1]).toContain(`left beside it (${dir}: this user (`);
    // Another user's folder this user may not list (an operator's mode 711), or none.
    expect(await warned("EACCES", false)).toEqual([]);
    expect(await warned("ENOTDIR", true)).toEqual([]);
  });

  it("kept in a file several callers make at once is the same secret for all, one of them making it", async () => {
    const path = join(tempDir(), "fresh.secret");
    const kept = await Promise.all(Array.from({ length: 8 }, () => keptSecret(path)));
    expect(kept.filter((one) => one.created)).toHaveLength(1);
    for (const one of kept) expect(one.secret).toEqual(kept[0]!.secret);
    expect(readdirSync(dirname(path))).toEqual(["fresh.secret"]);
  });

  it("kept in a file found empty is refused at once, as a maker never shows it so", async () => {
    const path = join(tempDir(), "touched.secret");
    writeFileSync(path, "", { mode: 0o600 });
    const startedAt = Date.now();
    await expect(keptSecret(path)).rejects.toThrow(`secret file ${path} is empty`);
    // It waited a second for a maker's write until the thirty-first session.
    expect(Date.now() - startedAt).toBeLessThan(1_000);
  });

  it("is refused when it is not hex or too short, without quoting it", async () => {
    const path = join(tempDir(), "bad.secret");
    writeFileSync(path, "not-a-secret-but-private\n", { mode: 0o600 });
    await expect(readSecret({ secretFile: path })).rejects.toMatchObject({
      message: `secret file ${path} does not hold a hex secret (an even number of 0-9a-f digits)`,
    });
    // An editor's line end is no secret, nor part of one; a file with nothing else says so.
    writeFileSync(path, "\r\n", { mode: 0o600 });
    await expect(readSecret({ secretFile: path })).rejects.toThrow(
      `secret file ${path} is empty: it must hold the run's secret, as hex; copy the coordinator's there`,
    );
    await expect(keptSecret(path)).rejects.toThrow("or, for baton run --secret-file, remove it");
    await expect(readSecret({ env: { BATON_SECRET: "abcd" } })).rejects.toThrow(
      /^BATON_SECRET holds a secret of 2 bytes; a run secret has at least 16$/,
    );
    await expect(readSecret({ secretFile: `${path}.missing` })).rejects.toThrow(
      `secret file ${path}.missing does not exist; pass the path of the file the coordinator wrote. A run makes it as it starts: start the run first, or give baton worker --retry-for DURATION to have the worker wait for it. A run removes the secret file it made up when it ends (one given with baton run --secret-file is kept)`,
    );
    // A secret pasted where its file's path goes is not repeated.
    const pasted = hex(nodeEntropy().bytes(32));
    const refused = await readSecret({ secretFile: pasted }).catch((error: Error) => error);
    expect((refused as Error).message).toMatch(
      /^secret file does not exist; .*looks like a secret/,
    );
    expect((refused as Error).message).not.toContain(pasted.slice(0, 16));
  });

  it("is refused when its path is a directory, private or not, or a device, without advice to chmod it", async () => {
    const open = tempDir();
    const closed = join(open, "private");
    mkdirSync(closed, { mode: 0o700 });
    chmodSync(open, 0o755);
    for (const dir of [open, closed]) {
      await expect(readSecret({ secretFile: dir })).rejects.toThrow(
        new ConfigError(
          `secret file ${dir} is a directory; pass the path of the file that holds the secret`,
        ),
      );
      await expect(keptSecret(dir)).rejects.toThrow(`secret file ${dir} is a directory`);
    }
    await expect(readSecret({ secretFile: "/dev/null" })).rejects.toThrow(
      "secret file /dev/null is a device; pass the path of the file that holds the secret",
    );
  });
});
