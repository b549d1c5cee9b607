/**
 * What `localPool` gives the workers it starts, without starting any: the `command` either
 * records the worker and names a program that does not exist, or is a prefix of one, so each
 * start fails at once (`WORKER_SPAWN`) and no process runs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, hostname, tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { PoolError } from "../../src/errors.ts";
import { type LocalWorkersOptions, localPool } from "../../src/runtime/localPool.ts";
import type { WorkerCommand } from "../../src/runtime/workerCommandLine.ts";
import { workerCountLimit } from "../../src/runtime/workerCountLimit.ts";
import { poolStart } from "../fixtures/poolStart.ts";

const NO_SUCH_PROGRAM = "/nonexistent/baton-test-wrapper";
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Starts the pool listening on `address`; resolves with its failure and the warnings logged. */
async function start(
  options: Omit<LocalWorkersOptions, "jobsModule">,
  address = "ws://0.0.0.0:7400",
): Promise<{ code: string; warnings: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "baton-local-unit-"));
  dirs.push(dir);
  const warnings: string[] = [];
  const running = localPool({ jobsModule: "jobs.ts", maxRestarts: 0, ...options }).start(
    poolStart(dir, {
      address,
      logger: pino(
        { level: "warn" },
        { write: (line: string) => warnings.push(JSON.parse(line).msg) },
      ),
    }),
  );
  const failure = await running.failed;
  await running.stop();
  return { code: (failure as PoolError).code, warnings };
}

/** The message of what `make` throws, or "" when it throws nothing. */
function refusal(make: () => unknown): string {
  try {
    make();
    return "";
  } catch (error) {
    return (error as Error).message;
  }
}

/** A `command` function that records each worker and runs a program that does not exist. */
function recording(seen: WorkerCommand[]) {
  return (worker: WorkerCommand) => {
    seen.push(worker);
    return [NO_SUCH_PROGRAM, ...worker.args];
  };
}

describe("localPool's connect", () => {
  it("is each worker's --connect, in args and argv, in place of the wildcard it listens on", async () => {
    const seen: WorkerCommand[] = [];
    const { code } = await start({
      count: 1,
      connect: "build1.example.com:7400",
      command: recording(seen),
    });
    expect(code).toBe("WORKER_SPAWN");
    const [worker] = seen;
    expect(worker!.args.slice(0, 2)).toEqual(["--connect", "build1.example.com:7400"]);
    expect(worker!.argv).toContain("build1.example.com:7400");
    expect(worker!.argv).not.toContain("ws://0.0.0.0:7400");
  });

  it("without it, names this machine in place of the wildcard for a function's workers, which may run elsewhere", async () => {
    const seen: WorkerCommand[] = [];
    await start({ count: 1, command: recording(seen) });
    expect(seen[0]!.args.slice(0, 2)).toEqual(["--connect", `ws://${hostname()}:7400`]);
    const named: WorkerCommand[] = [];
    await start({ count: 1, command: recording(named) }, "ws://10.0.0.5:7400");
    expect(named[0]!.args.slice(0, 2)).toEqual(["--connect", "ws://10.0.0.5:7400"]);
  });
});

describe("localPool's count when a command starts the workers", () => {
  const cores = availableParallelism();

  it("warns of more workers than cores with a prefix, which runs them here", async () => {
    const { warnings } = await start({ count: cores + 1, command: [NO_SUCH_PROGRAM] });
    expect(warnings).toContain(
      `${cores + 1} worker processes on this machine's ${cores} cores: handlers that compute share the cores, so workers beyond them help only jobs that wait (on I/O, a service, a lock)`,
    );
  });

  it("does not with a function, which may run them elsewhere", async () => {
    const seen: WorkerCommand[] = [];
    const { warnings } = await start({ count: cores + 1, command: recording(seen) });
    expect(seen.length).toBeGreaterThan(0);
    expect(warnings.filter((w) => w.includes("cores"))).toEqual([]);
  });

  it("bounds a function's workers by the connections, not this machine's processes", () => {
    const processes = workerCountLimit("processes").most;
    const connections = workerCountLimit("connected").most;
    const command = recording([]);
    expect(() =>
      localPool({ jobsModule: "jobs.ts", count: processes + 1, command: ["nice"] }),
    ).toThrow("is more worker processes than this machine can run");
    // Taken, or refused for the connections when this machine allows fewer of them.
    expect(
      refusal(() => localPool({ jobsModule: "jobs.ts", count: processes + 1, command })),
    ).not.toContain("worker processes");
    expect(() => localPool({ jobsModule: "jobs.ts", count: connections + 1, command })).toThrow(
      `localPool: count ${connections + 1} is more workers than this coordinator can hold connections to: at most ${connections}`,
    );
  });
});

describe("localPool's resources with a command", () => {
  it("lets a function's workers, which may run elsewhere, offer their own machine's unless told", async () => {
    const seen: WorkerCommand[] = [];
    const pool = localPool({ jobsModule: "jobs.ts", count: 1, command: recording(seen) });
    expect(pool.offers).toEqual([]);
    await start({ count: 1, command: recording(seen) });
    expect(seen[0]!.args).not.toContain("--cpus");
    const told: WorkerCommand[] = [];
    await start({ count: 1, command: recording(told), resources: { cpus: 2 } });
    expect(told[0]!.args).toEqual(expect.arrayContaining(["--cpus", "2"]));
    // A prefix runs them here: they offer this machine's, and the graph is checked against it.
    const prefixed = localPool({ jobsModule: "jobs.ts", count: 1, command: ["nice"] });
    expect(prefixed.offers).toEqual([expect.objectContaining({ cpus: expect.any(Number) })]);
  });
});
