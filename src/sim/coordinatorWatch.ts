import type { Actor } from "xstate";
import { label } from "../graph/label.ts";
import type {
  CoordinatorEmitted,
  CoordinatorEvent,
  coordinatorMachine,
} from "../machines/coordinator.ts";
import type { CoordinatorEffect, JobBoard } from "../machines/jobBoard.ts";
import type { InvariantChecker, InvariantViolation } from "./invariants.ts";

/**
 * Holds a coordinator the engine created to the {@link InvariantChecker}, at the source: the
 * engine hands the actor over (`onCoordinator`) before it starts, and the watch listens to
 * what the coordinator itself reports. Each `effects` batch carries the event that caused it,
 * so the checker hears of an event before its effects; every snapshot the actor publishes
 * (after each processed event, and once at start) is a step, after which the board is
 * checked. Nothing else in the run is inspected, so the watch costs the other actors nothing.
 * Each effect also becomes a trace line.
 *
 * @example
 * ```ts
 * const watch = new CoordinatorWatch(new InvariantChecker(), (v) => fail(v), trace.add);
 * createEngine({ ...options, onCoordinator: watch.attach });
 * ```
 */
export class CoordinatorWatch {
  private coordinator: Actor<typeof coordinatorMachine> | undefined;
  /** The event whose effects the checker has heard of, until its step ends. */
  private current: CoordinatorEvent | undefined;
  private started = false;
  private detached = false;

  constructor(
    private readonly checker: InvariantChecker,
    private readonly onViolation: (violation: InvariantViolation) => void,
    private readonly trace: (line: string) => void,
    /** Called once, with the board, when the coordinator has started. */
    private readonly onStart: (board: JobBoard) => void = () => {},
    /**
     * Name each job granted by its kind and input (a graph of your own, whose ids say nothing
     * to whoever reads its trace; a drawn graph's traces stay as they were).
     */
    private readonly nameJobs = false,
    /**
     * Records a note (a trace line the hash leaves out): with `nameJobs`, what a job's
     * `ctx.need` asked for, by kind and input.
     */
    private readonly note: (line: string) => void = () => {},
  ) {}

  /**
   * Watches `coordinator` (the engine's `onCoordinator` hook). Its listeners are registered
   * before the engine's, so an effect is traced before what the runtime does about it.
   */
  readonly attach = (coordinator: Actor<typeof coordinatorMachine>): void => {
    if (this.coordinator !== undefined) return;
    this.coordinator = coordinator;
    coordinator.on("effects", (emitted) => this.emitted(emitted));
    coordinator.on("run.finished", (emitted) => this.emitted(emitted));
    coordinator.subscribe({ next: () => this.stepped(), error: () => {} });
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
    if (emitted.type === "effects" && this.started && this.current !== emitted.event) {
      this.current = emitted.event;
      this.checker.sent(emitted.event);
    }
    this.checker.observe(emitted);
    if (emitted.type === "run.finished")
      this.trace(`run finished ${JSON.stringify(emitted.counts)}`);
    else {
      for (const effect of emitted.effects) this.trace(describeEffect(effect, this.nameJobs));
      if (this.nameJobs) this.noteNeeds(emitted);
    }
  }

  /**
   * What a job of your graph stopped for with `ctx.need`, by kind and input: the jobs it adds
   * show as `job … ready` by their ids alone, and the job as `blocked`, which said nothing of
   * what it waited for.
   */
  private noteNeeds({ event, effects }: { event: CoordinatorEvent; effects: CoordinatorEffect[] }) {
    if (event.type !== "RESULT" || event.outcome.status !== "blocked") return;
    const blocked = effects.some(
      (e) => e.type === "job.changed" && e.job === event.job && e.state === "blocked",
    );
    if (!blocked) return;
    const kind = this.board?.jobs.get(event.job)?.job.kind;
    const needs = event.outcome.needs.map((job) => `${job.id} (${label(job)})`).join(", ");
    this.note(`${event.job}${kind === undefined ? "" : ` (${kind})`} needs ${needs}`);
  }

  private stepped(): void {
    if (this.detached) return;
    this.current = undefined;
    if (!this.started) {
      this.started = true;
      this.check();
      if (!this.detached) this.onStart(this.board!);
      return;
    }
    this.check();
  }

  private check(): void {
    const violation = this.checker.check(this.board!);
    if (violation) {
      this.detached = true;
      this.onViolation(violation);
    }
  }
}

function describeEffect(effect: CoordinatorEffect, nameJobs: boolean): string {
  switch (effect.type) {
    case "lease.granted": {
      const name = nameJobs ? ` (${label(effect.job)})` : "";
      return `grant ${effect.job.id}${name} to ${effect.conn} attempt ${effect.attempt}`;
    }
    case "lease.cancelled":
      return `cancel ${effect.job} on ${effect.conn}${effect.timedOut ? " (timed out)" : ""}`;
    case "lease.expired":
      return `expire ${effect.job} on ${effect.conn}${effect.timedOut ? " (timed out)" : ""}`;
    case "connection.released":
      return `release ${effect.conn}`;
    case "job.changed":
      return `job ${effect.job} ${effect.state}${effect.cause ? ` ${effect.cause}` : ""}`;
    case "result.dropped":
      return `drop ${effect.job} from ${effect.conn} ${effect.reason}`;
    case "result.store":
      return `store ${effect.job}`;
    case "run.cancelled":
      return `cancel the run: ${effect.reason}`;
  }
}
