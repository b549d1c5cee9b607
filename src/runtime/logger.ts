import { createRequire } from "node:module";
import pino, { type Logger } from "pino";
import type pretty from "pino-pretty";
import { BatonError } from "../errors.ts";
import type { JobError } from "../machines/jobBoard.ts";
import { makeLogFileFolder } from "./logsFolder.ts";

/**
 * pino-pretty (30 modules), loaded only for a logger that writes pretty lines, at its first
 * line: a command that logs nothing on stderr (a quiet run's, whose stderr is a file) never
 * pays for it. Each JSON line becomes its pretty text at once and is written to `out` in the
 * same call, so a line written just before or after it (a progress bar's) keeps its place.
 */
function prettyLines(out: Sink, options: pretty.PrettyOptions): Sink {
  let prettify: ((line: string) => string) | undefined;
  return {
    write(line) {
      prettify ??= (createRequire(import.meta.url)("pino-pretty") as typeof pretty).prettyFactory(
        options,
      );
      const text = prettify(line);
      if (text) out.write(text);
    },
  };
}

/** Where log lines are written, each whole line in one call. */
interface Sink {
  write(text: string): void;
}

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

export const LOG_LEVELS: readonly LogLevel[] = [
  "trace",
  "debug",
  "info",
  "warn",
  "error",
  "fatal",
  "silent",
];

export interface LoggerOptions {
  /** What reaches stderr (default `warn`: quiet). */
  level?: LogLevel;
  /**
   * Pretty lines instead of JSON on stderr (default: when stderr is a terminal), coloured only
   * on a terminal.
   */
  pretty?: boolean;
  /** Also append JSON lines to this file, at `info` or the chosen level if lower. */
  file?: string;
  /**
   * Writes what would go to stderr instead, each whole line in one call: `baton run` prints
   * it above its progress bar, which would otherwise end up glued to the line's start.
   */
  stderr?: ((text: string) => void) | undefined;
}

/**
 * baton's logger: pino, structured; pretty on a terminal (one line an event, its fields as JSON
 * after the message; an error's stack below it) and JSON lines otherwise, on
 * stderr so that stdout stays for results; quiet by default (`warn`). With `file`, a full
 * JSON log of the run is kept as well. pino-pretty is loaded only for pretty lines, so that
 * `import "baton"` and a run whose stderr is not a terminal do not load it.
 *
 * @example
 * ```ts
 * const log = createLogger({ level: "info", file: ".baton/logs/run.log" });
 * log.info({ jobs: 52 }, "run started");
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? "warn";
  const usePretty = options.pretty ?? process.stderr.isTTY === true;
  const out: Sink =
    options.stderr !== undefined
      ? { write: options.stderr }
      : givingUp(
          pino.destination({ fd: 2, sync: true }),
          (why) =>
            `cannot write stderr (${why}): it ends here${options.file === undefined ? "" : `, and what follows is only in the log ${options.file}`}`,
          (warning) => logger.warn(warning),
        );
  const stderr = usePretty
    ? prettyLines(out, {
        ignore: "pid,hostname",
        // One line an event, its fields as JSON after the message: as a block below it, a
        // warning of three fields took eight lines, and a grep found its message alone.
        singleLine: true,
        translateTime: "HH:MM:ss.l",
        colorize: process.stderr.isTTY === true,
      })
    : out;
  let logger: Logger;
  if (options.file === undefined) {
    logger = pino({ level, serializers: { err: loggedError } }, stderr);
    return logger;
  }
  makeLogFileFolder(options.file);
  const path = options.file;
  const fileLevel = pino.levels.values[level]! < pino.levels.values.info! ? level : "info";
  const minimum = pino.levels.values[level]! < pino.levels.values[fileLevel]! ? level : fileLevel;
  const file = givingUp(
    pino.destination({ dest: path, sync: true, mkdir: true }),
    (why) =>
      `cannot write the log ${path} (${why}): it ends here, and what follows is only on stderr, at the level asked for there`,
    (warning) => logger.warn(warning),
  );
  logger = pino(
    { level: minimum, serializers: { err: loggedError } },
    pino.multistream([
      { level: level === "silent" ? "fatal" : level, stream: stderr },
      { level: fileLevel, stream: file },
    ]),
  );
  return logger;
}

/**
 * An error as a log line holds it (`err`): pino's own form, without the stack for a
 * `BatonError`, which is expected and says what to do in its message and code; a stack is
 * kept for what is a bug: any other error, including one a `BatonError` was caused by (a
 * listener that threw), under `cause`. A job's error, which crossed the wire as a plain
 * `{ name, message, stack }`, is logged as the error it was (pino's form made its `type`
 * `Object` and its missing stack `""`).
 */
function loggedError(error: unknown): Record<string, unknown> {
  if (isJobError(error)) {
    const { name, message, stack, retryable } = error;
    return {
      type: name ?? "Error",
      message,
      ...(stack !== undefined && { stack }),
      ...(retryable === false && { retryable }),
    };
  }
  const serialized = pino.stdSerializers.err(error as Error);
  if (!(error instanceof BatonError)) return serialized;
  const { stack: _, ...classified } = serialized;
  return error.cause instanceof Error
    ? { ...classified, cause: loggedError(error.cause) }
    : classified;
}

/** An error as it crosses the wire and lands in a job's result: an object, not an `Error`. */
function isJobError(error: unknown): error is JobError {
  return (
    typeof error === "object" &&
    error !== null &&
    !(error instanceof Error) &&
    typeof (error as { message?: unknown }).message === "string"
  );
}

/**
 * A log destination (the log file, or stderr when it is not a terminal) that a failed write
 * (a full disk, an I/O error) does not end the process with, as the unhandled `error` event
 * of pino's destination did (a run whose store filled its disk crashed with a stack; a
 * `baton worker` whose stderr is a file on a full disk died before its first job): it is
 * given up at the first failure, its later lines are dropped rather than held in memory,
 * and `warn` is told once, after the write that failed, what `failure` says of it.
 */
function givingUp(
  destination: ReturnType<typeof pino.destination>,
  failure: (why: string) => string,
  warn: (message: string) => void,
): Sink {
  let failed = false;
  destination.on("error", (error: NodeJS.ErrnoException) => {
    if (failed) return;
    failed = true;
    const why = error.code === "ENOSPC" ? "no space left on its disk" : error.message;
    queueMicrotask(() => warn(failure(why)));
  });
  return {
    write(line) {
      if (!failed) destination.write(line);
    },
  };
}
