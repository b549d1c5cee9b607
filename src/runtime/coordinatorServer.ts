import type { Logger } from "pino";
import { type Actor, createActor } from "xstate";
import { ProtocolError } from "../errors.ts";
import type { Json } from "../graph/job.ts";
import { connectionMachine } from "../machines/connection.ts";
import type { coordinatorMachine } from "../machines/coordinator.ts";
import type { CoordinatorEffect } from "../machines/jobBoard.ts";
import type { NameHolder } from "../machines/nameClaim.ts";
import { coordinatorProof, verifyWorkerProof } from "../transport/auth.ts";
import { CloseCode, describeClose } from "../transport/closeCodes.ts";
import {
  encode,
  type JobFrame,
  type ProgressFrame,
  parseToCoordinator,
  type ToCoordinator,
} from "../transport/frames.ts";
import { PROTOCOL } from "../transport/protocolVersion.ts";
import type { InspectOption } from "./guardInspect.ts";
import type { Clock, Entropy, Link, Listener } from "./ports.ts";

/**
 * The most a connection may send before its hello is accepted (`ListenOptions`'
 * `maxHandshakeBytes`, which the engine's listener is given): 64 KiB. A hello is at most a
 * few KiB (four ids of at most 200 characters, a range, three amounts, a frame limit), and a
 * worker sends nothing else before its welcome; the rest is room for a hello with whitespace
 * or fields a later version adds. A stranger then costs the coordinator that much, not a
 * frame of up to 64 MiB held until its hello deadline.
 */
export const MAX_HANDSHAKE_BYTES = 64 * 2 ** 10;

/** Connections still handshaking at once, unless told (`maxHandshakes`): past it the oldest goes. */
export const DEFAULT_MAX_HANDSHAKES = 64;

export interface ConnectionTimeouts {
  /** A connection that sends no hello within this is closed with 4003 (default 10 s). */
  helloTimeoutMs?: number | undefined;
  /** Interval of liveness probes (default 5 s). */
  heartbeatMs?: number | undefined;
  /** A worker silent for this long is closed with 4005, releasing its lease (default 20 s). */
  deadAfterMs?: number | undefined;
}

export interface CoordinatorServerOptions extends ConnectionTimeouts {
  /**
   * Most connections still handshaking at once (default 64). A new connection past the cap
   * evicts the oldest one (closed with 4007): a worker answers the challenge within a round
   * trip, so idle or hostile sockets can neither exhaust the server nor hold a real worker
   * out until their hello deadline.
   */
  maxHandshakes?: number;
  /** The largest frame the listener accepts: told to workers, which then keep under it. */
  maxFrameBytes?: number;
  /**
   * Where workers connect; over WebSocket, made with `maxHandshakeBytes: MAX_HANDSHAKE_BYTES`
   * (the server admits each link whose hello it accepts).
   */
  listener: Listener;
  coordinator: Actor<typeof coordinatorMachine>;
  clock: Clock;
  entropy: Entropy;
  secret: Uint8Array;
  run: string;
  /** Workers must load the job module with this hash; absent: not checked. */
  codeHash?: string;
  logger: Logger;
  inspect?: InspectOption;
  /** Progress a worker reported for the job it holds. */
  onProgress?: (frame: ProgressFrame, worker: string) => void;
  /**
   * The stored results among `ids` (the result store): looked up for the jobs a blocked
   * result needs, so that jobs an earlier run or coordinator computed are not run again.
   * While it runs, that connection's later frames and its close wait, so a worker that dies
   * just after answering still gets its answer heard.
   */
  lookup?: (ids: readonly string[]) => Promise<ReadonlyMap<string, Json>>;
}

interface Connection {
  link: Link;
  actor: Actor<typeof connectionMachine>;
  /** Link events waiting behind a blocked result's store lookup, in arrival order. */
  backlog: Promise<void> | undefined;
  /**
   * The job frame granted last, until the connection machine sends it, and its text in
   * `grantedText` (two fields, not an object a grant): the frame is sent as that text, never
   * encoded again. A grant the machine does not send (too large for the worker, or the
   * connection closing) is held until the next grant replaces it or the connection goes.
   */
  granting: JobFrame | undefined;
  grantedText: string;
  /**
   * The worker id its hello gave, for the log line of a rejection: the connection machine
   * keeps only the id of a worker it admitted, and the operator looks for the refused one.
   */
  hello: string | undefined;
  /** The worker name it holds: registered under it, and neither closing nor replaced. */
  holds: string | undefined;
}

/**
 * The coordinator's side of the wire: one connection machine per link, frames parsed and
 * validated on arrival, proofs checked, and the coordinator's decisions carried out on the
 * right link. It holds no scheduling state of its own.
 *
 * @example
 * ```ts
 * const server = new CoordinatorServer({ listener, coordinator, clock, entropy, secret, run, logger });
 * server.connectionCount; // links not yet closed
 * // ... once the run is finished and the listener closed:
 * server.stop();
 * ```
 */
export class CoordinatorServer {
  private readonly connections = new Map<string, Connection>();
  /** Connections that have not finished the handshake, oldest first. */
  private readonly handshaking = new Set<Connection>();
  /** Names of the workers that joined (their hello was accepted), kept after they leave. */
  private readonly joinedNames = new Set<string>();
  /**
   * The connections registered under each worker name and not yet closing: the holders a
   * hello giving that name is decided against (a connection of the same worker process is
   * replaced, another process is refused; see `claimName`).
   */
  private readonly holding = new Map<string, Set<Connection>>();
  /** Names of the joined workers given up on since they last joined (see `gaveUpOn`). */
  private readonly gaveUpNames = new Set<string>();
  /** Counts of what was refused, for logs and the run summary. */
  readonly refused = { badFrames: 0, droppedResults: 0 };

  constructor(private readonly options: CoordinatorServerOptions) {
    const { coordinator, listener } = options;
    listener.onConnection((link) => this.accept(link));
    coordinator.on("effects", ({ effects }) => {
      for (const effect of effects) this.carryOut(effect);
    });
  }

  /** Hands one of the coordinator's decisions to the connection it is about. */
  private carryOut(effect: CoordinatorEffect): void {
    switch (effect.type) {
      case "lease.granted": {
        const { job, deps, attempt } = effect;
        const connection = this.connections.get(effect.conn);
        if (!connection) return;
        const frame: JobFrame = {
          type: "job",
          id: job.id,
          kind: job.kind,
          input: job.input,
          deps,
          attempt,
          ...(job.ranks !== undefined && { ranks: job.ranks }),
        };
        // Encoded once: measured for the machine, and sent as is if the machine sends it.
        // Kept until then, not only while `send` runs: a grant answering the connection's
        // own LEASE reaches its machine while that machine is still busy with the event that
        // asked, so the machine takes the GRANT after `send` has returned (nearly every job).
        const text = encode(frame);
        connection.granting = frame;
        connection.grantedText = text;
        connection.actor.send({
          type: "GRANT",
          job: job.id,
          frame,
          bytes: Buffer.byteLength(text),
        });
        return;
      }
      case "lease.cancelled":
        this.connections.get(effect.conn)?.actor.send({
          type: "CANCEL_JOB",
          job: effect.job,
          reason: effect.reason,
          ...(effect.timedOut && { timedOut: true }),
        });
        return;
      case "lease.expired": {
        // Behind a blocked result of that connection whose needs are being looked up: that
        // answer came in time and counts, and the expiry then finds that attempt no longer
        // held (the connection ignores it, even if the job was granted to it again)
        // instead of closing the connection.
        const connection = this.connections.get(effect.conn);
        if (!connection) return;
        this.inOrder(
          connection,
          () => {
            connection.actor.send({
              type: "EXPIRE",
              job: effect.job,
              attempt: effect.attempt,
              ...(effect.timedOut && { timedOut: true }),
            });
          },
          undefined,
        );
        return;
      }
      case "connection.released":
        this.connections.get(effect.conn)?.actor.send({
          type: "RELEASE",
          ...(effect.reason !== undefined && { reason: effect.reason }),
        });
        return;
    }
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Whether a worker called `worker` joined this server at some point, even if it has left
   * since: only a worker that joined can have been given a job.
   */
  joined(worker: string): boolean {
    return this.joinedNames.has(worker);
  }

  /**
   * Whether this server gave up on the worker called `worker`: its last connection ended by
   * neither this server's normal close (the run's end) nor the worker's going away (1001), but
   * otherwise. The server closed it
   * (a lease that expired, a silence, a protocol violation) or its link broke (the worker's
   * process died, its host or the network failed), and it has not joined again since. Its
   * process, if it still runs, serves no run: it may be stopped (SIGSTOP), its event loop
   * blocked, or a handler that ignores its AbortSignal may hold it up.
   */
  gaveUpOn(worker: string): boolean {
    return this.gaveUpNames.has(worker);
  }

  /**
   * The run is over and the listener closed: stops every connection machine still running,
   * so that what a link still delivers (a worker's hello that crossed the listener's close)
   * reaches no machine and nothing more is sent to the coordinator.
   */
  stop(): void {
    for (const { actor } of this.connections.values()) actor.stop();
    this.connections.clear();
    this.handshaking.clear();
    this.holding.clear();
  }

  private accept(link: Link): void {
    const { options } = this;
    const nonce = options.entropy.id(32);
    const log = options.logger.child({ conn: link.id, remote: link.remote });
    const actor = createActor(connectionMachine, {
      // What a state-chart inspector names it (as the dashboard does): one per worker socket.
      id: `connection:${link.id}`,
      input: {
        conn: link.id,
        coordinator: options.coordinator,
        run: options.run,
        nonce,
        protocol: PROTOCOL,
        ...(options.codeHash !== undefined && { codeHash: options.codeHash }),
        ...(options.helloTimeoutMs !== undefined && { helloTimeoutMs: options.helloTimeoutMs }),
        ...(options.heartbeatMs !== undefined && { heartbeatMs: options.heartbeatMs }),
        ...(options.deadAfterMs !== undefined && { deadAfterMs: options.deadAfterMs }),
        ...(options.maxFrameBytes !== undefined && { maxFrameBytes: options.maxFrameBytes }),
      },
      clock: options.clock,
      ...(options.inspect !== undefined && { inspect: options.inspect }),
    });
    const connection: Connection = {
      link,
      actor,
      backlog: undefined,
      granting: undefined,
      grantedText: "",
      hello: undefined,
      holds: undefined,
    };
    this.connections.set(link.id, connection);
    this.admit(connection, log);
    actor.on("send", ({ frame }) => {
      if (frame !== connection.granting) {
        link.send(encode(frame));
        return;
      }
      const text = connection.grantedText;
      connection.granting = undefined;
      connection.grantedText = "";
      link.send(text);
    });
    /** The worker's name once its hello is accepted. */
    let joinedAs: string | undefined;
    actor.on("close", ({ code, reason }) => {
      this.letNameGo(connection);
      if (code !== CloseCode.normal) {
        const worker = actor.getSnapshot().context.worker || connection.hello;
        log.warn({ ...(worker && { worker }), code, reason }, "closing connection");
        // A replaced connection's worker is connected again.
        if (joinedAs !== undefined && code !== CloseCode.replaced) this.gaveUpNames.add(joinedAs);
      }
      link.close(code, reason);
    });
    actor.on("ping", () => link.ping());
    actor.on("registered", ({ worker, protocol, replaces }) => {
      this.handshaking.delete(connection);
      link.admit();
      // First, so that the replaced connection's loss (at once, unless a store lookup holds
      // its frames back) is told before this one asks for work.
      if (replaces !== undefined) {
        log.info({ worker, replaces }, "worker connected again: replacing its old connection");
        const old = this.connections.get(replaces);
        if (old) {
          this.letNameGo(old);
          // Behind a blocked result of the old connection whose needs are being looked up:
          // that answer came before the worker connected again, and counts.
          this.inOrder(old, () => old.actor.send({ type: "REPLACED", by: link.id }), undefined);
        }
      }
      connection.holds = worker;
      const holders = this.holding.get(worker);
      if (holders === undefined) this.holding.set(worker, new Set([connection]));
      else holders.add(connection);
      this.joinedNames.add(worker);
      this.gaveUpNames.delete(worker);
      joinedAs = worker;
      // At info, so a run's log file says which workers took part (a lost one is a warning).
      log.info({ worker, protocol }, "worker joined");
    });
    actor.on("dropped", ({ job, reason }) => {
      this.refused.droppedResults++;
      log.warn({ job, reason }, "result dropped");
    });
    actor.on("progress", ({ frame, worker }) => options.onProgress?.(frame, worker));
    actor.subscribe({
      complete: () => {
        this.handshaking.delete(connection);
        this.connections.delete(link.id);
      },
    });
    // One handler for all of the link's frames, handed each frame's text: no closure a frame.
    const onFrame = (text: string) => this.onFrame(connection, nonce, text, log);
    link.onFrame((text) => this.inOrder(connection, onFrame, text));
    // A pong says only that the worker is alive: it does not wait behind a store lookup, or
    // a store that stalls past the probe deadline would close a live worker.
    link.onPong(() => {
      if (actor.getSnapshot().status === "active") actor.send({ type: "PONG" });
    });
    link.onClose((code, reason) => {
      this.letNameGo(connection);
      this.inOrder(
        connection,
        () => {
          // An evicted connection was named when it was evicted.
          if (this.handshaking.has(connection)) noteClosedBeforeHello(actor, code, reason, log);
          else if (noteLeaving(actor, code, reason, log) === "lost")
            this.gaveUpNames.add(joinedAs!);
          actor.send({ type: "CLOSED", code, reason });
        },
        undefined,
      );
    });
    actor.start();
  }

  /** `connection` no longer holds its worker's name: it is closing, closed or replaced. */
  private letNameGo(connection: Connection): void {
    const name = connection.holds;
    if (name === undefined) return;
    connection.holds = undefined;
    const holders = this.holding.get(name);
    holders?.delete(connection);
    if (holders?.size === 0) this.holding.delete(name);
  }

  /** The connections registered under `worker`'s name, each with its instance. */
  private holdersOf(worker: string): NameHolder[] {
    return [...(this.holding.get(worker) ?? [])].map(({ link, actor }) => ({
      conn: link.id,
      instance: actor.getSnapshot().context.instance,
    }));
  }

  /** Makes room for a new handshake by evicting the oldest one past the cap. */
  private admit(connection: Connection, log: Logger): void {
    const cap = this.options.maxHandshakes ?? DEFAULT_MAX_HANDSHAKES;
    for (const oldest of this.handshaking) {
      if (this.handshaking.size < cap) break;
      this.handshaking.delete(oldest);
      log.warn(
        { evicted: oldest.link.id, cap },
        "too many connections handshaking; evicting the oldest",
      );
      oldest.link.close(
        CloseCode.tooManyHandshakes,
        `more than ${cap} connections were handshaking; this one was the oldest`,
      );
    }
    this.handshaking.add(connection);
  }

  /**
   * Runs a link event now, or after the events already waiting on that connection. Once the
   * connection's machine has stopped (closed, perhaps by its own close wait before the link's
   * close arrived), its link's events have nobody to tell and are dropped.
   */
  private inOrder<A>(connection: Connection, handle: LinkEvent<A>, arg: A): void {
    const waiting = connection.backlog;
    // Nothing waiting, as for nearly every frame: handled at once, with no closure made.
    const pending =
      waiting === undefined
        ? whileActive(connection, handle, arg)
        : waiting.then(() => whileActive(connection, handle, arg));
    if (!pending) return;
    const backlog = pending.then(() => {
      if (connection.backlog === backlog) connection.backlog = undefined;
    });
    connection.backlog = backlog;
  }

  /**
   * Looks up a blocked result's needed jobs in the store, then hands it on with what was
   * found. A store that cannot answer costs only recomputation: the jobs run again.
   */
  private async withStored(
    connection: Connection,
    frame: Extract<ToCoordinator, { type: "result"; status: "blocked" }>,
    lookup: NonNullable<CoordinatorServerOptions["lookup"]>,
    log: Logger,
  ): Promise<void> {
    let stored: ReadonlyMap<string, Json> | undefined;
    try {
      const found = await lookup(frame.needs.map((job) => job.id));
      if (found.size > 0) stored = found;
    } catch (error) {
      log.warn(
        { job: frame.job, err: error },
        "could not look up the needed jobs in the result store; they will run again",
      );
    }
    connection.actor.send({ type: "RESULT", frame, ...(stored && { stored }) });
  }

  private onFrame(
    connection: Connection,
    nonce: string,
    text: string,
    log: Logger,
  ): Promise<void> | undefined {
    const { actor } = connection;
    let frame: ReturnType<typeof parseToCoordinator>;
    try {
      frame = parseToCoordinator(text);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.refused.badFrames++;
      log.warn({ reason: error.message }, "bad frame");
      actor.send({ type: "BAD_FRAME", reason: error.message });
      return undefined;
    }
    switch (frame.type) {
      case "hello": {
        const { secret } = this.options;
        const authentic = verifyWorkerProof(
          secret,
          nonce,
          frame.protocol,
          frame.worker,
          frame.proof,
        );
        const welcomeProof = authentic ? coordinatorProof(secret, nonce, frame.proof) : "";
        connection.hello = frame.worker;
        actor.send({
          type: "HELLO",
          frame,
          authentic,
          welcomeProof,
          holders: this.holdersOf(frame.worker),
        });
        return undefined;
      }
      case "result": {
        const { lookup } = this.options;
        // Only an answer the connection machine will accept is looked up: for the job it
        // holds, while it holds it.
        if (frame.status === "blocked" && lookup) {
          const snapshot = actor.getSnapshot();
          if (snapshot.context.job === frame.job && snapshot.matches({ registered: "busy" }))
            return this.withStored(connection, frame, lookup, log);
        }
        actor.send({ type: "RESULT", frame });
        return undefined;
      }
      case "progress":
        actor.send({ type: "PROGRESS", frame });
        return undefined;
    }
  }
}

/**
 * A link event's handling, given `arg` (a frame's text; nothing for the others); a promise it
 * returns holds the connection's later events back.
 */
type LinkEvent<A> = (arg: A) => Promise<void> | undefined | void;

/** Handles a link event while the connection's machine runs; afterwards, drops it. */
function whileActive<A>(
  connection: Connection,
  handle: LinkEvent<A>,
  arg: A,
): Promise<void> | undefined | void {
  return connection.actor.getSnapshot().status === "active" ? handle(arg) : undefined;
}

/**
 * Says in the run's log why a connection closed before its hello when its connection machine
 * did not decide it (a rejection says so itself, as `closing connection`): its link refused
 * what the other end sent (a binary frame, 4000; a frame over the limit, or more than
 * `MAX_HANDSHAKE_BYTES`, 4004; text that is not UTF-8, 1007), or the other end closed (a
 * worker that shares no protocol version, 4002) or vanished (1006). A worker going away
 * (1001) and the run's end (the listener closes its links with 1001) are not worth a line.
 */
function noteClosedBeforeHello(
  actor: Actor<typeof connectionMachine>,
  code: number,
  reason: string,
  log: Logger,
): void {
  if (!actor.getSnapshot().matches("handshaking")) return;
  if (code === CloseCode.normal || code === CloseCode.goingAway) return;
  log.warn({ code, reason, meaning: describeClose(code) }, "connection closed before its hello");
}

/**
 * Says in the run's log that a worker left while it was registered, its link closed by the
 * worker or the network rather than by the coordinator (which says so itself): at info when
 * the worker said it was going away (`baton worker` after Ctrl-C), as a warning otherwise
 * (its process died, its host or the network failed), naming the job it held, which runs again.
 * Returns which of the two it was, if either.
 */
function noteLeaving(
  actor: Actor<typeof connectionMachine>,
  code: number,
  reason: string,
  log: Logger,
): "left" | "lost" | undefined {
  const snapshot = actor.getSnapshot();
  if (!snapshot.matches("registered")) return undefined;
  const { worker, job } = snapshot.context;
  const about = {
    worker,
    code,
    reason,
    ...(snapshot.matches({ registered: "busy" }) && { job }),
  };
  if (code === CloseCode.goingAway) {
    log.info(about, "worker left");
    return "left";
  }
  log.warn({ ...about, meaning: describeClose(code) }, "worker lost");
  return "lost";
}
