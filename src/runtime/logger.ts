import { createRequire } from "node:module";
import { dirname } from "node:path";
import pino, { type Logger } from "pino";
import type pretty from "pino-pretty";
import { makeDirs } from "./makeDirs.ts";

/**
 * pino-pretty (30 modules), loaded only for a logger that writes pretty lines: a command whose
 * stderr is not a terminal never pays for it.
 */
function prettyStream(options: pretty.PrettyOptions): pretty.PrettyStream {
  return (createRequire(import.meta.url)("pino-pretty") as typeof pretty)(options);
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
  /** Pretty, coloured lines instead of JSON on stderr (default: when stderr is a terminal). */
  pretty?: boolean;
  /** Also append JSON lines to this file, at `info` or the chosen level if lower. */
  file?: string;
}

/**
 * baton's logger: pino, structured; pretty on a terminal and JSON lines otherwise, on
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
  const stderr = usePretty
    ? prettyStream({
        destination: 2,
        sync: true,
        ignore: "pid,hostname",
        translateTime: "HH:MM:ss.l",
      })
    : pino.destination({ fd: 2, sync: true });
  if (options.file === undefined) return pino({ level }, stderr);
  makeDirs(dirname(options.file), 0o700);
  const fileLevel = pino.levels.values[level]! < pino.levels.values.info! ? level : "info";
  const minimum = pino.levels.values[level]! < pino.levels.values[fileLevel]! ? level : fileLevel;
  const logger = pino(
    { level: minimum },
    pino.multistream([
      { level: level === "silent" ? "fatal" : level, stream: stderr },
      { level: fileLevel, stream: logFile(options.file, (warning) => logger.warn(warning)) },
    ]),
  );
  return logger;
}

/**
 * The log file's stream: JSON lines appended to `path`. A write that fails (a full disk,
 * an I/O error) must not end the process, as the unhandled `error` event of pino's
 * destination did (a run whose store filled its disk crashed with a stack): the file is given
 * up at the first failure, its later lines are dropped rather than held in memory, and
 * `warn` is told once, after the write that failed.
 */
function logFile(path: string, warn: (message: string) => void): { write(line: string): void } {
  const file = pino.destination({ dest: path, sync: true, mkdir: true });
  let failed = false;
  file.on("error", (error: NodeJS.ErrnoException) => {
    if (failed) return;
    failed = true;
    const why = error.code === "ENOSPC" ? "no space left on its disk" : error.message;
    queueMicrotask(() =>
      warn(
        `cannot write the log ${path} (${why}): it ends here, and what follows is only on stderr, at the level asked for there`,
      ),
    );
  });
  return {
    write(line) {
      if (!failed) file.write(line);
    },
  };
}
