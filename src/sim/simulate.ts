import { BatonError, ConfigError, NonRetryableError, StoreError } from "../errors.ts";
import type { JobSpec } from "../graph/job.ts";
import { namedJobs } from "../graph/namedJobs.ts";
import type { FailureCause, JobBoard } from "../machines/jobBoard.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import { createEngine, endedOutcomes } from "../runtime/engine.ts";
import type { InspectOption } from "../runtime/guardInspect.ts";
import { inProcessPool } from "../runtime/inProcessPool.ts";
import { type JobContext, type JobModule, loadJobs } from "../runtime/jobModule.ts";
import { createLogger } from "../runtime/logger.ts";
import { ResultStore } from "../runtime/resultStore.ts";
import type { Run, RunResult } from "../runtime/run.ts";
import { whereThrown } from "../runtime/whereThrown.ts";
import type { GroupProgress } from "../viz/groupProgress.ts";
import { noteAbandonedHandlers } from "./abandonedHandlers.ts";
import { checkSimulateOptions } from "./checkSimulateOptions.ts";
import { CoordinatorWatch } from "./coordinatorWatch.ts";
import { DRAWN_WORLD, drawsRankGroups } from "./drawnRankGroups.ts";
import { drawFaults, type Fault, type FaultProfile, faultsEnd, formatFaults } from "./faultPlan.ts";
import { insteadOfRealWork } from "./insteadOfRealWork.ts";
import { InvariantChecker } from "./invariants.ts";
import { RankGroupScenario } from "./rankGroupScenario.ts";
import { realWorkKind } from "./realWorkKind.ts";
import { describeRealRead, describeRealWork, RealWorkWatch } from "./realWorkWatch.ts";
import { microtasksSettled, nextTurn, ticksSettled } from "./settle.ts";
import { type ClockScope, SimClock } from "./simClock.ts";
import { SimEntropy } from "./simEntropy.ts";
import { SimFiles } from "./simFiles.ts";
import { type SimTools, simGraph, simJobs } from "./simGraph.ts";
import { type SimInvariant, violationMessage } from "./simInvariants.ts";
import type { SimLaunch } from "./simLaunch.ts";
import { handlersFunction, loadedByCommand, messagePrefix } from "./simModules.ts";
import { SimNet } from "./simNet.ts";
import { SIMULATE_DEFAULTS } from "./simulateDefaults.ts";
import { Trace } from "./trace.ts";
import { traceLog } from "./traceLog.ts";
import { type YourGraph, yourGraph, yourJobs } from "./yourJobs.ts";

/** What `simulate` takes: the seed, and a graph of your own or the size of the drawn one. */
export interface SimulateOptions {
  /** Everything random in the run comes from this seed (an unsigned 32-bit integer). */
  seed: number;
  /** Your graph; default: a graph of `jobs` jobs drawn from the seed. */
  graph?: JobSpec | readonly JobSpec[] | undefined;
  /**
   * Handlers for `graph`: a job module, or a function of the simulation's tools (virtual
   * `sleep`, `now`, `random`) returning one. A handler must wait only on those tools, its
   * `ctx` or promises: a real timer or real I/O it starts completes at a virtual time real
   * time chooses, which fails the seed (invariant 0, or 6 if it never completes in time; a
   * timer neither awaited nor cleared fails it when the run is over).
   * Reading the real clock or real randomness (`Date.now()`, `new Date()`, `performance.now()`,
   * `Math.random()`, `crypto.randomUUID()`, …) fails it too (invariant 0): use the tools' `now`
   * and `random`. A function is called again for each coordinator incarnation (after a
   * crash), as a restarted process loads its module again: keep state that must outlive a
   * crash with the tools' `keep`, which gives each seed its own (state in your module would
   * outlive the seed too).
   */
  handlers?: JobModule | ((tools: SimTools) => JobModule) | undefined;
  /** Size of the drawn graph (default 100, at most `SIM_LIMITS.jobs`: 10,000). */
  jobs?: number | undefined;
  /** In-process workers (default 8, at most `SIM_LIMITS.workers`: 1,000). */
  workers?: number | undefined;
  /** A fault profile to draw a plan from (default `"default"`), or the plan itself. */
  faults?: FaultProfile | readonly Fault[] | undefined;
  /**
   * Virtual ms within which every drawn fault starts (a whole number of at least 1; default:
   * 20 s, 40 s for `"heavy"`). A run over sooner meets only the faults drawn before its end:
   * give about how long your graph's run takes. Only with `"default"` or `"heavy"` (`"none"`
   * draws no fault, a plan has its times).
   */
  faultsWithin?: number | undefined;
  /**
   * Virtual ms by which the run must be over (liveness), a whole number of at least 1;
   * default: 10 minutes after the last fault ends, plus 4 minutes for each job divided by the
   * workers (100 jobs on 8 workers: 50 minutes more; a graph of your own counts its jobs, the
   * roots and what they run after). Give it when your jobs take more than a minute or so.
   */
  until?: number | undefined;
  /**
   * Cancel the rest of the run once a job has failed for good, as `createEngine({ failFast })`
   * does (default false). The runner then holds the cancel to the invariants too.
   */
  failFast?: boolean | undefined;
  /** Deliberate bugs to switch on (to prove the simulation catches them); one of `PLANTED_BUGS`. */
  plantedBugs?: readonly PlantedBug[] | undefined;
  /** An XState inspection observer: it sees every actor of every coordinator incarnation. */
  inspect?: InspectOption | undefined;
  /** Called for every trace line, with its virtual time. */
  onEvent?: ((event: { at: number; event: string }) => void) | undefined;
  /** Called when a simulated rank group's or rank's phase changes. */
  onGroupProgress?: ((progress: GroupProgress) => void) | undefined;
  /**
   * Called after every step of the run with its virtual time and how many jobs have ended: a
   * long seed's progress (`baton sim --seed S` draws it on a terminal). Steps come thousands a
   * second: draw at most every so often.
   */
  onProgress?: ((progress: SimProgress) => void) | undefined;
  /**
   * Also launch rank groups with the real `launchGroup` and reaper on simulated processes,
   * with faults drawn from the seed (see `RankGroupScenario`). Default: true beside the drawn
   * graph, false beside a graph of your own (their trace lines are not yours, and they cost
   * each seed more than a small graph does) unless you give `world`.
   */
  ranks?: boolean | undefined;
  /**
   * Draw rank groups of up to this many ranks (from 1 to `SIM_LIMITS.world`: 10,000; drawn
   * groups are of up to 4 when it is left out), beside your graph too. Not beside
   * `ranks: false`, which leaves them out.
   */
  world?: number | undefined;
  /**
   * The rank-group launches to make, instead of drawing them from the seed, beside your graph
   * or the drawn one: a scenario of your own that holds whatever the seed draws elsewhere
   * (each launch's ranks, when the operator stops it, whether and where its launcher is
   * killed; see {@link SimLaunch}). Not beside `world`, which sizes drawn ones, nor beside
   * `ranks: false`.
   *
   * @example
   * ```ts
   * // A launcher killed right before its 5th file write (the manifest with its ranks' pids),
   * // and a launch of the same name 5 s later, whose reaper must stop the rank left behind.
   * const ranks = [{ loadMs: 500, deaf: true, ignoreTerm: true }];
   * await simulate({
   *   seed: 1,
   *   launches: [
   *     { name: "train", ranks, crash: { atFileWrite: { n: 5, afterMs: 0 } } },
   *     { name: "train", atMs: 5_000, ranks: [{ loadMs: 500 }], stopAfterMs: 30_000 },
   *   ],
   * });
   * ```
   */
  launches?: readonly SimLaunch[] | undefined;
}

/**
 * A broken invariant and what happened: 1–5 of DESIGN §4, 7 (throttle), 16 (a job starts after the
 * jobs it runs after), 17 (a job fails only when it must) and 18 (timeouts and backoffs are kept)
 * per coordinator event, 6 liveness, 8–14 rank groups (a verified teardown left a process of the
 * deployment alive, a teardown signalled a process outside its deployment, …), 15 a check of your
 * handlers' (`SimTools.invariant`), 0 not deterministic: a trace that differs between two runs of
 * one seed (`baton sim --check-determinism`), or a real timer or real I/O one of your handlers
 * started that completed during the run (or a timer left neither fired nor cleared when it was
 * over), or a read of the real clock. Every message has one shape: `invariant N (what holds, as
 * SIM_INVARIANTS says) violated: what happened`.
 */
export interface SimViolation {
  invariant: SimInvariant;
  message: string;
  /**
   * Only a second run of the seed showed it: the two traces differ (`checkDeterminism`), and
   * each run alone passes, so it is not shrunk and the dashboard (one run) does not show it.
   * Absent for every failure a single run shows, invariant 0's reads of the real clock too.
   */
  tracesDiffer?: true;
}

/** How far a simulation is: `onProgress` is called with it after every step. */
export interface SimProgress {
  /** The virtual time reached. */
  virtualMs: number;
  /** Jobs completed or failed, of `jobs` the coordinator knows (the graph, and jobs `ctx.need` added). */
  ended: number;
  jobs: number;
}

/**
 * How a seed's jobs ended, as `RunResult.counts` counts them, and `unfinished`: the jobs that
 * had not ended when a broken invariant stopped the seed (0 once its run is over).
 */
export type SimCounts = RunResult["counts"] & { unfinished: number };

/**
 * What `simulate` resolves to: whether every invariant held, what broke, the trace, and how
 * the jobs ended. A failed seed has the same fields as a passed one, and `violation`: a seed
 * that an invariant stopped before its run was over has the jobs that had ended by then in
 * `outcomes`, `failed` and `counts`, and the others in `counts.unfinished`. Plain data, so it
 * crosses threads (`simulateSeeds`).
 */
export interface SimulationResult {
  /** No invariant broke and the run finished in time. */
  ok: boolean;
  seed: number;
  jobs: number;
  workers: number;
  faults: Fault[];
  plantedBugs: PlantedBug[];
  violation?: SimViolation;
  /** Hash of the trace: equal for equal seeds and options. */
  traceHash: string;
  trace: readonly string[];
  /** Virtual time the simulation covered, and the wall time it took: whole ms both. */
  virtualMs: number;
  wallMs: number;
  /** Timer steps the runner took. */
  steps: number;
  /** How many jobs ended how (`RunResult.counts`), and how many had not ended. */
  counts: SimCounts;
  /**
   * Every job's outcome, by job id, as `engine.run`'s `RunResult.jobs` has them: what each of
   * your handlers returned (`value`), or why its job failed, was skipped or was cancelled, its
   * attempts and the workers it lost. Of a seed stopped before its run was over, the jobs that
   * had ended, without `startedAt` and `finishedAt` (the coordinator's board has no times).
   * `baton sim --seed S --json` prints it as `outcomes`.
   *
   * @example
   * ```ts
   * const parse = job("parse", null, { after: [job("fetch", 1)] });
   * const handlers = { fetch: (n: number) => n, parse: () => 2 };
   * const report = await simulate({ seed: 1, graph: [parse], handlers });
   * const parsed = [...report.outcomes.values()].find((o) => o.kind === "parse");
   * if (parsed?.value !== 2) throw new Error(`parse returned ${JSON.stringify(parsed?.value)}`);
   * ```
   */
  outcomes: RunResult["jobs"];
  /**
   * The jobs that failed (of `outcomes`), with why: a failed job breaks no invariant (a seed
   * whose handler throws passes), so this is where your handlers' errors show.
   */
  failed: { id: string; kind: string; cause?: FailureCause; message: string }[];
}

const STORE = "sim-store";
/** Virtual ms a run may take past its last fault, before its jobs are counted (`livenessMs`). */
export const LIVENESS_BASE_MS = 600_000;
/** Per job, divided by the workers: a drawn job works at most 60 s and runs at most 4 times. */
export const LIVENESS_PER_JOB_MS = 240_000;

/** The failed jobs of `outcomes`, as plain data (a seed's result crosses threads). */
function failedJobs(outcomes: RunResult["jobs"]): SimulationResult["failed"] {
  return [...outcomes.values()]
    .filter((outcome) => outcome.status === "failed")
    .map(({ id, kind, cause, error }) => ({
      id,
      kind,
      ...(cause !== undefined && { cause }),
      message: error?.message ?? "",
    }));
}

/** One silent logger for every simulated engine (making a pino logger per run is not free). */
const SILENT = createLogger({ level: "silent", pretty: false });

/**
 * The runner gives the event loop a turn every this many steps (a thread's messages, a signal,
 * a progress line), and waits for the microtasks alone in between, unless your handlers queued
 * an immediate or a tick.
 */
const STEPS_PER_TURN = 100;

/**
 * The simulation of one seed: the body of baton's public `simulate` (`publicSimulate.ts`, whose
 * doc says what it does), which loads this module on its first call. baton's own callers (the
 * `sim` command, the seed threads, the shrinker) call this one.
 */
export async function simulate(options: SimulateOptions): Promise<SimulationResult> {
  return new Simulation(options).run();
}

/** One simulated world: its clock, network, disk, the coordinator incarnations, the checks. */
class Simulation {
  private readonly started = performance.now();
  private readonly seed: number;
  private readonly clock = new SimClock();
  private readonly root: SimEntropy;
  private readonly trace: Trace;
  private readonly net: SimNet;
  private readonly files: SimFiles;
  private readonly ids: SimEntropy;
  private readonly handlerEntropy: SimEntropy;
  private readonly graph: readonly JobSpec[];
  /** A graph of your own, planned once (the drawn graph is its list of jobs). */
  private readonly yours: YourGraph | undefined;
  /** The graph's jobs: the liveness bound's size, and the trace's and the result's `jobs`. */
  private readonly jobs: number;
  private readonly workers: number;
  private readonly faults: Fault[];
  private readonly bugs: PlantedBug[];
  private readonly leaseTimeoutMs: number;
  private readonly throttle: Record<string, number> | undefined;
  private readonly ranks: RankGroupScenario | undefined;
  /** Your handlers' real timers and I/O (drawn handlers use only the simulation's tools). */
  private readonly realWork: RealWorkWatch | undefined;
  /** Your handlers' `ctx.log`, into the trace (the engine's own logger is silent). */
  private readonly handlerLog: ((ctx: JobContext) => JobContext) | undefined;
  private violation: SimViolation | undefined;
  private result: RunResult | undefined;
  /** The latest coordinator incarnation's run, which a `cancel` fault cancels. */
  private engineRun: Run | undefined;
  /** Why a `cancel` fault cancelled the run: a coordinator restarted after it is cancelled too. */
  private cancelled: string | undefined;
  private incarnation = -1;
  private scope: ClockScope | undefined;
  private watch: CoordinatorWatch | undefined;
  /** The board of the latest coordinator that had one, kept while the next one starts. */
  private board: JobBoard | undefined;
  private host = "";
  private steps = 0;
  /** What your handlers keep (`SimTools.keep`): one world per seed, across incarnations. */
  private readonly kept = new Map<string, unknown>();

  constructor(private readonly options: SimulateOptions) {
    checkSimulateOptions("simulate", options);
    this.seed = options.seed >>> 0;
    this.root = new SimEntropy(this.seed);
    this.trace = new Trace(
      () => this.clock.now(),
      options.onEvent && ((at, event) => options.onEvent!({ at, event })),
    );
    this.net = new SimNet(this.clock, this.root.fork("net"), this.trace.add);
    this.files = new SimFiles(this.root.fork("files"), this.trace.add, (path, commits) =>
      this.committed(path, commits),
    );
    this.ids = this.root.fork("ids");
    this.handlerEntropy = this.root.fork("handlers");
    const given = options.graph;
    this.graph =
      given === undefined
        ? simGraph(this.seed, options.jobs ?? SIMULATE_DEFAULTS.jobs)
        : Array.isArray(given)
          ? (given as readonly JobSpec[])
          : [given as JobSpec];
    // Your graph given by its roots (`graph: [publish]`) counted 1 job: its liveness bound
    // was that of one job, and the result said `jobs: 1`.
    this.yours = given === undefined ? undefined : yourGraph(this.graph);
    this.jobs = this.yours?.jobs ?? this.graph.length;
    this.workers = options.workers ?? SIMULATE_DEFAULTS.workers;
    const drawn = this.root.fork("options");
    this.leaseTimeoutMs = drawn.pick([20_000, 8_000]);
    this.throttle = drawn.chance(0.3) ? { b: drawn.int(1, 2) } : undefined;
    const faults = options.faults ?? "default";
    this.faults =
      typeof faults === "string"
        ? drawFaults(this.root.fork("faults"), faults as FaultProfile, options.faultsWithin)
        : [...(faults as readonly Fault[])];
    this.bugs = [...(options.plantedBugs ?? [])];
    this.realWork =
      options.handlers === undefined
        ? undefined
        : new RealWorkWatch(messagePrefix(options.handlers));
    this.handlerLog = options.handlers === undefined ? undefined : traceLog(this.trace.add);
    this.ranks = drawsRankGroups(options)
      ? new RankGroupScenario(
          this.clock,
          this.root.fork("ranks"),
          {
            maxWorld: options.world ?? DRAWN_WORLD,
            plantedBugs: this.bugs,
            launches: options.launches,
          },
          {
            trace: this.trace.add,
            fail: (invariant, message) => this.fail(invariant, message),
            ...(options.onGroupProgress && { groupProgress: options.onGroupProgress }),
          },
        )
      : undefined;
  }

  /**
   * When the faults end, beside a liveness `deadline`: an `until` before their end failed the
   * seed with "faults ended at" a time still to come, as if the run had had its time. It names
   * the option as the caller gave it: `--until` for handlers `baton sim` loaded, `until` for
   * `simulate`'s own, and both for a drawn graph, which either may have run.
   */
  private faultsEnd(deadline: number, end: number): string {
    if (end <= deadline) return `faults ended at ${end} ms`;
    // A drawn graph is simulated by `baton sim` and by `simulate` alike, which name it apart.
    const { handlers } = this.options;
    const until =
      handlers === undefined
        ? "until (baton sim's --until)"
        : loadedByCommand(handlers)
          ? "--until"
          : "until";
    return `the faults end later, at ${end} ms: a run is only bound to be over once its faults are; give ${until} after ${end} ms, or fewer faults`;
  }

  /**
   * With handlers of the user's own, the jobs still running at the liveness deadline, and the
   * likeliest reason: a handler that waits on a real timer or real I/O, which virtual time never
   * reaches (drawn handlers use only the simulation's tools).
   */
  private stillRunning(board: JobBoard | undefined): string {
    if (this.options.handlers === undefined || board === undefined) return "";
    const running = [...board.jobs.values()].filter((record) => record.state === "running");
    if (running.length === 0) return "";
    const waiting = (this.realWork?.pending ?? [])
      .filter((work) => board.jobs.get(work.jobId)?.state === "running")
      .map((work) => `${work.jobId} waits on ${describeRealWork(work.type)}`);
    const seen = waiting.length > 0 ? ` (${[...new Set(waiting)].slice(0, 5).join("; ")})` : "";
    // A handler that only sleeps longer than a drawn job (a minute a try) outran the default
    // bound too, and was told only that it waited on real work.
    const longer =
      waiting.length > 0 || this.options.until !== undefined
        ? ""
        : `; if they only take longer than the default bound allows (${LIVENESS_BASE_MS / 60_000} virtual minutes after the faults, and ${LIVENESS_PER_JOB_MS / 60_000} minutes a job for each worker: ${this.jobs} job${this.jobs === 1 ? "" : "s"} on ${this.workers} worker${this.workers === 1 ? "" : "s"}), ${loadedByCommand(this.options.handlers) ? "give --until T, the virtual time by which your run must be over (ms, or a duration such as 2h)" : "give until, the virtual ms by which your run must be over"}`;
    return `; still running: ${namedJobs(
      running.map(({ job }) => job),
      5,
    )}${seen}. If their handlers wait on anything but the simulation's tools (sleep, now, random), such as a real setTimeout or real I/O, they never finish in virtual time: wait with the tools' sleep instead${longer}`;
  }

  async run(): Promise<SimulationResult> {
    const { clock, trace } = this;
    trace.add(
      `sim seed ${this.seed} jobs ${this.jobs} workers ${this.workers} lease ${this.leaseTimeoutMs} throttle ${JSON.stringify(this.throttle ?? {})} faults ${formatFaults(this.faults) || "none"}${this.options.failFast ? " failFast" : ""}${this.bugs.length ? ` planted ${this.bugs.join(",")}` : ""}`,
    );
    this.start();
    this.ranks?.start();
    for (const fault of this.faults) clock.setTimeout(() => this.apply(fault), fault.at);
    const end = faultsEnd(this.faults);
    clock.setTimeout(() => {
      trace.add("faults over");
      this.net.healAll();
    }, end);
    const deadline =
      this.options.until ??
      end + LIVENESS_BASE_MS + Math.ceil((LIVENESS_PER_JOB_MS * this.jobs) / this.workers);
    this.realWork?.start();
    try {
      await this.step(deadline, end);
    } finally {
      this.realWork?.stop();
    }
    if (this.result !== undefined && this.violation === undefined) await this.checkEnd(this.result);
    this.watch?.detach();
    this.scope?.kill();
    this.ranks?.close();
    if (this.violation)
      trace.add(`violation ${this.violation.invariant}: ${this.violation.message}`);
    const { counts, outcomes } = this.ended();
    return {
      ok: this.violation === undefined,
      seed: this.seed,
      jobs: this.jobs,
      workers: this.workers,
      faults: this.faults,
      plantedBugs: this.bugs,
      ...(this.violation && { violation: this.violation }),
      traceHash: trace.hash,
      trace: trace.lines,
      virtualMs: clock.now(),
      wallMs: Math.round(performance.now() - this.started),
      steps: this.steps,
      counts,
      outcomes,
      failed: failedJobs(outcomes),
    };
  }

  /**
   * How the jobs ended: as the run's result says, or, for a seed stopped before its run was
   * over, as the board of the latest coordinator says (a failed seed used to give neither
   * counts nor its failed jobs, just where they were wanted); before any board, all unfinished.
   */
  private ended(): { counts: SimCounts; outcomes: RunResult["jobs"] } {
    if (this.result !== undefined) {
      return { counts: { ...this.result.counts, unfinished: 0 }, outcomes: this.result.jobs };
    }
    const board = this.watch?.board ?? this.board;
    if (board === undefined) {
      const none = { completed: 0, failed: 0, skipped: 0, cancelled: 0, cached: 0 };
      return { counts: { ...none, unfinished: this.jobs }, outcomes: new Map() };
    }
    const { jobs, counts, unfinished } = endedOutcomes(board);
    return { counts: { ...counts, unfinished }, outcomes: jobs };
  }

  /**
   * Fires timers, one step at a time, until the run is over, an invariant breaks, or nothing is
   * left to fire before `deadline` (liveness; the faults ended at `end`).
   */
  private async step(deadline: number, end: number): Promise<void> {
    const { clock } = this;
    for (;;) {
      // Your handlers' immediates and ticks run where a turn each step ran them (see
      // RealWorkWatch); the drawn handlers and the engine queue none.
      const watch = this.realWork;
      if (this.steps % STEPS_PER_TURN === 0 || watch?.immediatePending()) await nextTurn();
      else if (watch !== undefined) await ticksSettled(() => watch.tickQueued());
      else await microtasksSettled();
      this.ranks?.check();
      this.checkRealWork();
      const over = this.result !== undefined && (this.ranks?.done ?? true);
      if (over) await this.checkRealWorkLeft();
      if (over || this.violation !== undefined) return;
      if (!clock.fireNext(deadline)) {
        const board = this.watch?.board;
        this.fail(
          6,
          `the run is not over at ${deadline} virtual ms (${this.faultsEnd(deadline, end)}): ${board ? JSON.stringify(board) : "no coordinator"}${this.stillRunning(board)}`,
        );
        return;
      }
      this.steps++;
      if (this.options.onProgress) this.options.onProgress(this.progress());
    }
  }

  /** The virtual time and the jobs ended of the latest coordinator (the graph, before one starts). */
  private progress(): SimProgress {
    const counts = this.watch?.board?.counts();
    const virtualMs = this.clock.now();
    if (counts === undefined) return { virtualMs, ended: 0, jobs: this.jobs };
    const jobs = Object.values(counts).reduce((sum, n) => sum + n, 0);
    return { virtualMs, ended: counts.completed + counts.failed, jobs };
  }

  /**
   * Invariant 0 for handlers of your own: a real timer or real I/O that one of them started
   * completed during the run, at a virtual time real time chose, or one of them read the real
   * clock or real randomness, so the trace would differ from run to run. A read passed
   * silently (a handler whose result carried a `randomUUID()` passed `--check-determinism`).
   */
  private checkRealWork(): void {
    const first = this.realWork?.first;
    if (first === undefined) return;
    if ("read" in first) {
      this.fail(0, describeRealRead(first.read));
      return;
    }
    const { work } = first;
    this.fail(
      0,
      `the handler of job ${work.jobId} (${work.kind}) started ${describeRealWork(work.type)}, ${realWorkKind(work.type) === "moduleLoad" ? "which real time, not virtual time, answers" : "whose callback ran when real time, not virtual time, said so"}: where it lands differs from run to run, and the trace with it. ${insteadOfRealWork(work.type)}`,
    );
  }

  /**
   * Invariant 0 when the run is over: a real timer a handler started that has neither fired
   * nor been cleared (a timer it did not await, an interval, an `AbortSignal.timeout`). Such a
   * seed passed when its run was over before the timer fired and failed when it fired first:
   * a slower machine, or a busy one, changed the verdict. A handler's immediate of the last step
   * may still clear it: the runner gives the event loop one more turn before it decides.
   */
  private async checkRealWorkLeft(): Promise<void> {
    if (this.realWork?.timerLeft === undefined) return;
    await nextTurn();
    const left = this.realWork.timerLeft;
    if (left === undefined) return;
    this.fail(
      0,
      `the handler of job ${left.jobId} (${left.kind}) started ${describeRealWork(left.type)} that had not fired when the run was over: it fires when real time says so, during the run on a slower or busier machine and after it here, so the seed's verdict and trace would differ from run to run. Wait with the simulation tools' sleep instead, or clear it before the handler returns`,
    );
  }

  /** Starts a coordinator incarnation (the first, or one after a crash) on the store. */
  private start(): void {
    const n = ++this.incarnation;
    const scope = this.clock.scope();
    this.scope = scope;
    this.host = `coordinator-${n}`;
    this.board = this.watch?.board ?? this.board;
    this.trace.add(`start ${this.host}`);
    const durable = this.durableResults();
    const watch = new CoordinatorWatch(
      new InvariantChecker({
        durable: true,
        ...(this.throttle && { throttle: this.throttle }),
        now: () => scope.now(),
      }),
      (violation) => this.fail(violation.invariant, violation.detail),
      this.trace.add,
      (board) => this.checkResumed(board, durable),
      this.yours !== undefined,
      this.trace.note,
    );
    this.watch = watch;
    const tools: SimTools = {
      sleep: (ms) => new Promise((resolve) => scope.setTimeout(() => resolve(), ms)),
      now: () => this.clock.now(),
      random: () => this.handlerEntropy.random(),
      keep: <T>(name: string, make: () => T): T => {
        if (!this.kept.has(name)) this.kept.set(name, make());
        return this.kept.get(name) as T;
      },
      invariant: (holds, message) => this.check(holds, message),
    };
    const handlers = this.options.handlers;
    const noted = (module: JobModule) =>
      noteAbandonedHandlers(module, this.trace.note, () => this.clock.now());
    const jobs =
      handlers === undefined
        ? loadJobs(noted(simJobs(tools)))
        : this.yourJobs(handlers, tools, noted);
    const engine = createEngine({
      jobs,
      workers: inProcessPool({
        count: this.workers,
        resources: { cpus: 1 },
        restartBudget: Number.POSITIVE_INFINITY,
      }),
      store: STORE,
      clock: scope,
      entropy: this.ids,
      net: this.net.host(this.host),
      files: this.files.port(scope),
      onCoordinator: watch.attach,
      ...(this.options.inspect !== undefined && { inspect: this.options.inspect }),
      logger: SILENT,
      leaseTimeoutMs: this.leaseTimeoutMs,
      progressIntervalMs: 60_000,
      // Your own handlers may have no kind b to throttle.
      ...(this.throttle && jobs.versionOf("b") !== undefined && { throttle: this.throttle }),
      ...(this.bugs.length > 0 && { plantedBugs: this.bugs }),
      ...(this.options.failFast !== undefined && { failFast: this.options.failFast }),
    });
    const run = engine.run(this.graph);
    this.engineRun = run;
    // The operator's cancel stands: a coordinator back from a crash stops at once too.
    if (this.cancelled !== undefined) run.cancel(this.cancelled);
    run.then(
      (result) => {
        if (!scope.alive) return;
        this.trace.add(`run over ${JSON.stringify(result.counts)}`);
        this.result = result;
      },
      (error: unknown) => {
        if (!scope.alive) return;
        if (error instanceof StoreError && error.code === "STORE_NOT_WRITABLE") {
          const full = this.files.fullUntil - this.clock.now();
          if (full > 0) {
            this.startAgain(scope, full);
            return;
          }
        }
        this.fail(6, `the run failed: ${(error as Error).stack ?? error}`);
      },
    );
  }

  /**
   * Your handlers for this incarnation. A handlers function that throws (at the first start, or
   * only at a restart after a crash) crashed `baton sim` with a bare stack and exit 1, naming no
   * seed: it is a `ConfigError` saying when, and where in your code, naming the module the
   * function came from, if any (`handlersFunction`: it said "your handlers function" under
   * `baton sim`, where the other refusals name the `--handlers` module).
   */
  private yourJobs(
    handlers: NonNullable<SimulateOptions["handlers"]>,
    tools: SimTools,
    noted: (module: JobModule) => JobModule,
  ) {
    try {
      return yourJobs(handlers, tools, this.realWork!, this.yours!, noted, this.handlerLog);
    } catch (error) {
      if (error instanceof BatonError) throw error;
      const restart = this.incarnation > 0 ? ", after a coordinator crash" : "";
      throw new ConfigError(
        `${messagePrefix(handlers)}seed ${this.seed}: ${handlersFunction(handlers)} threw when ${this.host} started${restart}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}${whereThrown(error)}. It is called for each coordinator incarnation: make it return the handlers every time`,
        { cause: error },
      );
    }
  }

  private apply(fault: Fault): void {
    if (this.result !== undefined) return;
    if (fault.kind === "slow") {
      this.net.slow(fault.by, fault.ms);
      return;
    }
    if (fault.kind === "coordinator-crash") {
      this.crash(fault.ms, fault.torn);
      return;
    }
    if (fault.kind === "disk-stall") {
      this.trace.add(`fault disk-stall for ${fault.ms} ms`);
      this.files.stall(this.clock.now() + fault.ms);
      return;
    }
    if (fault.kind === "disk-full") {
      this.trace.add(`fault disk-full for ${fault.ms} ms`);
      this.files.refuseWrites(this.clock.now() + fault.ms);
      return;
    }
    if (fault.kind === "cancel") {
      this.cancelled ??= `cancelled by the operator at ${fault.at} virtual ms`;
      const up = this.scope?.alive === true;
      this.trace.add(`fault cancel${up ? "" : `: ${this.host} is down, its restart is cancelled`}`);
      if (up) this.engineRun?.cancel(this.cancelled);
      return;
    }
    const links = this.net.openLinks().filter((l) => l.open && l.server === this.host);
    if (links.length === 0) {
      this.trace.add(`fault ${fault.kind} skipped: no open connection`);
      return;
    }
    const link = links[fault.target % links.length]!;
    switch (fault.kind) {
      case "worker-crash":
        this.net.reset(link.id, "client");
        return;
      case "reset":
        this.net.reset(link.id, "server");
        return;
      case "partition":
        this.net.partition(link.id, fault.ms);
        return;
      case "half-open":
        this.net.halfOpen(link.id, fault.side);
        return;
    }
  }

  /**
   * A coordinator that could not open its store on a full disk (a start within a `disk-full`,
   * after a crash) stops, as `baton run` does (exit 2, `STORE_NOT_WRITABLE`), and is started
   * again `inMs` later, once there is room, as an operator told of it would.
   */
  private startAgain(scope: ClockScope, inMs: number): void {
    this.trace.add(`start ${this.host} failed: the store's disk is full; again in ${inMs} ms`);
    this.watch!.detach();
    scope.kill();
    this.net.killHost(this.host);
    this.clock.setTimeout(() => this.start(), inMs);
  }

  /** The coordinator process dies with its workers; it comes back `downMs` later. */
  private crash(downMs: number, torn: boolean): void {
    const scope = this.scope!;
    if (!scope.alive) {
      this.trace.add(`fault coordinator-crash skipped: ${this.host} is down`);
      return;
    }
    this.trace.add(
      `fault coordinator-crash ${this.host}${torn ? " torn" : ""}, back in ${downMs} ms`,
    );
    this.watch!.detach();
    scope.kill();
    this.net.killHost(this.host);
    this.files.crash(scope, { torn });
    this.clock.setTimeout(() => this.start(), downMs);
  }

  /** Result files committed so far (paths), by job id. */
  private durableResults(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [path, commits] of this.files.commits) {
      if (commits > 0 && path.startsWith(`${STORE}/results/`)) {
        out.set(path.slice(path.lastIndexOf("/") + 1, -".json".length), path);
      }
    }
    return out;
  }

  /**
   * Invariant 2 across crashes: a job's result is committed to the store at most once, for
   * planned jobs and for jobs added by `ctx.need` alike (a restarted coordinator takes a needed
   * job's result from the store when a job needs it again).
   */
  private committed(path: string, commits: number): void {
    if (commits >= 2 && path.startsWith(`${STORE}/results/`)) {
      this.fail(2, `the result ${path} was stored ${commits} times`);
    }
  }

  /** After a restart, every result made durable before the crash is taken from the store. */
  private checkResumed(board: JobBoard, durable: Map<string, string>): void {
    for (const [id, path] of durable) {
      const record = board.jobs.get(id);
      if (record !== undefined && !record.cached) {
        this.fail(
          2,
          `job ${id} had its result stored (${path}) before the crash, but the restarted coordinator has it ${record.state}`,
        );
        return;
      }
    }
  }

  /**
   * The run is over: every job ended with a cause, and every completed one is in the store. A
   * job ends cancelled (or shut down) only once someone stopped the run: a `cancel` fault, or
   * with `failFast` a job that failed for good. The store is read as it is, read-only: opened
   * to write, it made a file to probe the disk, which a run over within a `disk-full` refused.
   */
  private async checkEnd(result: RunResult): Promise<void> {
    const store = ResultStore.openReadOnly(STORE, this.files.port(this.clock.scope()));
    const stopped =
      this.cancelled !== undefined ||
      (this.options.failFast === true &&
        [...result.jobs.values()].some(
          (o) => o.status === "failed" && o.cause !== "cancelled" && o.cause !== "shutdown",
        ));
    for (const outcome of result.jobs.values()) {
      if (outcome.status === "completed") {
        if ((await store.get(outcome.id)) === undefined) {
          this.fail(2, `job ${outcome.id} completed, but the store has no valid result for it`);
          return;
        }
      } else if (!stopped && (outcome.cause === "shutdown" || outcome.cause === "cancelled")) {
        this.fail(6, `job ${outcome.id} ended ${outcome.cause}, though nobody stopped the run`);
        return;
      } else if (!outcome.error?.message) {
        this.fail(6, `job ${outcome.id} ended ${outcome.status} without an error message`);
        return;
      }
    }
  }

  /**
   * Invariant 15, what your handlers hold true (`SimTools.invariant`): when `holds` is false the
   * seed fails, naming the job whose handler said so, and that handler is stopped.
   */
  private check(holds: unknown, message: string): void {
    if (holds) return;
    const job = this.realWork?.current;
    const detail = job === undefined ? message : `job ${job.jobId} (${job.kind}): ${message}`;
    this.fail(15, detail);
    if (job !== undefined) throw new NonRetryableError(violationMessage(15, detail));
  }

  /** Invariant `invariant` broke, as `detail` says; the first violation sticks. */
  private fail(invariant: SimInvariant, detail: string): void {
    this.violation ??= { invariant, message: violationMessage(invariant, detail) };
  }
}
