import type {
  Clock,
  Containment,
  ProcExit,
  ProcHandle,
  ProcInfo,
  Procs,
  Signal,
  SignalOutcome,
  SpawnOptions,
} from "../runtime/ports.ts";
import type { ClockScope } from "./simClock.ts";

/** How one simulated process behaves; every time is in ms after it starts. */
export interface SimProcSpec {
  argv: string[];
  env?: Record<string, string> | undefined;
  /** Its parent (default: the simulation's own process). */
  ppid?: number | undefined;
  /** Lead a new process group (default: join `pgid`, or the parent's group). */
  newGroup?: boolean | undefined;
  /** Join this existing group. */
  pgid?: number | undefined;
  /** Take this pid (pid reuse); it must be free: no process has it as pid or pgid. */
  pid?: number | undefined;
  /** Owner; another uid than the simulation's answers EPERM and hides its environment. */
  uid?: number | undefined;
  /** What TERM (and INT) does: exit after `termExitMs` (default), or nothing. */
  onTerm?: "exit" | "ignore" | undefined;
  termExitMs?: number | undefined;
  /** KILLs it takes to die (default 1; 2 models a process that survives the first KILL). */
  killsToDie?: number | undefined;
  /** Uninterruptible sleep (D) from `afterMs` for `forMs`: signals wait until it wakes. */
  diskSleep?: { afterMs: number; forMs: number } | undefined;
  /** Exits by itself (code 0). */
  exitAfterMs?: number | undefined;
  /** Leaves its group for a new session and group of its own (ignored for a group leader). */
  setsidAfterMs?: number | undefined;
  /** Stays a zombie this long after dying before its parent reaps it (default 0). */
  zombieMs?: number | undefined;
  /** A name for traces and checks (never seen by the code under test). */
  label?: string | undefined;
  /** Its cgroup (made by `containment.create`); default: its parent's, as on Linux. */
  cgroup?: string | undefined;
}

/**
 * A simulated program: what a process started with this command (`argv[0]`) does. From how it
 * was spawned it decides its behaviour (the {@link SimProcSpec} fields) and, with `main`, the
 * code it runs once it exists.
 */
export type SimProgram = (spawn: SpawnOptions) => SimProgramStart;

/** What a `SimProgram` says about a process it starts: its behaviour, and with `main` its code. */
export interface SimProgramStart
  extends Omit<SimProcSpec, "argv" | "env" | "ppid" | "newGroup" | "pgid" | "pid"> {
  main?: ((self: SimSelf) => void) | undefined;
}

/** A running simulated process as its program sees itself. */
export interface SimSelf {
  readonly pid: number;
  readonly env: Readonly<Record<string, string>>;
  /**
   * Its own timers: held while it sleeps in D (they run when it wakes), gone when it dies.
   * Give it to `SimFiles.port` so that its writes stop with it.
   */
  readonly clock: ClockScope;
  /** Ends the process with `code` (when it wakes, if it sleeps in D). */
  exit(code: number): void;
  /**
   * Starts a child in its process group and cgroup, with its environment (and `spec.env`
   * over it), or with `spec.env` alone when `clearEnv` (as `env -i` does).
   */
  fork(
    spec: Omit<SimProcSpec, "ppid" | "pgid" | "newGroup" | "pid" | "cgroup"> & {
      clearEnv?: boolean | undefined;
    },
  ): ProcHandle;
  /** Runs `fn` with its exit when it dies, however it dies. */
  onDeath(fn: (exit: ProcExit) => void): void;
}

/** One delivered (or refused) signal, with the processes that received it. */
export interface SimSignalRecord {
  at: number;
  /** `cgroup`: a SIGKILL to `id` as one member of a cgroup killed whole (`Containment.kill`). */
  target: "pid" | "group" | "cgroup";
  id: number;
  signal: Signal;
  outcome: SignalOutcome;
  /** Processes the signal reached (none for signal 0, ESRCH and EPERM). */
  receivers: { pid: number; label: string | undefined }[];
}

/** A simulated process as the simulation sees it (more than `ProcInfo` shows). */
export interface SimProcess {
  readonly pid: number;
  ppid: number;
  pgid: number;
  readonly uid: number;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly label: string | undefined;
  readonly cgroup: string | undefined;
  state: "sleeping" | "disk-sleep" | "zombie";
}

interface Proc extends SimProcess {
  readonly spec: SimProcSpec;
  kills: number;
  /** Signals that arrived during disk sleep, acted on at waking. */
  pendingTerm: boolean;
  pendingKill: boolean;
  /** Its own exit came due during disk sleep: it exits on waking, with this. */
  pendingExit: ProcExit | undefined;
  /** Its program's timers that came due during disk sleep. */
  held: (() => void)[];
  /** Its program's clock, and what runs when it dies. */
  scope: ClockScope | undefined;
  deathHooks: ((exit: ProcExit) => void)[];
  exiting: boolean;
  resolveExit: (exit: ProcExit) => void;
}

/** What `new SimProcs` takes: its clock, and the pids and uid it hands out. */
export interface SimProcsOptions {
  clock: Clock;
  /** The simulation's own pid (default 100); it is in the table and is never a new pid. */
  selfPid?: number | undefined;
  /** The simulation's uid (default 1000). */
  uid?: number | undefined;
  /** First pid handed out (default 300); pids then count up, skipping those in use. */
  firstPid?: number | undefined;
  /** Programs by command (`argv[0]`): `spawn` runs them (see {@link SimProgram}). */
  programs?: Readonly<Record<string, SimProgram>> | undefined;
  /** Offer `containment`, cgroups under `/sim/cgroup/baton` (default: none, as on a machine without cgroup v2). */
  cgroups?: boolean | undefined;
}

/**
 * A simulated process table on a virtual clock, implementing the Procs port. Processes have
 * pids, parents, groups, owners, argv and environment; each follows its {@link SimProcSpec}:
 * exits on TERM or ignores it, needs one or more KILLs, sleeps in D (signals wait until it
 * wakes), exits by itself, leaves its group with setsid, stays a zombie until reaped. A freed
 * pid can be taken again (`start({ pid })`), a group whose id now belongs to another user's
 * processes answers EPERM. Deterministic: everything happens through the given clock, in the
 * order it was scheduled. Every signal is recorded in `signals` with who received it.
 * `spawn` runs a {@link SimProgram} when one is registered for the command. With `cgroups`,
 * `containment` keeps cgroups as Linux does: a process is in its parent's, whatever group
 * or environment it moves to, and a zombie has left it.
 *
 * @example
 * ```ts
 * const procs = new SimProcs({ clock: nodeClock() });
 * const rank = procs.start({ argv: ["python", "train.py"], newGroup: true, onTerm: "ignore" });
 * procs.signalGroup(rank.pid, "SIGTERM"); // ignored
 * procs.signalGroup(rank.pid, "SIGKILL");
 * (await rank.exited).signal; // "SIGKILL"
 * ```
 */
export class SimProcs implements Procs {
  readonly selfPid: number;
  readonly uid: number;
  readonly signals: SimSignalRecord[] = [];
  readonly containment: Containment | undefined;
  protected readonly clock: Clock;
  private readonly table = new Map<number, Proc>();
  /** `processes()`, until the table changes. */
  private inPidOrder: readonly SimProcess[] | undefined;
  /** The cgroups `containment` made and has not removed. */
  private readonly cgroups = new Set<string>();
  private nextPid: number;
  private readonly programs: Readonly<Record<string, SimProgram>>;

  constructor(options: SimProcsOptions) {
    this.clock = options.clock;
    this.programs = options.programs ?? {};
    this.selfPid = options.selfPid ?? 100;
    this.uid = options.uid ?? 1000;
    this.nextPid = options.firstPid ?? 300;
    this.containment = options.cgroups ? this.contain() : undefined;
    this.add({ ppid: 0, uid: 0, argv: ["/sbin/init"], onTerm: "ignore" }, 1, 1);
    this.add({ ppid: 1, argv: ["node", "baton"], onTerm: "ignore" }, this.selfPid, 1);
  }

  /** Starts a process that follows `spec`; returns its handle. */
  start(spec: SimProcSpec): ProcHandle {
    const pid = spec.pid ?? this.allocatePid();
    if (!this.isFree(pid)) {
      throw new Error(`simulated pid ${pid} is in use (as a pid or a process group id)`);
    }
    const ppid = spec.ppid ?? this.selfPid;
    const pgid = spec.newGroup ? pid : (spec.pgid ?? this.table.get(ppid)?.pgid ?? 1);
    const proc = this.add(spec, pid, pgid);
    const at = (ms: number | undefined, fn: () => void) => {
      if (ms === undefined) return;
      this.clock.setTimeout(() => {
        if (this.current(proc)) fn();
      }, ms);
    };
    at(spec.exitAfterMs, () => this.exitSelf(proc, 0));
    at(spec.setsidAfterMs, () => {
      if (proc.pgid !== proc.pid) proc.pgid = proc.pid;
    });
    if (spec.diskSleep !== undefined) {
      const { afterMs, forMs } = spec.diskSleep;
      at(afterMs, () => {
        proc.state = "disk-sleep";
        at(forMs, () => this.wake(proc));
      });
    }
    return { pid, exited: proc.exited };
  }

  /**
   * The Procs port's spawn: the program registered for `argv[0]`, or a process with the
   * default behaviour (exits on TERM).
   */
  spawn(options: SpawnOptions): ProcHandle {
    const { cgroup } = options;
    if (cgroup !== undefined && !this.cgroups.has(cgroup)) {
      // As `sh` fails to write to a cgroup that is gone, before the command runs.
      throw new Error(`cannot start ${JSON.stringify(options.argv[0])}: no cgroup ${cgroup}`);
    }
    const program = Object.hasOwn(this.programs, options.argv[0])
      ? this.programs[options.argv[0]]
      : undefined;
    const { main, ...behaviour } = program?.(options) ?? {};
    const handle = this.start({
      ...behaviour,
      argv: options.argv,
      env: options.env,
      newGroup: options.newGroup,
      ...(cgroup !== undefined && { cgroup }),
    });
    if (main !== undefined) main(this.self(this.table.get(handle.pid)!));
    return handle;
  }

  signal(pid: number, signal: Signal): SignalOutcome {
    if (!Number.isInteger(pid) || pid <= 0) {
      throw new Error(`cannot signal pid ${pid}: a pid is a positive integer`);
    }
    const proc = this.table.get(pid);
    const outcome = proc === undefined ? "ESRCH" : proc.uid !== this.uid ? "EPERM" : "ok";
    const receivers = outcome === "ok" && signal !== 0 ? [proc!] : [];
    this.record("pid", pid, signal, outcome, receivers);
    for (const receiver of receivers) this.deliver(receiver, signal);
    return outcome;
  }

  signalGroup(pgid: number, signal: Signal): SignalOutcome {
    if (!Number.isInteger(pgid) || pgid <= 1) {
      throw new Error(`cannot signal process group ${pgid}: a pgid is an integer above 1`);
    }
    const members = [...this.table.values()].filter((proc) => proc.pgid === pgid);
    const permitted = members.filter((proc) => proc.uid === this.uid);
    const outcome = members.length === 0 ? "ESRCH" : permitted.length === 0 ? "EPERM" : "ok";
    const receivers = outcome === "ok" && signal !== 0 ? permitted : [];
    this.record("group", pgid, signal, outcome, receivers);
    for (const receiver of receivers) this.deliver(receiver, signal);
    return outcome;
  }

  inspect(pid: number): ProcInfo | undefined {
    const proc = this.table.get(pid);
    if (proc === undefined) return undefined;
    return {
      pid,
      ppid: proc.ppid,
      pgid: proc.pgid,
      state: proc.state,
      argv: proc.state === "zombie" ? [] : [...proc.argv],
    };
  }

  list(): ProcInfo[] {
    return [...this.table.keys()].sort((a, b) => a - b).map((pid) => this.inspect(pid)!);
  }

  environ(pid: number): Record<string, string> | undefined {
    const proc = this.table.get(pid);
    if (proc === undefined || proc.state === "zombie" || proc.uid !== this.uid) return undefined;
    return { ...proc.env };
  }

  /** The simulation's view of `pid` (owner, label), or undefined when there is none. */
  process(pid: number): SimProcess | undefined {
    return this.table.get(pid);
  }

  /**
   * Every process in the table, zombies included, in pid order: the same array until a process
   * is started or reaped (the rank-group check reads it after every step of a seed).
   */
  processes(): readonly SimProcess[] {
    this.inPidOrder ??= [...this.table.keys()]
      .sort((a, b) => a - b)
      .map((pid) => this.table.get(pid)!);
    return this.inPidOrder;
  }

  /** Containment on the table: the live members of a cgroup and of those below it. */
  private contain(): Containment {
    const inside = (cgroup: string, of: string | undefined) =>
      of !== undefined && (of === cgroup || of.startsWith(`${cgroup}/`));
    const members = (cgroup: string) =>
      this.processes()
        .filter((proc) => proc.state !== "zombie" && inside(cgroup, proc.cgroup))
        .map((proc) => proc.pid);
    return {
      create: (name) => {
        const cgroup = `/sim/cgroup/baton/${name}`;
        this.cgroups.add(cgroup);
        return cgroup;
      },
      members: (cgroup) => (this.cgroups.has(cgroup) ? members(cgroup) : undefined),
      kill: (cgroup) => {
        for (const pid of this.cgroups.has(cgroup) ? members(cgroup) : []) {
          const proc = this.table.get(pid)!;
          this.record("cgroup", pid, "SIGKILL", "ok", [proc]);
          this.deliver(proc, "SIGKILL");
        }
        return true;
      },
      list: () => [...this.cgroups],
      remove: (cgroup) => {
        if (members(cgroup).length > 0) return false;
        for (const made of this.cgroups) if (inside(cgroup, made)) this.cgroups.delete(made);
        return true;
      },
    };
  }

  private add(spec: SimProcSpec, pid: number, pgid: number): Proc & { exited: Promise<ProcExit> } {
    let resolveExit!: (exit: ProcExit) => void;
    const exited = new Promise<ProcExit>((resolve) => {
      resolveExit = resolve;
    });
    const proc = {
      pid,
      ppid: spec.ppid ?? this.selfPid,
      pgid,
      uid: spec.uid ?? this.uid,
      argv: [...spec.argv],
      env: { ...spec.env },
      label: spec.label,
      cgroup: spec.cgroup ?? this.table.get(spec.ppid ?? this.selfPid)?.cgroup,
      state: "sleeping" as SimProcess["state"],
      spec,
      kills: 0,
      pendingTerm: false,
      pendingKill: false,
      pendingExit: undefined,
      held: [],
      scope: undefined,
      deathHooks: [],
      exiting: false,
      resolveExit,
      exited,
    };
    this.table.set(pid, proc);
    this.inPidOrder = undefined;
    return proc;
  }

  /** Whether `proc` is still the live process it was when a timer was set. */
  private current(proc: Proc): boolean {
    return this.table.get(proc.pid) === proc && proc.state !== "zombie";
  }

  private isFree(pid: number): boolean {
    if (this.table.has(pid)) return false;
    for (const proc of this.table.values()) if (proc.pgid === pid) return false;
    return true;
  }

  private allocatePid(): number {
    while (!this.isFree(this.nextPid)) this.nextPid++;
    return this.nextPid++;
  }

  private record(
    target: SimSignalRecord["target"],
    id: number,
    signal: Signal,
    outcome: SignalOutcome,
    receivers: Proc[],
  ): void {
    this.signals.push({
      at: this.clock.now(),
      target,
      id,
      signal,
      outcome,
      receivers: receivers.map((proc) => ({ pid: proc.pid, label: proc.label })),
    });
  }

  private deliver(proc: Proc, signal: Signal): void {
    if (proc.state === "zombie" || signal === 0) return;
    if (proc.state === "disk-sleep") {
      if (signal === "SIGKILL") proc.pendingKill = true;
      else proc.pendingTerm = true;
      return;
    }
    if (signal === "SIGKILL") {
      proc.kills++;
      if (proc.kills >= (proc.spec.killsToDie ?? 1)) this.die(proc, { code: null, signal });
      return;
    }
    if ((proc.spec.onTerm ?? "exit") === "ignore" || proc.exiting) return;
    proc.exiting = true;
    this.clock.setTimeout(() => {
      if (this.current(proc)) this.die(proc, { code: null, signal });
    }, proc.spec.termExitMs ?? 0);
  }

  private wake(proc: Proc): void {
    proc.state = "sleeping";
    const { pendingTerm, pendingKill, pendingExit, held } = proc;
    proc.pendingTerm = false;
    proc.pendingKill = false;
    proc.pendingExit = undefined;
    proc.held = [];
    if (pendingKill) this.deliver(proc, "SIGKILL");
    if (pendingTerm && this.current(proc)) this.deliver(proc, "SIGTERM");
    if (pendingExit !== undefined && this.current(proc)) this.die(proc, pendingExit);
    for (const fn of held) if (this.current(proc)) fn();
  }

  /** The process ends itself with `code`, or will when it wakes from D. */
  private exitSelf(proc: Proc, code: number): void {
    if (!this.current(proc)) return;
    if (proc.state === "disk-sleep") proc.pendingExit ??= { code, signal: null };
    else this.die(proc, { code, signal: null });
  }

  /** `proc` as its program sees itself, with a clock that stops in D and dies with it. */
  private self(proc: Proc): SimSelf {
    const procs = this;
    const timers = new Set<unknown>();
    let alive = true;
    const scope: ClockScope = {
      now: () => procs.clock.now(),
      setTimeout(fn, ms) {
        if (!alive) return undefined;
        const handle = procs.clock.setTimeout(() => {
          timers.delete(handle);
          if (!procs.current(proc)) return;
          if (proc.state === "disk-sleep") proc.held.push(() => fn());
          else fn();
        }, ms);
        timers.add(handle);
        return handle;
      },
      clearTimeout(handle) {
        if (timers.delete(handle)) procs.clock.clearTimeout(handle);
      },
      kill() {
        alive = false;
        for (const handle of timers) procs.clock.clearTimeout(handle);
        timers.clear();
      },
      get alive() {
        return alive;
      },
    };
    proc.scope = scope;
    return {
      pid: proc.pid,
      env: proc.env,
      clock: scope,
      exit: (code) => this.exitSelf(proc, code),
      fork: ({ clearEnv, ...spec }) =>
        this.start({
          ...spec,
          env: clearEnv ? { ...spec.env } : { ...proc.env, ...spec.env },
          ppid: proc.pid,
          pgid: proc.pgid,
        }),
      onDeath: (fn) => {
        proc.deathHooks.push(fn);
      },
    };
  }

  private die(proc: Proc, exit: ProcExit): void {
    proc.state = "zombie";
    proc.scope?.kill();
    for (const hook of proc.deathHooks) hook(exit);
    for (const child of this.table.values()) if (child.ppid === proc.pid) child.ppid = 1;
    proc.resolveExit(exit);
    const reap = () => {
      if (this.table.get(proc.pid) !== proc) return;
      this.table.delete(proc.pid);
      this.inPidOrder = undefined;
    };
    const zombieMs = proc.spec.zombieMs ?? 0;
    if (zombieMs > 0) this.clock.setTimeout(reap, zombieMs);
    else reap();
  }
}
