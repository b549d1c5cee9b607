import pino, { type Logger } from "pino";
import pretty from "pino-pretty";

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

/**
 * baton's logger: pino, structured; pretty and colourful on a terminal, JSON lines
 * otherwise, on stderr so that stdout stays for results. Quiet by default (`warn`).
 *
 * @example
 * ```ts
 * const log = createLogger({ level: "info" });
 * log.info({ jobs: 52 }, "run started");
 * ```
 */
export function createLogger(options: { level?: LogLevel; pretty?: boolean } = {}): Logger {
  const level = options.level ?? "warn";
  const usePretty = options.pretty ?? process.stderr.isTTY === true;
  if (usePretty) {
    return pino(
      { level },
      pretty({ destination: 2, sync: true, ignore: "pid,hostname", translateTime: "HH:MM:ss.l" }),
    );
  }
  return pino({ level }, pino.destination({ fd: 2, sync: true }));
}
