import { ModuleLoadError } from "../errors.ts";
import { createLogger, type LoggerOptions } from "../runtime/logger.ts";

/**
 * Runs `load` (the import of a user's graph or job module); when the module does not load,
 * logs the `ModuleLoadError` at debug level, with the stack of what the module threw (its
 * `cause`), before the command prints its one line: `--log-level debug` shows the frames
 * that line leaves out. What the logger prints below debug is nothing, and what the line says
 * is the same at any level. It runs where the module loads: `baton worker --handler-thread`'s
 * thread too, since only a code and a message cross back to the worker's main thread.
 *
 * @example
 * ```ts
 * const graphModule = await loadLoggingCause({ level: "debug" }, () => importUserModule("graph.ts"));
 * ```
 */
export async function loadLoggingCause<T>(
  logging: Pick<LoggerOptions, "level" | "pretty">,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (error instanceof ModuleLoadError && error.cause !== undefined) {
      createLogger(logging).debug({ err: error }, "the module did not load; what it threw");
    }
    throw error;
  }
}
