/**
 * Ports: one interface per kind of effect. Machines and the simulation see the world only
 * through these; `src/runtime` holds the Node implementations, `src/sim` the simulated ones.
 *
 * @example
 * ```ts
 * const clock: Clock = nodeClock();
 * const handle = clock.setTimeout(() => console.log("tick"), 1000);
 * clock.clearTimeout(handle);
 * ```
 */

/** Time. Compatible with XState's `clock` option, plus `now()` in milliseconds. */
export interface Clock {
  now(): number;
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /**
   * Optional: starts a timer that has neither fired nor been cleared over, due its own delay
   * from now, as `clearTimeout` and then `setTimeout` with its function and delay would; returns
   * its handle from then on. A clock without it gets exactly those two calls. Node's clock
   * re-arms the timer in place (`Timeout.refresh`), where clearing a worker's silence timer and
   * setting a new one on every frame cost about 4% of a `baton worker`'s CPU.
   */
  restartTimeout?(handle: unknown): unknown;
}

/** Randomness and ids. One seeded source in the simulation, `crypto` in Node. */
export interface Entropy {
  /** A float in [0, 1). */
  random(): number;
  /** A URL-safe id of `size` characters (default 21). */
  id(size?: number): string;
  /** `n` random bytes (nonces, secrets). */
  bytes(n: number): Uint8Array;
}

/**
 * One end of a message connection: text frames in order, a close with a code and reason,
 * and a liveness probe. `onClose` fires exactly once, whichever side closed.
 */
export interface Link {
  /** Unique among the links of one listener (or one client). */
  readonly id: string;
  /** Where the other end is, for logs ("127.0.0.1:51234", "memory:3"). */
  readonly remote: string;
  /** Bytes queued for sending and not yet written; used for backpressure. */
  readonly bufferedAmount: number;
  /** The largest frame this end accepts (UTF-8 bytes); larger ones close the link with 4004. */
  readonly maxFrameBytes: number;
  send(frame: string): void;
  close(code: number, reason: string): void;
  /** Ask the other end to prove it is alive; an answer arrives through `onPong`. */
  ping(): void;
  onFrame(handler: (frame: string) => void): void;
  onPong(handler: () => void): void;
  /**
   * The other end pinged this one (it is still there). The link answers with a pong by
   * itself; handlers only listen.
   */
  onPing(handler: () => void): void;
  onClose(handler: (code: number, reason: string) => void): void;
  /**
   * The other end has proved who it is (the coordinator accepted a worker's hello): lifts
   * the listener's `maxHandshakeBytes`. Only a Net that strangers can reach (WebSocket) has
   * that budget; on the others it does nothing. Required, so that a `Link` wrapping another
   * (to time or log its frames) cannot forget to pass it on: the wrapped link would close
   * once its worker had sent 64 KiB.
   */
  admit(): void;
}

/** How `Net.listen` listens (`connect` reads `maxFrameBytes` only). */
export interface ListenOptions {
  /** Frames larger than this are refused before parsing and the link closed with 4004. */
  maxFrameBytes?: number | undefined;
  /**
   * The most bytes a link may receive before `admit()`; past them it closes with 4004 and
   * reads no more, so a stranger costs the listener this much memory, not a whole frame.
   * Absent: no budget of its own (`maxFrameBytes` still applies).
   */
  maxHandshakeBytes?: number | undefined;
}

/** Where a `Net` accepts connections: what `net.listen` gives. */
export interface Listener {
  /** The address clients connect to (for ws: `ws://127.0.0.1:PORT`). */
  readonly address: string;
  onConnection(handler: (link: Link) => void): void;
  /** Stops accepting and closes every open link with code 1001. */
  close(): Promise<void>;
}

/** Networking: a listener for the coordinator, connect for workers. */
export interface Net {
  listen(address: string, options?: ListenOptions): Promise<Listener>;
  connect(address: string, options?: ListenOptions): Promise<Link>;
}

/** Signals the engine sends. `0` probes existence without signalling. */
export type Signal = "SIGTERM" | "SIGKILL" | "SIGINT" | 0;

/** What a signal call did: delivered, no such process (group), or not permitted. */
export type SignalOutcome = "ok" | "ESRCH" | "EPERM";

/** A process's state as the process table reports it. A zombie counts as dead. */
export type ProcState = "running" | "sleeping" | "disk-sleep" | "stopped" | "zombie" | "dead";

/** One entry of the process table (`Procs.inspect`, `Procs.list`). */
export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  state: ProcState;
  argv: string[];
  /**
   * When the process started, in ms since the epoch by this machine's clock, to within about
   * a second; undefined when the table does not say. A pid a file recorded and a process
   * that started after that record are two programs: the pid was reused.
   */
  startedAt?: number | undefined;
  /**
   * True while the process runs its exit, before it is a zombie: the kernel may have released
   * its memory already, and with it its arguments and environment, which then read as empty
   * or not at all, whatever they were. Absent when not exiting, or when the table does not say.
   */
  exiting?: boolean | undefined;
  /**
   * The kernel's name for its program (the `comm` of `/proc/PID/stat`: the name of the file it
   * executed, cut to 15 bytes), which it keeps from its exec until it is reaped, when its
   * arguments are gone (running its exit, a zombie): what names it then (`programName`).
   * Absent when the table does not say.
   */
  name?: string | undefined;
}

/** What `Procs.spawn` starts, and how. */
export interface SpawnOptions {
  argv: [string, ...string[]];
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
  /** File that receives stdout and stderr; when absent they are inherited. */
  logFile?: string | undefined;
  /** Start the process as the leader of a new process group (setsid-like `detached`). */
  newGroup?: boolean | undefined;
  /**
   * A cgroup made by {@link Containment.create} to start the process in, before it runs a
   * line of its own: it and everything it starts stay members, whatever process group,
   * session or environment they move to.
   */
  cgroup?: string | undefined;
}

/** How a process ended: its exit code, or the signal that ended it. */
export interface ProcExit {
  code: number | null;
  signal: string | null;
}

/** A process `Procs.spawn` started. */
export interface ProcHandle {
  readonly pid: number;
  /**
   * The size of `logFile` when it was opened for this process: what the process writes comes
   * after (a log a relaunch appends to holds the earlier runs' output before). Absent without
   * a log file, or where the port does not know it (the simulation's).
   */
  readonly logStart?: number | undefined;
  /** Settles when the process has exited and been reaped. */
  readonly exited: Promise<ProcExit>;
}

/**
 * Containment: a kernel-kept set of processes (a cgroup v2 directory on Linux) that a process
 * started in it cannot leave by `setsid` or by emptying its environment, so teardown and the
 * reaper find every descendant of a rank, however far it strayed.
 */
export interface Containment {
  /**
   * Makes an empty cgroup for `name` (a deployment's cgroup name; or a local worker pool's,
   * `workerPoolCgroupName`, and `<pool>/<worker>` below it) and checks that a process can be
   * moved into it, once: one below a cgroup it checked is only made (the node port moves this
   * process in and back to check, so it passes through a pool's cgroup, not each worker's);
   * returns its handle (the node port: its absolute path). Throws when this machine does not
   * let this user do so, saying why.
   */
  create(name: string): string;
  /**
   * Pids of the live processes in the cgroup and in any cgroup below it (a zombie has left),
   * or undefined when the cgroup does not exist (removed, or the machine restarted).
   */
  members(cgroup: string): number[] | undefined;
  /** Removes the cgroup (and any below it); false while a process is still in it. */
  remove(cgroup: string): boolean;
  /**
   * The handles of the cgroups there are now of every name `create` could have made
   * (the node port: the cgroups in the `baton` folder below this process's own; not those
   * below them), for the reaper to find the empty ones left by deployments that are gone, and
   * a local pool those of coordinators that are gone.
   */
  list(): string[];
  /**
   * SIGKILL, at once, to every process in the cgroup and in those below it, one forking as it
   * is killed included (the node port: `cgroup.kill`); true when sent or when the cgroup is
   * gone, false where the kernel has no such file (before Linux 5.14): the caller then
   * signals the members by pid. Throws `CGROUP_HOLDS_THIS_PROCESS`, killing nothing, when this
   * process is a member.
   */
  kill(cgroup: string): boolean;
}

/** Processes: spawn, signal by pid or group, and read the process table. */
export interface Procs {
  readonly selfPid: number;
  /**
   * Where ranks can be contained; undefined where this machine offers no cgroup v2 (absent,
   * or present and undefined, so that an implementation may hold it in a field either way).
   */
  readonly containment?: Containment | undefined;
  spawn(options: SpawnOptions): ProcHandle;
  signal(pid: number, signal: Signal): SignalOutcome;
  signalGroup(pgid: number, signal: Signal): SignalOutcome;
  /** The process table's entry for `pid`, or undefined when there is none. */
  inspect(pid: number): ProcInfo | undefined;
  /** Every process in the table. */
  list(): ProcInfo[];
  /**
   * The environment `pid` was started with, or undefined when it cannot be read: no such
   * process, a zombie, or another user's process.
   */
  environ(pid: number): Record<string, string> | undefined;
}

/** Who owns a file: its user id, and whether that is the user this process runs as. */
export interface FileOwner {
  uid: number;
  self: boolean;
}

/** How `Files.createExclusive` makes a file. */
export interface CreateOptions {
  /**
   * Whether the file's content must survive a power loss or a crash of the machine's kernel
   * (default true): its data is synced to the disk (`fsync`, over ssh `sync`) before it gets
   * its name, which costs 1–16 ms a create on a local disk here (measured under different loads). With false it is not: the file still
   * appears whole to every reader and a process killed at any moment still leaves it whole or
   * not there, but after the machine itself went down it may be there empty. For a file whose
   * content is worth nothing once the machine went down, and whose readers take an empty one
   * for damaged: a lock or lease (its holder died with the machine; it is renewed whole by
   * `writeAtomic`, and one found damaged is taken over once stale), a file made and removed at
   * once. Never for what outlives its process (a kept secret, a store's format marker).
   */
  durable?: boolean | undefined;
}

/** Files: atomic writes (temp + fsync + rename, mode 0600), reads, listing, removal. */
export interface Files {
  /**
   * Writes `path` whole or not at all, through a temp file beside it named
   * `.NAME.<digits>[.<hex>].tmp` (see `atomicTempTarget`). A writer killed mid-write can
   * leave that temp file behind, never a torn `path`; the sweep of its folder removes it
   * (`removeAbandonedTemps`, `ResultStore.loadAll`, a deployment's clear).
   */
  writeAtomic(path: string, data: string | Uint8Array, mode?: number): Promise<void>;
  /**
   * Creates `path` holding `data` only if nothing is there (parent directories as needed):
   * true when this call created it, false when it existed. Of two callers at once, exactly one
   * gets true: a launcher claims a deployment's name with it. The file appears whole, with its
   * mode: it is written under a temp name beside it (as `writeAtomic`'s) and linked to `path`
   * (`link(2)`, which fails when the name is taken, unless the name is that very file: a link
   * NFS made and answered again), so no reader ever finds it empty or partly written, and a
   * writer killed at any moment leaves it whole or not there. The temp file goes on every
   * path; one a writer killed right after the link leaves is a second name of the file, which
   * whoever removes the file (a takeover, `baton reap`) removes with it, and the sweep of its
   * folder removes any other one a killed writer left (`removeAbandonedTemps`). On a file system
   * without hard links (vfat, some FUSE) the file is created with `O_EXCL` and then written,
   * so there a reader may find it empty for a moment. A write that fails (a full disk) leaves
   * nothing behind. Its data reaches the disk before it gets its name, so it survives a power
   * loss whole too, unless `options.durable` is false (see {@link CreateOptions}).
   */
  createExclusive(
    path: string,
    data: string,
    mode?: number,
    options?: CreateOptions,
  ): Promise<boolean>;
  /** The file's text, or undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
  /**
   * The texts of many small files, in order (undefined for one that does not exist): a
   * rerun reads one file per stored result. The node port yields to the event loop once,
   * then reads them all synchronously, about five times faster than as many `read`s, so
   * callers pass a few hundred at a time.
   */
  readMany(paths: readonly string[]): Promise<(string | undefined)[]>;
  /** Names (not paths) of the entries of `dir`; empty when `dir` does not exist. */
  list(dir: string): Promise<string[]>;
  /**
   * When `path` was last written, in ms since the epoch by the clock of the machine that holds
   * it; undefined when it does not exist. It tells a temp file a dead writer left behind from
   * one still being written.
   */
  modifiedAt(path: string): Promise<number | undefined>;
  /** Removes a file; no error when it is already gone. */
  remove(path: string): Promise<void>;
  /**
   * Removes the directory `dir` if it is empty: true when this call removed it, false when
   * something is in it (it is left as it is) or it is gone already.
   */
  removeDir(dir: string): Promise<boolean>;
  /**
   * Who owns `path` (a file or a directory), or undefined when it does not exist: what tells
   * a file another user left in a shared directory, which this user may not read or remove.
   */
  owner(path: string): Promise<FileOwner | undefined>;
  /**
   * Whether `a` and `b` are one file or directory (symlinks followed: one device and inode),
   * false when either does not exist: what tells a state dir reached through a symlink from
   * another.
   */
  sameFile(a: string, b: string): Promise<boolean>;
  /**
   * Makes `dir` and the folders above it that are not there (`mkdir -p`): the topmost folder
   * this call made, so a caller that fails can remove what it made and no more; undefined when
   * it made none, or cannot tell (over ssh).
   */
  mkdirp(dir: string): Promise<string | undefined>;
}
