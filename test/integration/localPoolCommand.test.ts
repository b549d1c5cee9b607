/**
 * Workers started your own way: `localPool`'s `command` starts each `baton worker` through a
 * wrapper, here a shell script that records its pid and arguments and then execs the worker
 * (as `nice`, `taskset` or `systemd-run --scope` do). A real run over 127.0.0.1 completes its
 * jobs on them, and every worker the wrapper started has ended by the time the run resolves.
 * afterEach SIGKILLs, by pid, any recorded worker still running, even when a test failed.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import {
  createEngine,
  job,
  localPool,
  type WorkerCommand,
  type WorkerCommandOption,
} from "../../src/index.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import jobs from "../fixtures/plain.jobs.ts";

const JOBS_MODULE = fileURLToPath(new URL("../fixtures/plain.jobs.ts", import.meta.url));
const WRAPPER = `#!/bin/sh
record="$1"; shift
echo "$$ $*" >> "$record"
exec "$@"
`;

const procs = nodeProcs();
const dirs: string[] = [];
const records: string[] = [];

/** Pid and command line of each process the wrapper started, as recorded in `record`. */
function started(record: string): { pid: number; line: string }[] {
  let text = "";
  try {
    text = readFileSync(record, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((entry) => {
      const [pid, ...line] = entry.split(" ");
      return { pid: Number(pid), line: line.join(" ") };
    });
}

/** Running, and still this process's child (not a zombie, not a pid reused by another). */
function alive(pid: number): boolean {
  const proc = procs.inspect(pid);
  return (
    proc !== undefined &&
    proc.ppid === process.pid &&
    proc.state !== "zombie" &&
    proc.state !== "dead"
  );
}

afterEach(() => {
  for (const record of records.splice(0)) {
    for (const { pid } of started(record)) if (alive(pid)) procs.signal(pid, "SIGKILL");
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs `double` of 1..4 and `secretInEnv` on `count` workers started through `command`. */
async function runThrough(
  command: (wrap: string[]) => WorkerCommandOption,
  secretIn?: "file" | "env",
) {
  const dir = mkdtempSync(join(tmpdir(), "baton-wrapped-"));
  dirs.push(dir);
  const script = join(dir, "wrap.sh");
  writeFileSync(script, WRAPPER);
  const record = join(dir, "started");
  records.push(record);
  const store = join(dir, "store");
  const engine = createEngine({
    jobs,
    workers: localPool({
      jobsModule: JOBS_MODULE,
      count: 2,
      resources: { cpus: 1 },
      command: command(["/bin/sh", script, record]),
      secretIn,
    }),
    store,
  });
  const result = await engine.run([
    ...[1, 2, 3, 4].map((n) => job("double", n)),
    job("secretInEnv", null),
  ]);
  return { result, workers: started(record), logs: join(store, "logs") };
}

describe("localPool with workers started through a command of the user's", () => {
  it("runs a graph on workers started through a prefix, which the pool stops by pid", async () => {
    const { result, workers, logs } = await runThrough((wrap) => wrap);

    expect(result.ok).toBe(true);
    expect([1, 2, 3, 4].map((n) => result.get(job("double", n))?.value)).toEqual([2, 4, 6, 8]);
    expect(result.get(job("secretInEnv", null))?.value).toBe("absent");
    // Both workers went through the wrapper, with the secret's file and never the secret.
    expect(workers).toHaveLength(2);
    for (const { line } of workers) {
      expect(line).toMatch(
        /bin\/baton\.js worker --connect ws:\/\/127\.0\.0\.1:\d+ --secret-file \S+ --jobs /,
      );
      expect(line).toMatch(/ --name local-\d --cpus 1$/);
      expect(line).not.toMatch(/[0-9a-f]{32}/);
    }
    const names = workers.map(({ line }) => /--name (\S+)/.exec(line)?.[1]);
    expect(names.sort()).toEqual(["local-1", "local-2"]);
    for (const { pid } of workers) expect(alive(pid)).toBe(false);
    // Each has its log in the run's folder, where the pool names what it started.
    const [folder] = readdirSync(logs);
    const log = readFileSync(join(logs, folder!, "worker-1.log"), "utf8");
    expect(log).toContain("starting local-1");
  });

  it('runs a graph on workers a function starts, given the secret in BATON_SECRET with secretIn: "env"', async () => {
    const seen: WorkerCommand[] = [];
    const { result, workers } = await runThrough(
      (wrap) => (worker) => {
        seen.push(worker);
        return [...wrap, "/usr/bin/env", "BATON_WRAPPED=1", ...worker.argv];
      },
      "env",
    );

    expect(result.ok).toBe(true);
    expect(result.get(job("double", 4))?.value).toBe(8);
    // The worker takes the secret out of its environment before any handler runs.
    expect(result.get(job("secretInEnv", null))?.value).toBe("absent");
    expect(seen.map((w) => w.name).sort()).toEqual(["local-1", "local-2"]);
    for (const worker of seen) {
      expect(worker.secretFile).toBeUndefined();
      expect(worker.args).not.toContain("--secret-file");
      expect(worker.argv.slice(2)).toEqual(["worker", ...worker.args]);
    }
    expect(workers).toHaveLength(2);
    for (const { pid, line } of workers) {
      expect(line).toMatch(/^\/usr\/bin\/env BATON_WRAPPED=1 \S+ \S+bin\/baton\.js worker /);
      expect(alive(pid)).toBe(false);
    }
  });
});
