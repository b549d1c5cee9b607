import type { ParseArgsConfig } from "node:util";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";

/** A command's flags, as `parseArgs` takes them. */
type Flags = NonNullable<ParseArgsConfig["options"]>;

/** What `baton help` says of a command, and the one table of its flags. */
export interface CommandEntry {
  /** What follows the command's name in `baton help`'s list (`<graph module>`), if anything. */
  readonly operands: string;
  /** What the command does, as a verb phrase: "run a graph of jobs". */
  readonly does: string;
  /**
   * How it is called, the first line of its `--help` after "usage: ": what a refusal of its
   * arguments quotes too (`baton reap extra`).
   */
  readonly usage: string;
  readonly flags: Flags;
  /**
   * Other tools' names for one of its flags, by the name written (without dashes): an unknown
   * flag of that name is told the command's own (`baton launch --nproc-per-node 4`: did you
   * mean --world?), whatever its spelling's distance from it.
   */
  readonly otherNames?: Readonly<Record<string, string>>;
}

/**
 * Every command of `baton`: its operands and what it does, for `baton help`, and its flags,
 * which the command parses (`parseFlags`) and which a mistake at another command names
 * (`baton run --seeds 1..10`: --seeds is for baton sim). A leaf module, with no command's
 * code, so that reading it loads none: `main.ts` imports a command's module only when that
 * command runs. A new flag is one more line here, in its command's table.
 *
 * @example
 * ```ts
 * parseFlags("reap", { args: argv, options: commandCatalog.reap.flags });
 * ```
 */
export const commandCatalog = {
  run: {
    operands: "<graph module>",
    does: "run a graph of jobs",
    usage: "baton run <graph module> [options]",
    flags: {
      inspect: { type: "string" },
      "inspect-unreachable-after": { type: "string" },
      ui: { type: "boolean", default: false },
      "ui-port": { type: "string" },
      "ui-keep": { type: "boolean", default: false },
      jobs: { type: "string" },
      workers: { type: "string" },
      listen: { type: "string" },
      connect: { type: "string" },
      "secret-file": { type: "string" },
      store: { type: "string" },
      force: { type: "boolean", default: false },
      "store-full-wait": { type: "string" },
      "store-read-only": { type: "boolean", default: false },
      "fail-fast": { type: "boolean", default: false },
      "dry-run": { type: "boolean", default: false },
      "no-store": { type: "boolean", default: false },
      "in-process": { type: "boolean", default: false },
      "handler-thread": { type: "boolean", default: false },
      "abort-grace": { type: "string" },
      slurm: { type: "boolean", default: false },
      "max-workers": { type: "string" },
      partition: { type: "string" },
      "slurm-resources": { type: "string" },
      "slurm-opt": { type: "string", multiple: true },
      "slurm-unreachable-after": { type: "string" },
      "slurm-idle-exit": { type: "string" },
      json: { type: "boolean", default: false },
      "log-level": { type: "string", default: "warn" },
      "keep-logs": { type: "string" },
      "keep-ended-logs": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  },
  worker: {
    operands: "",
    does: "run jobs for a coordinator",
    usage: "baton worker --connect ws://HOST:PORT --jobs FILE --secret-file FILE [options]",
    flags: {
      connect: { type: "string" },
      "secret-file": { type: "string" },
      jobs: { type: "string" },
      name: { type: "string" },
      cpus: { type: "string" },
      gpus: { type: "string" },
      memory: { type: "string" },
      "log-level": { type: "string", default: "warn" },
      "handler-thread": { type: "boolean", default: false },
      "silence-limit-ms": { type: "string" },
      "welcome-timeout-ms": { type: "string" },
      "retry-for": { type: "string" },
      "idle-exit": { type: "string" },
      "abort-grace": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  },
  sim: {
    operands: "",
    does: "simulate the system from seeds, with faults",
    usage: "baton sim [GRAPH --handlers SIM] [options]",
    flags: {
      seed: { type: "string" },
      seeds: { type: "string" },
      faults: { type: "string" },
      "fault-list": { type: "string" },
      jobs: { type: "string" },
      handlers: { type: "string" },
      workers: { type: "string" },
      world: { type: "string" },
      "faults-within": { type: "string" },
      until: { type: "string" },
      "fail-fast": { type: "boolean" },
      plant: { type: "string", multiple: true },
      threads: { type: "string" },
      "check-determinism": { type: "boolean" },
      replay: { type: "string" },
      trace: { type: "boolean" },
      "no-shrink": { type: "boolean" },
      json: { type: "boolean" },
      ui: { type: "boolean" },
      "ui-port": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  },
  launch: {
    operands: "-- cmd …",
    does: "run N ranks of a command, like torchrun",
    usage: "baton launch --world N [--hosts H,…] [options] -- command [args…]",
    flags: {
      world: { type: "string" },
      hosts: { type: "string" },
      "ssh-config": { type: "string" },
      "remote-state-dir": { type: "string" },
      "remote-cwd": { type: "string" },
      "master-addr": { type: "string" },
      "master-port": { type: "string" },
      "state-dir": { type: "string" },
      name: { type: "string" },
      "grace-ms": { type: "string" },
      "load-timeout-ms": { type: "string" },
      "time-limit-ms": { type: "string" },
      "no-contain": { type: "boolean", default: false },
      "keep-ended-logs": { type: "string" },
      ui: { type: "boolean", default: false },
      "ui-port": { type: "string" },
      "ui-keep": { type: "boolean", default: false },
      "log-level": { type: "string", default: "warn" },
      help: { type: "boolean", short: "h", default: false },
    },
    // torchrun's, mpirun's and srun's names for the number of processes and where they run.
    otherNames: {
      "nproc-per-node": "world",
      nproc_per_node: "world",
      nprocs: "world",
      n: "world",
      np: "world",
      ntasks: "world",
      ranks: "world",
      "world-size": "world",
      world_size: "world",
      nnodes: "hosts",
    },
  },
  reap: {
    operands: "",
    does: "stop orphaned ranks, cancel dead runs' Slurm jobs",
    usage: "baton reap [--state-dir DIR] [options]",
    flags: {
      "state-dir": { type: "string" },
      "grace-ms": { type: "string" },
      "ssh-config": { type: "string" },
      json: { type: "boolean", default: false },
      "log-level": { type: "string", default: "warn" },
      help: { type: "boolean", short: "h", default: false },
    },
  },
  status: {
    operands: "",
    does: "list runs, orphaned, live and ended rank groups",
    usage: "baton status [--state-dir DIR] [--json]",
    flags: {
      "state-dir": { type: "string", default: DEFAULT_STATE_DIR },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  },
  viz: {
    operands: "[MACHINE]",
    does: "export state machines as Mermaid or JSON",
    usage: "baton viz [MACHINE] [options]",
    flags: {
      format: { type: "string" },
      out: { type: "string" },
      "update-docs": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  },
} as const satisfies Record<string, CommandEntry>;

/** The name of a command of `baton`. */
export type CommandName = keyof typeof commandCatalog;
