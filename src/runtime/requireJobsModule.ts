import { ConfigError } from "../errors.ts";

/**
 * Refuses, with a `ConfigError` naming `where`, a `jobsModule` that is not a non-empty path:
 * without one, every worker process started with `--jobs undefined` and exited 2, which the
 * pool reported as workers that cannot start; an empty one (an unset variable) read as the
 * current directory.
 *
 * @example
 * ```ts
 * requireJobsModule("localPool", undefined);
 * // ConfigError: localPool: jobsModule must be the path of the job module file its workers load, such as "jobs.ts", not undefined
 * ```
 */
export function requireJobsModule(where: string, jobsModule: unknown): void {
  if (typeof jobsModule === "string" && jobsModule !== "") return;
  throw new ConfigError(
    `${where}: jobsModule must be the path of the job module file its workers load, such as "jobs.ts", not ${typeof jobsModule === "string" ? '"" (an empty path)' : typeof jobsModule === "object" && jobsModule !== null ? "an object (give the module's path, not the module)" : String(jobsModule)}`,
  );
}
