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
  type JobOptions,
  type JobSpec,
  type Json,
  job,
  type Resources,
} from "./graph/job.ts";
export { connectionMachine } from "./machines/connection.ts";
export { coordinatorMachine } from "./machines/coordinator.ts";
export { createEngine, type Engine, type EngineOptions } from "./runtime/engine.ts";
export { defineJobs, type Handler, type JobContext, type JobModule } from "./runtime/jobModule.ts";
export type { JobEvent, JobOutcome, JobStatus, RunProgress, RunResult } from "./runtime/run.ts";
export { Run } from "./runtime/run.ts";
