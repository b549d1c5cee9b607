import type { ProcExit } from "./ports.ts";

/**
 * A process's exit in words, as the pool's log lines and the run's summary say it: `exited
 * with code 1`, or `was killed by SIGKILL`.
 *
 * @example
 * ```ts
 * howItEnded({ code: 1, signal: null }); // "exited with code 1"
 * howItEnded({ code: null, signal: "SIGKILL" }); // "was killed by SIGKILL"
 * ```
 */
export function howItEnded(exit: ProcExit): string {
  return exit.signal === null ? `exited with code ${exit.code}` : `was killed by ${exit.signal}`;
}
