import { type AnyActorRef, assign, cancel, emit, raise, sendTo, setup } from "xstate";
import type { Json, Resources } from "../graph/job.ts";
import { CloseCode } from "../transport/closeCodes.ts";
import type { ToCoordinator, ToWorker } from "../transport/frames.ts";
import { negotiate, noCommonVersion } from "../transport/protocolVersion.ts";
import type { CoordinatorEvent } from "./coordinator.ts";
import type { Outcome } from "./jobBoard.ts";
import { claimName, type NameClaim, type NameHolder } from "./nameClaim.ts";

/** How often the coordinator pings a worker, and a busy worker's lease is renewed. */
export const DEFAULT_HEARTBEAT_MS = 5_000;
/** How long a worker may go without answering before its connection is closed as dead. */
export const DEFAULT_DEAD_AFTER_MS = 20_000;
/** How long a new connection has to send its hello before it is closed (4003). */
export const DEFAULT_HELLO_TIMEOUT_MS = 10_000;

/**
 * How long a closing connection waits for the other end's answering close before it counts
 * as closed (DESIGN §8's abort grace). The WebSocket Net and the simulated one wait as long.
 */
export const CLOSE_WAIT_MS = 5_000;

/**
 * How much longer than the abort grace a worker gave in its hello (protocol version 8) the
 * coordinator waits, after telling it to stop a job that ran past its timeout, before it gives
 * that lease up (4005): the cancel's way to the worker and its answer's way back.
 */
export const ABORT_GRACE_SLACK_MS = 1_000;

type HelloFrame = Extract<ToCoordinator, { type: "hello" }>;
type ResultFrame = Extract<ToCoordinator, { type: "result" }>;
type ProgressFrame = Extract<ToCoordinator, { type: "progress" }>;

/** Events of one worker connection: frames that arrived, and the coordinator's commands. */
export type ConnectionEvent =
  /**
   * A hello frame; the runtime has already checked its proof (`authentic`), and gives the
   * connections registered under the worker name it gives (`holders`), each with its instance.
   */
  | {
      type: "HELLO";
      frame: HelloFrame;
      authentic: boolean;
      welcomeProof: string;
      holders: readonly NameHolder[];
    }
  /**
   * A result frame. For a blocked result, `stored` holds the store's results of needed jobs
   * (the runtime looked them up), so the coordinator does not run those again.
   */
  | { type: "RESULT"; frame: ResultFrame; stored?: ReadonlyMap<string, Json> }
  | { type: "PROGRESS"; frame: ProgressFrame }
  /** A frame that failed validation; the reason is sent back in the close. */
  | { type: "BAD_FRAME"; reason: string }
  | { type: "PONG" }
  /** The link is closed (by either side); nothing more can be sent. */
  | { type: "CLOSED"; code: number; reason: string }
  /** Send the worker `job`; `bytes` is the size of its encoded frame (UTF-8). */
  | { type: "GRANT"; job: string; frame: Extract<ToWorker, { type: "job" }>; bytes: number }
  /**
   * Tell the worker to abort `job` (if this connection holds it), saying why. `timedOut`: the
   * job ran past its timeout, so its lease is no longer renewed; a worker that gave its abort
   * grace in its hello (protocol version 8) has that long (and `ABORT_GRACE_SLACK_MS`) to
   * answer before the lease is given up (`ABORT_GRACE_OVER`).
   */
  | { type: "CANCEL_JOB"; job: string; reason: string; timedOut?: boolean }
  /** No job will come: the run is finished, or was stopped early for `reason`. */
  | { type: "RELEASE"; reason?: string }
  /**
   * The same worker process connected again under this connection's name (the same instance),
   * on connection `by`: this one was lost without a close seen, so it closes with 4008.
   */
  | { type: "REPLACED"; by: string }
  /**
   * The coordinator's lease on attempt `attempt` of `job` expired: close with 4005. Ignored
   * unless this connection still holds that attempt (its result may have been accepted
   * meanwhile, and the job granted to it again). `timedOut`: the job ran past its timeout and
   * was not stopped (heartbeats no longer renewed the lease).
   */
  | { type: "EXPIRE"; job: string; attempt: number; timedOut?: boolean }
  /**
   * The abort grace of attempt `attempt` of `job`, told to stop after its timeout, is over
   * (raised by the machine itself): close with 4005 if the connection still holds it.
   */
  | { type: "ABORT_GRACE_OVER"; job: string; attempt: number }
  /** Liveness timers (raised by the machine itself): time to probe, and the probe went unanswered. */
  | { type: "PROBE" }
  | { type: "PROBE_DEADLINE" };

/** What the connection asks the runtime to do, and what it reports. */
export type ConnectionEmitted =
  | { type: "send"; frame: ToWorker }
  | { type: "close"; code: number; reason: string }
  | { type: "ping" }
  /** The hello was accepted; `replaces`: the connection of the same worker this one replaces. */
  | {
      type: "registered";
      worker: string;
      protocol: number;
      resources: Resources;
      replaces?: string;
    }
  | { type: "progress"; frame: ProgressFrame; worker: string }
  | { type: "dropped"; job: string; reason: string };

export interface ConnectionInput {
  /** The link's id; the coordinator knows the connection by it. */
  conn: string;
  coordinator: AnyActorRef;
  run: string;
  nonce: string;
  protocol: readonly [number, number];
  /** The job module hash workers must report; absent: any. */
  codeHash?: string;
  helloTimeoutMs?: number;
  heartbeatMs?: number;
  deadAfterMs?: number;
  /** The largest frame this side accepts, told to workers of protocol version 4 on. */
  maxFrameBytes?: number;
}

/**
 * What the coordinator's side gave a connection, fixed for its life: the run it serves, the
 * challenge's nonce, the protocol versions and module hash it accepts, its deadlines and its
 * frame limit (`ConnectionInput` with its defaults filled in).
 */
export interface ConnectionSettings {
  run: string;
  nonce: string;
  protocol: readonly [number, number];
  codeHash: string | undefined;
  helloTimeoutMs: number;
  heartbeatMs: number;
  deadAfterMs: number;
  maxFrameBytes: number | undefined;
}

/**
 * A connection's context. Its fixed `settings` are one field: XState copies the context on
 * every assign (the hello, each probe and its pong, the close; a job's `job` and `attempt`
 * are written in place), and V8 keeps an object of 20 or more fields in its slow dictionary
 * form, where each copy costs ten times as much.
 */
export interface ConnectionContext {
  conn: string;
  coordinator: AnyActorRef;
  settings: ConnectionSettings;
  /** The protocol version the worker and this side agreed on (0 before the hello). */
  version: number;
  /** The largest frame the worker accepts, from its hello (protocol version 5 on). */
  workerMaxFrameBytes: number | undefined;
  worker: string;
  /** The instance the admitted worker's hello gave (protocol version 7 on). */
  instance: string | undefined;
  /**
   * How long the worker gives an aborted handler to return, from its hello (protocol version
   * 8 on): a job that ran past its timeout is given up that long (and `ABORT_GRACE_SLACK_MS`)
   * after its cancel. Absent: its lease expires as any lease not renewed does.
   */
  abortGraceMs: number | undefined;
  resources: Resources;
  /**
   * The job granted last: the job this connection holds while `busy`. It is not cleared on
   * the way back to `idle` (nothing reads it there). Written in place by the GRANT (`hold`),
   * not assigned: an assign costs XState a copy of the context and a whole new snapshot, on
   * every job. So a snapshot kept from before a GRANT shows the job granted since; the
   * current snapshot, which is what the runtime and an inspector read, is always right.
   */
  job: string | undefined;
  /** The attempt of `job` granted last (the job frame's `attempt`), kept as `job` is. */
  attempt: number;
  /**
   * A ping is out and its PONG has not come back yet. Written in place (`probeSent`,
   * `probeAnswered`), as `job` is: an assign would copy the context and build a snapshot on
   * every ping and every pong, two per connection every `heartbeatMs`, busy or idle.
   */
  probing: boolean;
  /**
   * Why the connection closed: the code and reason this side closed with, or, when the link
   * closed first (the worker went away, crashed, or the network failed), the link's.
   */
  closeCode: number;
  closeReason: string;
}

/** The worker's instance from its hello, when both sides speak protocol version 7. */
function helloInstance(context: ConnectionContext, frame: HelloFrame): string | undefined {
  const version = negotiate(context.settings.protocol, frame.protocol);
  return version !== undefined && version >= 7 ? frame.instance : undefined;
}

/** What the hello `event` does to the connections registered under the name it gives. */
function nameClaim(context: ConnectionContext, event: ConnectionEvent): NameClaim {
  return event.type === "HELLO"
    ? claimName(helloInstance(context, event.frame), event.holders)
    : { kind: "free" };
}

function outcomeOf(frame: ResultFrame, stored: ReadonlyMap<string, Json> | undefined): Outcome {
  if (frame.status === "completed") return { status: "completed", value: frame.value as Json };
  if (frame.status === "failed") return { status: "failed", error: frame.error };
  return { status: "blocked", needs: frame.needs, ...(stored && { stored }) };
}

/**
 * One worker's socket as the coordinator sees it:
 * `handshaking → (rejected | registered) ; registered: idle ⇄ busy ; → closing → closed`.
 * It enforces the hello deadline, negotiates the protocol version, rejects with a 4xxx code
 * and a reason a person can read, accepts a result only for the job it holds, and sends
 * `WORKER_LOST` to the coordinator exactly once when it leaves `registered`, however it
 * leaves, with the code and reason of its close. It does no I/O: the runtime carries out
 * `send`, `close` and `ping`.
 *
 * Liveness runs beside the work as two delayed events of `registered`, each with an id:
 * `PROBE` (`heartbeatMs` after registering or after the last PONG) emits a ping and arms
 * `PROBE_DEADLINE` (`deadAfterMs − heartbeatMs`); the PONG of that ping re-arms `PROBE` and,
 * while `busy`, sends HEARTBEAT, which renews the held job's lease (an idle connection holds
 * no lease, so its liveness stays here and costs the coordinator nothing); a deadline
 * reached closes with 4005. `context.probing` says whether a ping is out. The welcome tells
 * the worker `heartbeatMs`, so that it can notice a coordinator gone silent. (It used to be
 * a parallel region `alive ⇄ probing`; a parallel state made every idle ⇄ busy step about a
 * third dearer, on every job.)
 *
 * A worker's name tells workers apart in logs and summaries, so a hello that gives the name of
 * a registered connection (the runtime passes those as `holders`) is decided by `claimName`
 * from the instance each hello gave (protocol version 7): the same instance is the same worker
 * process connecting again after its old connection was lost unseen, so it is accepted and its
 * `registered` names the connection it `replaces`, which the runtime sends `REPLACED` (closed
 * with 4008, its job released through its `WORKER_LOST`); another instance is another process
 * given the same name, refused with 4010 (after the version, proof and code checks, so a hello
 * that is not authentic learns nothing of the names). A hello without an instance is taken.
 *
 * A job that ran past its timeout (`CANCEL_JOB` with `timedOut`) on a worker whose hello gave its
 * abort grace (protocol version 8) arms `ABORT_GRACE_OVER` for that grace and
 * `ABORT_GRACE_SLACK_MS`: if the connection still holds that attempt then, its handler did not
 * stop, and the connection closes with 4005, whose `WORKER_LOST` releases the lease at once
 * (before, it waited for the lease, no longer renewed, to expire: 20 s by default).
 *
 * A completed result goes to the coordinator as soon as it arrives, and the connection asks
 * for its next job at once: writing the result to the store is the coordinator's business
 * (its `storing` job state), not the worker's.
 *
 * @example
 * ```ts
 * const conn = createActor(connectionMachine, {
 *   input: { conn: link.id, coordinator, run: "r1", nonce: "n0nce", protocol: [1, 7] },
 * });
 * conn.on("send", ({ frame }) => link.send(JSON.stringify(frame)));
 * conn.start();
 * ```
 */
export const connectionMachine = setup({
  types: {
    context: {} as ConnectionContext,
    events: {} as ConnectionEvent,
    input: {} as ConnectionInput,
    emitted: {} as ConnectionEmitted,
  },
  delays: {
    helloTimeout: ({ context }) => context.settings.helloTimeoutMs,
    heartbeat: ({ context }) => context.settings.heartbeatMs,
    deadAfter: ({ context }) =>
      Math.max(context.settings.deadAfterMs - context.settings.heartbeatMs, 0),
    closeWait: CLOSE_WAIT_MS,
    abortGrace: ({ context }) => (context.abortGraceMs ?? 0) + ABORT_GRACE_SLACK_MS,
  },
  guards: {
    noCommonVersion: ({ context, event }) =>
      event.type === "HELLO" &&
      negotiate(context.settings.protocol, event.frame.protocol) === undefined,
    notAuthentic: ({ event }) => event.type === "HELLO" && !event.authentic,
    codeMismatch: ({ context, event }) =>
      event.type === "HELLO" &&
      context.settings.codeHash !== undefined &&
      event.frame.codeHash !== context.settings.codeHash,
    nameTaken: ({ context, event }) => nameClaim(context, event).kind === "taken",
    holdsJob: ({ context, event }) => event.type === "RESULT" && event.frame.job === context.job,
    progressForHeldJob: ({ context, event }) =>
      event.type === "PROGRESS" && event.frame.job === context.job,
    probing: ({ context }) => context.probing,
    cancelForHeldJob: ({ context, event }) =>
      event.type === "CANCEL_JOB" && event.job === context.job,
    expiresHeldLease: ({ context, event }) =>
      (event.type === "EXPIRE" || event.type === "ABORT_GRACE_OVER") &&
      event.job === context.job &&
      event.attempt === context.attempt,
    /** A cancel of the held job after its timeout, to a worker that gave its abort grace. */
    timedOutWithGrace: ({ context, event }) =>
      event.type === "CANCEL_JOB" &&
      event.timedOut === true &&
      event.job === context.job &&
      context.abortGraceMs !== undefined,
    tooLargeForWorker: ({ context, event }) =>
      event.type === "GRANT" &&
      context.workerMaxFrameBytes !== undefined &&
      event.bytes > context.workerMaxFrameBytes,
  },
  actions: {
    sendLease: sendTo(
      ({ context }) => context.coordinator,
      ({ context }): CoordinatorEvent => ({
        type: "LEASE",
        conn: context.conn,
        worker: context.worker,
        resources: context.resources,
      }),
    ),
    sendResult: sendTo(
      ({ context }) => context.coordinator,
      ({ context, event }): CoordinatorEvent => {
        const { frame, stored } = event as Extract<ConnectionEvent, { type: "RESULT" }>;
        return {
          type: "RESULT",
          conn: context.conn,
          job: frame.job,
          outcome: outcomeOf(frame, stored),
        };
      },
    ),
    /** A job frame the worker would refuse (closing its link) is never sent: its attempt fails. */
    failGrant: sendTo(
      ({ context }) => context.coordinator,
      ({ context, event }): CoordinatorEvent => {
        const { job, bytes } = event as Extract<ConnectionEvent, { type: "GRANT" }>;
        return {
          type: "RESULT",
          conn: context.conn,
          job,
          outcome: {
            status: "failed",
            error: {
              name: "JobTooLarge",
              message: `job ${job} was not sent to worker ${context.worker}: its frame (its input and the results of the jobs it runs after) is ${bytes} bytes, over the ${context.workerMaxFrameBytes} bytes the worker accepts; pass large data by reference, such as the path of a file that holds it`,
            },
          },
        };
      },
    ),
    sendHeartbeat: sendTo(
      ({ context }) => context.coordinator,
      ({ context }): CoordinatorEvent => ({ type: "HEARTBEAT", conn: context.conn }),
    ),
    /** Once the close's code and reason are set: the coordinator keeps them with the loss. */
    sendWorkerLost: sendTo(
      ({ context }) => context.coordinator,
      ({ context, event }): CoordinatorEvent => ({
        type: "WORKER_LOST",
        conn: context.conn,
        code: context.closeCode,
        reason: context.closeReason,
        // Leaving `registered` on these closes the connection for the worker's silence.
        ...((event.type === "PROBE_DEADLINE" || event.type === "EXPIRE") && { silent: true }),
      }),
    ),
    scheduleProbe: raise({ type: "PROBE" }, { id: "probe", delay: "heartbeat" }),
    /** A ping went out (written in place, see `ConnectionContext.probing`). */
    probeSent: ({ context }) => {
      context.probing = true;
    },
    /** Its PONG came: no deadline, no ping out (written in place). */
    cancelProbeDeadline: cancel("probeDeadline"),
    probeAnswered: ({ context }) => {
      context.probing = false;
    },
    closeWith: assign((_, params: { code: number; reason: string }) => ({
      closeCode: params.code,
      closeReason: params.reason,
    })),
    // The link closed first (the worker's side, or the network): its code and reason are why.
    closedByLink: assign(({ event }) =>
      event.type === "CLOSED" ? { closeCode: event.code, closeReason: event.reason } : {},
    ),
    /**
     * The GRANT's job becomes the one held (`job`, `attempt`), written in place: a plain
     * action, where an assign would copy the context and make a snapshot on every job
     * (ARCHITECTURE, "XState's cost per event").
     */
    hold: ({ context, event }) => {
      if (event.type !== "GRANT") return;
      context.job = event.job;
      context.attempt = event.frame.attempt;
    },
    emitClose: emit(({ context }) => ({
      type: "close" as const,
      code: context.closeCode,
      reason: context.closeReason,
    })),
    sendCancel: emit(({ context, event }) => {
      const { job, reason } = event as Extract<ConnectionEvent, { type: "CANCEL_JOB" }>;
      // Version 3 on: the reason, for the handler's AbortSignal.
      return {
        type: "send" as const,
        frame: { type: "cancel", job, ...(context.version >= 3 && { reason }) },
      };
    }),
    /**
     * Arms `ABORT_GRACE_OVER` for the held attempt. Not cancelled when the job's result comes
     * (that would cost every job an action): that attempt is then no longer held, and the event
     * is ignored, as a late EXPIRE is. One still pending is cancelled before another is armed
     * (`stopAwaitingAbortGrace`): XState keeps one timer an id, and the first firing would
     * leave the second beyond `cancel`'s reach.
     */
    awaitAbortGrace: raise(
      ({ context }) => ({
        type: "ABORT_GRACE_OVER" as const,
        job: context.job!,
        attempt: context.attempt,
      }),
      { id: "abortGrace", delay: "abortGrace" },
    ),
    stopAwaitingAbortGrace: cancel("abortGrace"),
    dropResult: emit(({ event }, params: { reason: string }) => ({
      type: "dropped" as const,
      job: event.type === "RESULT" ? event.frame.job : "",
      reason: params.reason,
    })),
  },
}).createMachine({
  id: "connection",
  context: ({ input }) => ({
    conn: input.conn,
    coordinator: input.coordinator,
    settings: {
      run: input.run,
      nonce: input.nonce,
      protocol: input.protocol,
      codeHash: input.codeHash,
      helloTimeoutMs: input.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS,
      heartbeatMs: input.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      deadAfterMs: input.deadAfterMs ?? DEFAULT_DEAD_AFTER_MS,
      maxFrameBytes: input.maxFrameBytes,
    },
    version: 0,
    workerMaxFrameBytes: undefined,
    worker: "",
    instance: undefined,
    abortGraceMs: undefined,
    resources: {},
    job: undefined,
    attempt: 0,
    probing: false,
    closeCode: CloseCode.normal,
    closeReason: "",
  }),
  initial: "handshaking",
  states: {
    handshaking: {
      entry: emit(({ context }) => ({
        type: "send" as const,
        frame: {
          type: "challenge",
          nonce: context.settings.nonce,
          protocol: [...context.settings.protocol],
        },
      })),
      after: {
        helloTimeout: {
          target: "rejected",
          actions: {
            type: "closeWith",
            params: ({ context }) => ({
              code: CloseCode.helloTimeout,
              reason: `no hello within ${context.settings.helloTimeoutMs} ms of connecting`,
            }),
          },
        },
      },
      on: {
        HELLO: [
          {
            guard: "noCommonVersion",
            target: "rejected",
            actions: {
              type: "closeWith",
              params: ({ context, event }) => ({
                code: CloseCode.versionMismatch,
                reason: noCommonVersion(context.settings.protocol, event.frame.protocol),
              }),
            },
          },
          {
            guard: "notAuthentic",
            target: "rejected",
            actions: {
              type: "closeWith",
              params: {
                code: CloseCode.authFailed,
                reason:
                  "authentication failed: the worker's proof does not match this run's secret; give the worker the run's secret file",
              },
            },
          },
          {
            guard: "codeMismatch",
            target: "rejected",
            actions: {
              type: "closeWith",
              params: ({ context, event }) => ({
                code: CloseCode.codeMismatch,
                reason: `job module mismatch: coordinator has ${context.settings.codeHash}, worker has ${event.frame.codeHash}; deploy the same module`,
              }),
            },
          },
          {
            guard: "nameTaken",
            target: "rejected",
            actions: {
              type: "closeWith",
              params: ({ event }) => ({
                code: CloseCode.nameInUse,
                reason: `name in use: another worker process named ${JSON.stringify(event.frame.worker)} is connected to this run; give each worker its own --name`,
              }),
            },
          },
          {
            target: "registered",
            actions: [
              assign(({ context, event }) => {
                const version = negotiate(context.settings.protocol, event.frame.protocol)!;
                return {
                  worker: event.frame.worker,
                  instance: helloInstance(context, event.frame),
                  resources: event.frame.resources,
                  version,
                  workerMaxFrameBytes: version >= 5 ? event.frame.maxFrameBytes : undefined,
                  abortGraceMs: version >= 8 ? event.frame.abortGraceMs : undefined,
                };
              }),
              emit(({ context, event }) => ({
                type: "send" as const,
                frame: {
                  type: "welcome",
                  protocol: context.version,
                  run: context.settings.run,
                  proof: event.welcomeProof,
                  // Version 2 on. A positive integer on the wire; rounding up only
                  // lengthens the worker's limit.
                  ...(context.version >= 2 && {
                    heartbeatMs: Math.max(1, Math.ceil(context.settings.heartbeatMs)),
                  }),
                  ...(context.version >= 4 &&
                    context.settings.maxFrameBytes !== undefined &&
                    Number.isFinite(context.settings.maxFrameBytes) && {
                      maxFrameBytes: Math.floor(context.settings.maxFrameBytes),
                    }),
                },
              })),
              // Before the LEASE of `idle`'s entry: the replaced connection's job is released
              // (its WORKER_LOST) before this one asks for work.
              emit(({ context, event }) => {
                const claim = nameClaim(context, event);
                return {
                  type: "registered" as const,
                  worker: event.frame.worker,
                  protocol: context.version,
                  resources: event.frame.resources,
                  ...(claim.kind === "replaces" && { replaces: claim.conn }),
                };
              }),
            ],
          },
        ],
        RESULT: {
          target: "rejected",
          actions: {
            type: "closeWith",
            params: {
              code: CloseCode.protocolViolation,
              reason: "protocol violation: a result frame before hello",
            },
          },
        },
        PROGRESS: {
          target: "rejected",
          actions: {
            type: "closeWith",
            params: {
              code: CloseCode.protocolViolation,
              reason: "protocol violation: a progress frame before hello",
            },
          },
        },
        BAD_FRAME: {
          target: "rejected",
          actions: {
            type: "closeWith",
            params: ({ event }) => ({ code: CloseCode.protocolViolation, reason: event.reason }),
          },
        },
        RELEASE: {
          target: "rejected",
          actions: {
            type: "closeWith",
            params: ({ event }) => ({
              code: CloseCode.normal,
              reason: event.reason ?? "the run is finished",
            }),
          },
        },
        CLOSED: { target: "closed", actions: "closedByLink" },
      },
    },
    registered: {
      initial: "idle",
      entry: "scheduleProbe",
      // WORKER_LOST goes with the close (`closing`'s entry, or CLOSED's actions), after the
      // close's code and reason are set, which transition actions do after this exit.
      exit: [cancel("probe"), cancel("probeDeadline"), "stopAwaitingAbortGrace"],
      on: {
        HELLO: {
          target: "closing",
          actions: {
            type: "closeWith",
            params: {
              code: CloseCode.protocolViolation,
              reason: "protocol violation: a second hello on a registered connection",
            },
          },
        },
        BAD_FRAME: {
          target: "closing",
          actions: {
            type: "closeWith",
            params: ({ event }) => ({ code: CloseCode.protocolViolation, reason: event.reason }),
          },
        },
        RELEASE: {
          target: "closing",
          actions: {
            type: "closeWith",
            params: ({ event }) => ({
              code: CloseCode.normal,
              reason: event.reason ?? "the run is finished",
            }),
          },
        },
        REPLACED: {
          target: "closing",
          actions: {
            type: "closeWith",
            params: {
              code: CloseCode.replaced,
              reason: "replaced by a newer connection of the same worker",
            },
          },
        },
        CLOSED: { target: "closed", actions: ["closedByLink", "sendWorkerLost"] },
        PROBE: {
          actions: [
            "probeSent",
            emit({ type: "ping" as const }),
            raise({ type: "PROBE_DEADLINE" }, { id: "probeDeadline", delay: "deadAfter" }),
          ],
        },
        PONG: {
          guard: "probing",
          actions: ["cancelProbeDeadline", "probeAnswered", "scheduleProbe"],
        },
        PROBE_DEADLINE: {
          target: "closing",
          actions: {
            type: "closeWith",
            params: ({ context }) => ({
              code: CloseCode.leaseExpired,
              reason: `no heartbeat for ${context.settings.deadAfterMs} ms`,
            }),
          },
        },
      },
      states: {
        idle: {
          entry: "sendLease",
          on: {
            GRANT: [
              { guard: "tooLargeForWorker", target: "idle", reenter: true, actions: "failGrant" },
              {
                target: "busy",
                actions: [
                  "hold",
                  emit(({ event }) => ({ type: "send" as const, frame: event.frame })),
                ],
              },
            ],
            RESULT: { actions: { type: "dropResult", params: { reason: "no job is held" } } },
          },
        },
        busy: {
          on: {
            // The held job's result goes to the coordinator and the connection asks again;
            // a result for another job is dropped, naming the job held.
            RESULT: [
              { guard: "holdsJob", target: "idle", actions: "sendResult" },
              {
                actions: {
                  type: "dropResult",
                  params: ({ context }) => ({ reason: `this connection holds ${context.job}` }),
                },
              },
            ],
            PROGRESS: {
              guard: "progressForHeldJob",
              actions: emit(({ context, event }) => ({
                type: "progress" as const,
                frame: (event as { frame: ProgressFrame }).frame,
                worker: context.worker,
              })),
            },
            // The worker is alive while it holds a job, so its lease is renewed.
            PONG: {
              guard: "probing",
              actions: ["cancelProbeDeadline", "probeAnswered", "sendHeartbeat", "scheduleProbe"],
            },
            EXPIRE: {
              guard: "expiresHeldLease",
              target: "#connection.closing",
              actions: {
                type: "closeWith",
                params: ({ event }) => ({
                  code: CloseCode.leaseExpired,
                  reason: event.timedOut
                    ? `lease of job ${event.job} expired: it ran past its timeout and the worker did not stop it`
                    : `lease of job ${event.job} expired: the worker sent no heartbeat before the lease deadline`,
                }),
              },
            },
            CANCEL_JOB: [
              {
                guard: "timedOutWithGrace",
                actions: ["sendCancel", "stopAwaitingAbortGrace", "awaitAbortGrace"],
              },
              { guard: "cancelForHeldJob", actions: "sendCancel" },
            ],
            // The handler did not return within the worker's abort grace of its timeout's
            // cancel: its lease is given up now, not once it has gone unrenewed for long.
            ABORT_GRACE_OVER: {
              guard: "expiresHeldLease",
              target: "#connection.closing",
              actions: {
                type: "closeWith",
                params: ({ context, event }) => ({
                  code: CloseCode.leaseExpired,
                  reason: `lease of job ${event.job} given up: it ran past its timeout and its handler did not return within the worker's abort grace of ${context.abortGraceMs} ms`,
                }),
              },
            },
          },
        },
      },
    },
    // Entered only from `registered`.
    closing: {
      entry: ["sendWorkerLost", "emitClose"],
      on: { CLOSED: "closed" },
      after: { closeWait: "closed" },
    },
    rejected: {
      entry: "emitClose",
      on: { CLOSED: "closed" },
      after: { closeWait: "closed" },
    },
    closed: { type: "final" },
  },
});
