/**
 * baton: run a graph of jobs across workers, on XState machines.
 *
 * @example
 * ```ts
 * import { createEngine, job } from "baton";
 * const engine = createEngine({ jobs: { double: (n: number) => n * 2 } });
 * const result = await engine.run([job("double", 21)]);
 * ```
 */
export { BatonError, ConfigError, GraphError, JobModuleError, ProtocolError } from "./errors.ts";
export {
  type Backoff,
  type Json,
  type JobOptions,
  type JobSpec,
  type Resources,
  job,
} from "./graph/job.ts";
export { coordinatorMachine } from "./machines/coordinator.ts";
export { connectionMachine } from "./machines/connection.ts";
export { type Engine, type EngineOptions, createEngine } from "./runtime/engine.ts";
export { type Handler, type JobContext, type JobModule, defineJobs } from "./runtime/jobModule.ts";
export type { JobEvent, JobOutcome, JobStatus, RunProgress, RunResult } from "./runtime/run.ts";
export { Run } from "./runtime/run.ts";
