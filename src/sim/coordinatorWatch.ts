import type { AnyActorRef, InspectionEvent, Observer } from "xstate";
import type { CoordinatorEmitted, CoordinatorEvent } from "../machines/coordinator.ts";
import { coordinatorMachine } from "../machines/coordinator.ts";
import type { CoordinatorEffect, JobBoard } from "../machines/jobBoard.ts";
import type { InvariantChecker, InvariantViolation } from "./invariants.ts";

/**
 * Holds a coordinator the engine created to the {@link InvariantChecker}, from the outside,
 * through XState's inspection API alone: the engine needs no hook. It finds the coordinator
 * among the actors announced (`@xstate.actor`, by its machine), queues every event relayed to
 * it (`@xstate.event`), tells the checker about the event being processed before its first
 * emitted effect, and checks the board after each processed event (`@xstate.snapshot`). The
 * coordinator's mailbox is first in, first out, so the head of the queue is always the event
 * being processed. Each effect also becomes a trace line.
 *
 * @example
 * ```ts
 * const watch = new CoordinatorWatch(new InvariantChecker(), (v) => fail(v), trace.add);
 * createEngine({ ...options, inspect: watch.inspect });
 * ```
 */
export class CoordinatorWatch {
  private coordinator: AnyActorRef | undefined;
  private readonly queue: unknown[] = [];
  private headSent = false;
  private started = false;
  private detached = false;

  constructor(
    private readonly checker: InvariantChecker,
    private readonly onViolation: (violation: InvariantViolation) => void,
    private readonly trace: (line: string) => void,
    /** Called once, with the board, when the coordinator has started. */
    private readonly onStart: (board: JobBoard) => void = () => {},
    private readonly forward?: Observer<InspectionEvent> | ((event: InspectionEvent) => void),
  ) {}

  /** The inspection observer to hand to the engine. */
  readonly inspect = (event: InspectionEvent): void => {
    if (this.forward !== undefined) {
      if (typeof this.forward === "function") this.forward(event);
      else this.forward.next?.(event);
    }
    if (this.detached) return;
    if (event.type === "@xstate.actor") {
      const actor = event.actorRef as AnyActorRef;
      if (this.coordinator === undefined && actor.src === coordinatorMachine) {
        this.coordinator = actor;
        // Typed listeners run before the engine's (registered later), so an effect is traced
        // before what the runtime does about it.
        actor.on("effects", (emitted: CoordinatorEmitted) => this.emitted(emitted));
        actor.on("run.finished", (emitted: CoordinatorEmitted) => this.emitted(emitted));
      }
      return;
    }
    if (event.actorRef !== this.coordinator) return;
    if (event.type === "@xstate.event") {
      if (event.event.type !== "xstate.init") this.queue.push(event.event);
    } else if (event.type === "@xstate.snapshot") {
      this.processed(event.event, event.event.type === "xstate.init");
    }
  };

  /** Stops checking (the coordinator crashed or the run is over). */
  detach(): void {
    this.detached = true;
  }

  /** The coordinator's board, once it exists. */
  get board(): JobBoard | undefined {
    return this.coordinator?.getSnapshot().context.board;
  }

  private emitted(emitted: CoordinatorEmitted): void {
    if (this.detached) return;
    if (this.started) this.sendHead();
    this.checker.observe(emitted);
    if (emitted.type === "run.finished")
      this.trace(`run finished ${JSON.stringify(emitted.counts)}`);
    else for (const effect of emitted.effects) this.trace(describeEffect(effect));
  }

  private processed(event: unknown, init: boolean): void {
    if (init) {
      this.started = true;
      this.check();
      if (!this.detached) this.onStart(this.board!);
      return;
    }
    if (this.queue[0] === event) {
      this.sendHead();
      this.queue.shift();
      this.headSent = false;
    }
    this.check();
  }

  private sendHead(): void {
    if (this.headSent || this.queue.length === 0) return;
    this.headSent = true;
    this.checker.sent(this.queue[0] as CoordinatorEvent);
  }

  private check(): void {
    const violation = this.checker.check(this.board!);
    if (violation) {
      this.detached = true;
      this.onViolation(violation);
    }
  }
}

function describeEffect(effect: CoordinatorEffect): string {
  switch (effect.type) {
    case "lease.granted":
      return `grant ${effect.job.id} to ${effect.conn} attempt ${effect.attempt}`;
    case "lease.cancelled":
      return `cancel ${effect.job} on ${effect.conn}`;
    case "lease.expired":
      return `expire ${effect.job} on ${effect.conn}`;
    case "connection.released":
      return `release ${effect.conn}`;
    case "job.changed":
      return `job ${effect.job} ${effect.state}${effect.cause ? ` ${effect.cause}` : ""}`;
    case "result.dropped":
      return `drop ${effect.job} from ${effect.conn} ${effect.reason}`;
  }
}
