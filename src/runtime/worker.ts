import type { Logger } from "pino";
import { BatonError } from "../errors.ts";
import type { JobSpec, Json, PlannedJob, Resources } from "../graph/job.ts";
import { planGraph } from "../graph/planGraph.ts";
import { toJson } from "../graph/toJson.ts";
import { verifyCoordinatorProof, workerProof } from "../transport/auth.ts";
import { CloseCode, describeClose } from "../transport/closeCodes.ts";
import {
  encode,
  type JobFrame,
  parseToWorker,
  type ResultFrame,
  type SerializedError,
  type ToCoordinator,
} from "../transport/frames.ts";
import { PROTOCOL, type ProtocolRange } from "../transport/protocolVersion.ts";
import type { JobContext, LoadedJobs } from "./jobModule.ts";
import type { Link, Net } from "./ports.ts";

export interface WorkerOptions {
  net: Net;
  /** The coordinator's address (`ws://127.0.0.1:PORT`, or a memory address in-process). */
  address: string;
  jobs: LoadedJobs;
  /** This worker's name, for the coordinator's logs and poison reports. */
  name: string;
  resources: Resources;
  secret: Uint8Array;
  logger: Logger;
  protocol?: ProtocolRange;
}

/** How a worker's connection ended. `code` 1000 is the coordinator's normal stop. */
export interface WorkerExit {
  code: number;
  reason: string;
  /** Jobs this worker ran to a result. */
  jobsRun: number;
}

/** Thrown by `ctx.need` when needed jobs have no result yet; never escapes the worker. */
class NeedJobs {
  constructor(readonly needs: PlannedJob[]) {}
}

/**
 * A worker: connects to the coordinator, proves the run secret, then runs one job at a
 * time until the coordinator closes the connection. Each job's handler gets a context
 * with its dependencies' results, an AbortSignal, progress reporting, a logger and
 * `ctx.need`; whatever it throws (an Error or not) becomes a failed result.
 *
 * @example
 * ```ts
 * const exit = await runWorker({ net, address, jobs: loadJobs(handlers), name: "w-1",
 *   resources: { cpus: 1 }, secret, logger });
 * exit.code; // 1000 when the run finished normally
 * ```
 */
export async function runWorker(options: WorkerOptions): Promise<WorkerExit> {
  const link = await options.net.connect(options.address);
  return new Promise<WorkerExit>((resolve) => {
    const session = new WorkerSession(link, options);
    link.onClose((code, reason) => {
      session.abortRunning(`connection closed: ${reason || describeClose(code)}`);
      resolve({ code, reason, jobsRun: session.jobsRun });
    });
  });
}

class WorkerSession {
  jobsRun = 0;
  private nonce = "";
  private proof = "";
  private welcomed = false;
  private running: { id: string; abort: LazyAbort } | undefined;
  private readonly protocol: ProtocolRange;

  constructor(
    private readonly link: Link,
    private readonly options: WorkerOptions,
  ) {
    this.protocol = options.protocol ?? PROTOCOL;
    link.onFrame((text) => this.onFrame(text));
  }

  abortRunning(reason: string): void {
    this.running?.abort.abort(new BatonError("ABORTED", reason));
  }

  private send(frame: ToCoordinator): void {
    this.link.send(encode(frame));
  }

  private violation(reason: string): void {
    this.options.logger.error({ reason }, "coordinator broke the protocol");
    this.link.close(CloseCode.protocolViolation, reason);
  }

  private onFrame(text: string): void {
    let frame: ReturnType<typeof parseToWorker>;
    try {
      frame = parseToWorker(text);
    } catch (error) {
      this.violation((error as Error).message);
      return;
    }
    switch (frame.type) {
      case "challenge":
        this.nonce = frame.nonce;
        this.proof = workerProof(
          this.options.secret,
          frame.nonce,
          this.protocol,
          this.options.name,
        );
        this.send({
          type: "hello",
          protocol: [...this.protocol],
          worker: this.options.name,
          resources: this.options.resources,
          codeHash: this.options.jobs.codeHash,
          proof: this.proof,
        });
        return;
      case "welcome":
        if (!verifyCoordinatorProof(this.options.secret, this.nonce, this.proof, frame.proof)) {
          this.link.close(
            CloseCode.authFailed,
            "the coordinator could not prove it knows the run secret; check the address and the secret file",
          );
          return;
        }
        this.welcomed = true;
        this.options.logger.debug({ protocol: frame.protocol, run: frame.run }, "welcomed");
        return;
      case "job":
        if (!this.welcomed) this.violation("a job frame before welcome");
        else if (this.running) {
          this.violation(`a job frame for ${frame.id} while ${this.running.id} runs`);
        } else void this.run(frame);
        return;
      case "cancel":
        if (this.running?.id === frame.job) {
          this.abortRunning(`job ${frame.job} was cancelled by the coordinator`);
        }
        return;
    }
  }

  private async run(frame: JobFrame): Promise<void> {
    const abort = new LazyAbort();
    this.running = { id: frame.id, abort };
    const result = await this.attempt(frame, abort);
    this.running = undefined;
    this.jobsRun++;
    this.send(result);
  }

  private async attempt(frame: JobFrame, abort: LazyAbort): Promise<ResultFrame> {
    const { jobs, logger } = this.options;
    const handler = jobs.handler(frame.kind);
    if (!handler) {
      return failed(frame.id, {
        name: "UnknownKind",
        message: `this worker's job module has no handler for kind "${frame.kind}"`,
      });
    }
    let log: Logger | undefined;
    // A child logger per job is a measurable cost at thousands of jobs a second: made on use.
    const jobLog = () => {
      log ??= logger.child({ job: frame.id, kind: frame.kind, attempt: frame.attempt });
      return log;
    };
    const ctx: JobContext = {
      job: { id: frame.id, kind: frame.kind, attempt: frame.attempt },
      results: Object.values(frame.deps),
      deps: frame.deps,
      get signal() {
        return abort.signal;
      },
      get log() {
        return jobLog();
      },
      progress: (update) => {
        if (this.running?.id === frame.id)
          this.send({ type: "progress", job: frame.id, ...update });
      },
      need: (...specs) => this.need(frame, specs),
    };
    try {
      const value = await handler(frame.input, ctx);
      return {
        type: "result",
        job: frame.id,
        status: "completed",
        // A handler that returns nothing completes with null.
        value:
          value === undefined ? null : toJson(value, `result of job ${frame.id} (${frame.kind})`),
      };
    } catch (thrown) {
      if (thrown instanceof NeedJobs) {
        return { type: "result", job: frame.id, status: "blocked", needs: thrown.needs };
      }
      jobLog().debug({ err: thrown }, "job failed");
      return failed(frame.id, serializeThrown(thrown, frame));
    }
  }

  private need(frame: JobFrame, specs: JobSpec[]): Json[] {
    const plan = planGraph(specs, { versionOf: this.options.jobs.versionOf });
    const ids = specs.map((spec) => plan.idOf(spec));
    if (ids.every((id) => id in frame.deps)) return ids.map((id) => frame.deps[id] as Json);
    throw new NeedJobs([...plan.jobs.values()]);
  }
}

/**
 * An AbortController made only when a handler looks at `ctx.signal`: most handlers never
 * do, and making one per job is a measurable cost at tens of thousands of jobs a second.
 */
class LazyAbort {
  private controller: AbortController | undefined;
  private reason: unknown;
  private aborted = false;

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.aborted) this.controller.abort(this.reason);
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

function failed(job: string, error: SerializedError): ResultFrame {
  return { type: "result", job, status: "failed", error };
}

/** Turns anything a handler threw into an error with a message and a stack. */
function serializeThrown(thrown: unknown, frame: JobFrame): SerializedError {
  const where = `    at handler "${frame.kind}" (job ${frame.id}, attempt ${frame.attempt})`;
  if (thrown instanceof Error) {
    const message = thrown.message || `${thrown.name} without a message`;
    return {
      name: thrown.name,
      message,
      stack: thrown.stack ?? `${thrown.name}: ${message}\n${where}`,
    };
  }
  let preview: string;
  try {
    preview = typeof thrown === "string" ? thrown : (JSON.stringify(thrown) ?? String(thrown));
  } catch {
    preview = String(thrown);
  }
  const message = `the handler for "${frame.kind}" threw a non-Error value: ${preview.slice(0, 500)}`;
  return {
    name: "NonErrorThrown",
    message,
    stack: `${message}\n${where}`,
  };
}
