import { spawnSync } from "node:child_process";
import { copyFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { programName } from "../../src/machines/programName.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcHandle, ProcInfo, SpawnOptions } from "../../src/runtime/ports.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const procs = nodeProcs();

/** Children this test file started and has not seen exit, with whether each leads a group. */
const running = new Map<ProcHandle, boolean>();
/** Processes started by our children, with the argv that identifies them. */
const descendants: { pid: number; argv: string[] }[] = [];

function start(options: SpawnOptions): ProcHandle {
  const handle = procs.spawn(options);
  running.set(handle, options.newGroup ?? false);
  void handle.exited.then(() => running.delete(handle));
  return handle;
}

/** SIGKILLs a pid, or a process group given as minus its pgid. */
function killQuietly(target: number): void {
  try {
    process.kill(target, "SIGKILL");
  } catch {
    // Already gone.
  }
}

afterEach(async () => {
  for (const { pid, argv } of descendants.splice(0)) {
    // Only a process that still runs the same program: its pid may have been reused.
    if (JSON.stringify(procs.inspect(pid)?.argv) === JSON.stringify(argv)) killQuietly(pid);
  }
  const handles = [...running.keys()];
  for (const [handle, leadsGroup] of running) {
    if (leadsGroup) killQuietly(-handle.pid);
    killQuietly(handle.pid);
  }
  await Promise.all(handles.map((handle) => handle.exited));
});

/** Polls until `probe` returns a value, failing after `ms`. */
async function until<T>(probe: () => T | undefined, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function inState(pid: number, state: ProcInfo["state"]): ProcInfo | undefined {
  const info = procs.inspect(pid);
  return info?.state === state ? info : undefined;
}

function childOf(ppid: number): ProcInfo | undefined {
  return procs.list().find((info) => info.ppid === ppid);
}

describe("nodeProcs", () => {
  it("knows its own pid", () => {
    expect(procs.selfPid).toBe(process.pid);
  });

  it("inspects a sleeping child: argv, parent, inherited process group and the kernel's name for it", async () => {
    const child = start({ argv: ["sleep", "30"] });
    const info = await until(() => inState(child.pid, "sleeping"), "sleep to sleep");
    expect(info).toEqual({
      pid: child.pid,
      ppid: process.pid,
      pgid: procs.inspect(process.pid)!.pgid,
      state: "sleeping",
      name: "sleep",
      argv: ["sleep", "30"],
      startedAt: expect.any(Number),
    });
  });

  it("knows when a process started, to within the second Linux gives the boot time in", async () => {
    const before = Date.now();
    const child = start({ argv: ["sleep", "30"] });
    const after = Date.now();
    const { startedAt } = await until(() => procs.inspect(child.pid), "sleep to start");
    expect(startedAt).toBeGreaterThan(before - 1_100);
    expect(startedAt).toBeLessThan(after + 1_100);
    expect(procs.inspect(process.pid)!.startedAt).toBeLessThanOrEqual(startedAt!);
  });

  it("keeps empty arguments in argv", async () => {
    const shell = start({ argv: ["sh", "-c", 'sleep 30; echo "$0"', ""], newGroup: true });
    await until(() => childOf(shell.pid), "sleep to start");
    expect(procs.inspect(shell.pid)?.argv).toEqual(["sh", "-c", 'sleep 30; echo "$0"', ""]);
  });

  it("reports a busy process as running", async () => {
    const child = start({ argv: ["sh", "-c", "while :; do :; done"] });
    await until(() => inState(child.pid, "running"), "the loop to run");
  });

  it("reports a stopped process as stopped", async () => {
    const child = start({ argv: ["sleep", "30"] });
    process.kill(child.pid, "SIGSTOP");
    await until(() => inState(child.pid, "stopped"), "sleep to stop");
  });

  it("reports an unreaped child as a zombie, with an empty argv and the kernel's name for its program", async () => {
    const parent = start({ argv: ["sh", "-c", "sleep 0.1 & exec sleep 30"] });
    const zombie = await until(() => {
      const child = childOf(parent.pid);
      return child?.state === "zombie" ? child : undefined;
    }, "the background sleep to exit");
    expect(zombie.argv).toEqual([]);
    expect(zombie.name).toBe("sleep");
    expect(programName(zombie)).toBe("sleep, exited");
  });

  it("parses a command name holding spaces and parentheses", async () => {
    const program = join(tempDir(), "a) b (c) d");
    await copyFile("/bin/sleep", program);
    const child = start({ argv: [program, "30"] });
    const info = await until(() => inState(child.pid, "sleeping"), "the program to sleep");
    expect(info.ppid).toBe(process.pid);
    expect(info.argv).toEqual([program, "30"]);
    expect(info.name).toBe("a) b (c) d");
  });

  it("starts a new process group and signals all of it", async () => {
    const leader = start({ argv: ["sh", "-c", "sleep 30 & wait"], newGroup: true });
    const member = await until(() => childOf(leader.pid), "the group member to start");
    descendants.push({ pid: member.pid, argv: member.argv });
    expect(procs.inspect(leader.pid)?.pgid).toBe(leader.pid);
    expect(member.pgid).toBe(leader.pid);

    expect(procs.signalGroup(leader.pid, 0)).toBe("ok");
    expect(procs.signalGroup(leader.pid, "SIGTERM")).toBe("ok");
    expect(await leader.exited).toEqual({ code: null, signal: "SIGTERM" });
    await until(() => {
      const state = procs.inspect(member.pid)?.state;
      return state === undefined || state === "zombie" ? true : undefined;
    }, "the group member to die");
  });

  it("reports exit codes and signals, then ESRCH once the process is gone", async () => {
    expect(await start({ argv: ["sh", "-c", "exit 3"] }).exited).toEqual({
      code: 3,
      signal: null,
    });
    const child = start({ argv: ["sleep", "30"], newGroup: true });
    expect(procs.signal(child.pid, 0)).toBe("ok");
    expect(procs.signal(child.pid, "SIGKILL")).toBe("ok");
    expect(await child.exited).toEqual({ code: null, signal: "SIGKILL" });
    expect(procs.signal(child.pid, 0)).toBe("ESRCH");
    expect(procs.signalGroup(child.pid, "SIGTERM")).toBe("ESRCH");
    expect(procs.inspect(child.pid)).toBeUndefined();
  });

  it.skipIf(process.getuid?.() === 0)("reports EPERM for a process it may not signal", () => {
    expect(procs.signal(1, 0)).toBe("EPERM");
  });

  it.runIf(process.getuid?.() === 0)("reports EPERM when run as an unprivileged user", () => {
    const script = `const { nodeProcs } = await import(${JSON.stringify(
      new URL("../../src/runtime/nodeProcs.ts", import.meta.url).pathname,
    )}); console.log(nodeProcs().signal(1, 0));`;
    const result = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { uid: 65534, gid: 65534, encoding: "utf8", timeout: 30_000, killSignal: "SIGKILL" },
    );
    expect(result.stderr).toBe("");
    expect(result.stdout.trim()).toBe("EPERM");
  });

  it("refuses pids and pgids that would signal more than one process", () => {
    expect(() => procs.signal(0, 0)).toThrow(/positive integer/);
    expect(() => procs.signal(-5, "SIGTERM")).toThrow(/positive integer/);
    expect(() => procs.signalGroup(1, "SIGKILL")).toThrow(/above 1/);
    expect(() => procs.signalGroup(0, "SIGKILL")).toThrow(/above 1/);
  });

  it("appends stdout and stderr to the log file, with env and cwd applied", async () => {
    const dir = tempDir();
    const logFile = join(dir, "job.log");
    const argv: SpawnOptions["argv"] = ["sh", "-c", 'echo "out $GREETING"; pwd; echo err >&2'];
    const env = { GREETING: "hello", PATH: process.env.PATH ?? "/usr/bin:/bin" };
    expect(await start({ argv, env, cwd: dir, logFile }).exited).toEqual({ code: 0, signal: null });
    expect(await start({ argv, env, cwd: dir, logFile }).exited).toEqual({ code: 0, signal: null });
    const once = `out hello\n${dir}\nerr\n`;
    expect(await readFile(logFile, "utf8")).toBe(once + once);
  });

  it("throws when the program cannot be started", () => {
    expect(() => procs.spawn({ argv: ["/nonexistent/baton-test-program"] })).toThrow(
      /cannot start "\/nonexistent\/baton-test-program"/,
    );
  });

  it("says a working directory that is a file is not one, a refusal no retry gets past", () => {
    // Node refuses this one at once (spawn ENOTDIR), not on the next tick as the others.
    const inAFile = () => procs.spawn({ argv: ["/bin/true"], cwd: "/etc/passwd" });
    expect(inAFile).toThrow(ConfigError);
    expect(inAFile).toThrow(
      'cannot start "/bin/true" in /etc/passwd: /etc/passwd is not a directory; give a working directory that exists',
    );
  });

  it("reads a child's environment, with values that hold '=' and empty values", async () => {
    const env = { BATON_DEPLOYMENT: "dep-abc", EQUATION: "a=b=c", EMPTY: "" };
    const child = start({ argv: ["sleep", "30"], env });
    await until(() => inState(child.pid, "sleeping"), "sleep to sleep");
    expect(procs.environ(child.pid)).toEqual(env);
  });

  it("reads its own environment", () => {
    expect(procs.environ(process.pid)?.PATH).toBe(process.env.PATH);
  });

  it("has no environment for a process that is gone or a zombie", async () => {
    const child = start({ argv: ["sh", "-c", "exit 0"], env: { A: "1" } });
    await child.exited;
    expect(procs.environ(child.pid)).toBeUndefined();

    const parent = start({ argv: ["sh", "-c", "sleep 0.1 & exec sleep 30"] });
    const zombie = await until(() => {
      const found = childOf(parent.pid);
      return found?.state === "zombie" ? found : undefined;
    }, "the background sleep to exit");
    expect(procs.environ(zombie.pid)).toBeUndefined();
  });

  it.skipIf(process.getuid?.() === 0)("cannot read another user's environment", () => {
    expect(procs.environ(1)).toBeUndefined();
  });

  it.runIf(process.getuid?.() === 0)("cannot read another user's environment as nobody", () => {
    const script = `const { nodeProcs } = await import(${JSON.stringify(
      new URL("../../src/runtime/nodeProcs.ts", import.meta.url).pathname,
    )}); console.log(JSON.stringify(nodeProcs().environ(1) ?? "unreadable"));`;
    const result = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { uid: 65534, gid: 65534, encoding: "utf8", timeout: 30_000, killSignal: "SIGKILL" },
    );
    expect(result.stderr).toBe("");
    expect(result.stdout.trim()).toBe('"unreadable"');
  });

  it("reads the arguments and environment of a process caught mid-exec once the exec is over", async () => {
    // A shell that execs itself again and again: read in a loop, it is often caught between
    // its old memory and its new one, where both read empty though it runs.
    const script = 'exec /bin/sh -c "$0" "$0"';
    const chain = start({ argv: ["/bin/sh", "-c", script, script], env: { A: "1" } });
    const empty: string[] = [];
    let reads = 0;
    for (const deadline = Date.now() + 1_500; Date.now() < deadline; ) {
      for (let i = 0; i < 100; i++) {
        const argv = procs.inspect(chain.pid)?.argv;
        const env = procs.environ(chain.pid);
        const after = procs.inspect(chain.pid);
        // Read while it ran, and it still runs: it was neither exiting nor a zombie.
        if (argv === undefined || after === undefined || after.state === "zombie") continue;
        if (after.exiting === true) continue;
        reads++;
        if (argv.length === 0) empty.push("no arguments");
        if (env?.A !== "1") empty.push(`environment ${JSON.stringify(env)}`);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(reads).toBeGreaterThan(100);
    expect(empty).toEqual([]);
  }, 30_000);

  it("lists the process table, including itself and its children", async () => {
    const child = start({ argv: ["sleep", "30"] });
    const table = procs.list();
    expect(table.find((info) => info.pid === process.pid)?.argv[0]).toBe(process.argv[0]);
    expect(table.find((info) => info.pid === child.pid)?.ppid).toBe(process.pid);
    for (const info of table) expect(info.pid).toBeGreaterThan(0);
  });

  it("reads an entry's arguments when they are first used, and keeps them", async () => {
    const first = start({ argv: ["sleep", "30"] });
    const second = start({ argv: ["sleep", "31"] });
    for (const child of [first, second]) {
      await until(() => inState(child.pid, "sleeping"), "sleep to sleep");
    }
    const [early, late] = [first.pid, second.pid].map((pid) =>
      procs.list().find((info) => info.pid === pid),
    );
    expect(early?.argv).toEqual(["sleep", "30"]);
    // Gone before its arguments were looked at: the entry (read from stat) has none.
    procs.signal(second.pid, "SIGKILL");
    await second.exited;
    expect(late?.state).toBe("sleeping");
    expect(late?.argv).toEqual([]);
    procs.signal(first.pid, "SIGKILL");
    await first.exited;
    expect(early?.argv).toEqual(["sleep", "30"]);
    expect(JSON.parse(JSON.stringify(early))).toMatchObject({
      pid: first.pid,
      argv: ["sleep", "30"],
    });
  });
});
