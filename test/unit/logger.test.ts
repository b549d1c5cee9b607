/**
 * baton's logger: pretty lines on stderr when asked (pino-pretty, required only then), JSON
 * lines otherwise. Each case runs the logger in a child Node (its stderr is file descriptor
 * 2), which spawnSync stops with SIGKILL if it outlives its timeout.
 */
import { spawnSync } from "node:child_process";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/runtime/logger.ts";

const LOGGER = new URL("../../src/runtime/logger.ts", import.meta.url).pathname;
const ERRORS = new URL("../../src/errors.ts", import.meta.url).pathname;

/**
 * What `createLogger(options)` writes on stderr for one info line (or `lines` of them, and
 * then a warning on a later tick; or what the script `lines` logs with `log`, baton's error
 * classes in `errors`), in a child process.
 */
function stderrOf(options: object, lines: number | string = 1, stderr?: number): string {
  const script = `const { createLogger } = await import(${JSON.stringify(LOGGER)});
const errors = await import(${JSON.stringify(ERRORS)});
const log = createLogger(${JSON.stringify(options)});
${
  typeof lines === "string"
    ? lines
    : `for (let i = 0; i < ${lines}; i++) log.info({ jobs: 52 }, "run started");
if (${lines} > 1) setTimeout(() => log.warn("still running"), 10);`
}`;
  const result = spawnSync(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", script],
    {
      encoding: "utf8",
      timeout: 30_000,
      killSignal: "SIGKILL",
      ...(stderr !== undefined && { stdio: ["ignore", "pipe", stderr] }),
    },
  );
  expect(result.status, result.stderr ?? "").toBe(0);
  return result.stderr;
}

describe("createLogger", () => {
  it("writes pretty lines with pretty: true", () => {
    expect(stderrOf({ level: "info", pretty: true })).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: run started \{"jobs":52\}\n$/,
    );
  });

  it("writes JSON lines with pretty: false", () => {
    const line = JSON.parse(stderrOf({ level: "info", pretty: false }));
    expect(line).toMatchObject({ level: 30, msg: "run started", jobs: 52 });
  });

  it("logs a BatonError without a stack, and a stack for anything else, a BatonError's cause included", () => {
    const [classified, bug, listener] = stderrOf(
      { level: "info", pretty: false },
      `log.error({ err: new errors.PoolError("WORKER_CRASH_LOOP", "workers crash", "local-1") }, "pool");
log.error({ err: new TypeError("x is undefined") }, "bug");
log.error({ err: new errors.ListenerError("job", new RangeError("too far")) }, "listener");`,
    )
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).err);
    expect(classified).toEqual({
      type: "PoolError",
      name: "PoolError",
      code: "WORKER_CRASH_LOOP",
      message: "workers crash",
      worker: "local-1",
    });
    expect(bug).toMatchObject({ type: "TypeError", stack: expect.stringMatching(/\n {4}at /) });
    expect(listener).not.toHaveProperty("stack");
    expect(listener).toMatchObject({
      code: "LISTENER_THREW",
      cause: { type: "RangeError", message: "too far", stack: expect.stringMatching(/\n {4}at /) },
    });
  });

  it("gives up a log file it cannot write, saying so once, instead of crashing", () => {
    // /dev/full fails every write with ENOSPC, as a store's full disk does.
    const lines = stderrOf({ level: "warn", pretty: false, file: "/dev/full" }, 3)
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).msg);
    expect(lines).toEqual([
      "cannot write the log /dev/full (no space left on its disk): it ends here, and what follows is only on stderr, at the level asked for there",
      "still running",
    ]);
  });

  it.each([false, true])(
    "gives up a stderr it cannot write (a file on a full disk), saying so in the log file, instead of crashing (pretty: %s)",
    (pretty) => {
      const dir = mkdtempSync(join(tmpdir(), "baton-logger-"));
      const full = openSync("/dev/full", "w");
      try {
        const file = join(dir, "worker.log");
        stderrOf({ level: "info", pretty, file }, 3, full);
        const lines = readFileSync(file, "utf8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line).msg);
        expect(lines).toEqual([
          "run started",
          "run started",
          "run started",
          `cannot write stderr (no space left on its disk): it ends here, and what follows is only in the log ${file}`,
          "still running",
        ]);
      } finally {
        closeSync(full);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it("hands each line, whole and at once, to the stderr it is given (baton run's progress bar prints it above itself)", () => {
    for (const pretty of [true, false]) {
      const written: string[] = [];
      const log = createLogger({ level: "warn", pretty, stderr: (text) => written.push(text) });
      log.info("not at this level");
      log.warn({ code: 4001 }, "closing connection");
      // Written before warn returned, so nothing is drawn between its pieces.
      expect(written).toHaveLength(1);
      if (pretty) {
        expect(written[0]).toMatch(
          /^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: closing connection \{"code":4001\}\n$/,
        );
      } else {
        expect(JSON.parse(written[0]!)).toMatchObject({ level: 40, msg: "closing connection" });
      }
    }
  });

  it("says a log's folder through a symbolic link to nothing, in a file system that makes no folders, with a file in its way, or not this user's to write in, is why it cannot be written", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-logger-"));
    try {
      const target = join(dir, "not-mounted");
      symlinkSync(target, join(dir, "logs"));
      const file = join(dir, "logs", "run-1", "run.log");
      expect(() => createLogger({ file })).toThrow(
        expect.objectContaining({
          code: "CONFIG",
          message: `cannot write the log ${file}: ${join(dir, "logs")} is a symbolic link to ${target}, which does not exist (a disk not mounted?); make ${target}, or keep the logs in another directory`,
        }),
      );
      expect(() => createLogger({ file: "/proc/self/baton-logs/run.log" })).toThrow(
        "cannot write the log /proc/self/baton-logs/run.log: cannot mkdir /proc/self/baton-logs: no such file or directory, though the folder above it is there (a file system that makes no folders, such as /proc?); keep the logs in another directory, on a disk you can write to",
      );
      const inTheWay = join(dir, "notes.txt");
      writeFileSync(inTheWay, "not a folder\n");
      const below = join(inTheWay, "run-1", "run.log");
      expect(() => createLogger({ file: below })).toThrow(
        expect.objectContaining({
          code: "CONFIG",
          message: `cannot write the log ${below}: ${inTheWay} is a file, not a directory; move it aside, or keep the logs in another directory`,
        }),
      );
      // procfs refuses to let anyone, root too, write in /proc/sys (mode 555).
      expect(() => createLogger({ file: "/proc/sys/run.log" })).toThrow(
        "cannot write the log /proc/sys/run.log: cannot write /proc/sys: permission denied: /proc/sys is in procfs, which holds the kernel's own files: no one, root included, makes a file or folder there; keep the logs in another directory, one you can write to",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
