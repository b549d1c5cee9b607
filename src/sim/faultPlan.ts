import { argumentError } from "../argumentError.ts";
import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";
import { DEFAULT_DEAD_AFTER_MS } from "../machines/connection.ts";
import type { SimEntropy } from "./simEntropy.ts";
import { SIM_LIMITS } from "./simLimits.ts";
import { FAULT_HORIZON_MS } from "./simulateDefaults.ts";

/**
 * One fault, at a virtual time. `target` picks a worker connection among those open at that
 * moment (modulo their number), so a plan stays meaningful when it is shrunk.
 *
 * - `worker-crash`: the worker's end of its connection dies (reset); the pool replaces it.
 * - `reset`: the coordinator's end resets the connection.
 * - `partition`: nothing moves on the connection for `ms`.
 * - `half-open`: one end (`side`) loses the connection silently; the other learns when it
 *   next sends, or when the faults stop.
 * - `slow`: every frame takes `by` ms more for `ms`.
 * - `coordinator-crash`: the coordinator process (and its in-process workers) dies, comes
 *   back `ms` later and resumes from the store; `torn`: its unfinished writes are torn.
 * - `disk-stall`: the store's disk completes no fsync for `ms` (a hung network file system,
 *   a saturated disk): every write waits at its next fsync until the stall is over.
 * - `disk-full`: the store's disk refuses every write for `ms` (ENOSPC): each result the
 *   coordinator tries to store meanwhile is held and written again, no lease is granted
 *   until one is written, and no attempt is spent; a coordinator restarted meanwhile cannot
 *   open its store and is started again once there is room. Heavy profile only.
 * - `cancel`: an operator cancels the run (`run.cancel()`, Ctrl-C): nothing new starts, running
 *   jobs are aborted, the rest end as cancelled. Only in a plan you give (`cancel@AT`): no
 *   profile draws it.
 */
export type Fault =
  | { kind: "worker-crash"; at: number; target: number }
  | { kind: "reset"; at: number; target: number }
  | { kind: "partition"; at: number; target: number; ms: number }
  | { kind: "half-open"; at: number; target: number; side: "server" | "client" }
  | { kind: "slow"; at: number; ms: number; by: number }
  | { kind: "coordinator-crash"; at: number; ms: number; torn: boolean }
  | { kind: "disk-stall"; at: number; ms: number }
  | { kind: "disk-full"; at: number; ms: number }
  | { kind: "cancel"; at: number };

/** How many faults a simulation draws from its seed: none, the default mix, or more and harsher. */
export type FaultProfile = "none" | "default" | "heavy";
export const FAULT_PROFILES: readonly FaultProfile[] = ["none", "default", "heavy"];

const KINDS: readonly { kind: Fault["kind"]; weight: Record<FaultProfile, number> }[] = [
  { kind: "worker-crash", weight: { none: 0, default: 3, heavy: 3 } },
  { kind: "reset", weight: { none: 0, default: 2, heavy: 2 } },
  { kind: "partition", weight: { none: 0, default: 2, heavy: 3 } },
  { kind: "half-open", weight: { none: 0, default: 2, heavy: 2 } },
  { kind: "slow", weight: { none: 0, default: 2, heavy: 2 } },
  { kind: "coordinator-crash", weight: { none: 0, default: 1, heavy: 2 } },
  { kind: "disk-stall", weight: { none: 0, default: 1, heavy: 2 } },
  // Last, and not in the default profile, so that adding it left default plans as they were.
  { kind: "disk-full", weight: { none: 0, default: 0, heavy: 1 } },
  // No `cancel`: a drawn cancel would end most heavy seeds' runs before their later faults.
];

/** How many faults, and within how many virtual ms of the start. */
const SHAPE: Record<FaultProfile, { min: number; max: number; horizonMs: number }> = {
  none: { min: 0, max: 0, horizonMs: 0 },
  default: { min: 0, max: 4, horizonMs: FAULT_HORIZON_MS.default },
  heavy: { min: 4, max: 12, horizonMs: FAULT_HORIZON_MS.heavy },
};

/** Virtual ms within which `profile` starts the faults it draws: 20 s, heavy 40 s. */
export function faultHorizonMs(profile: FaultProfile): number {
  return SHAPE[profile].horizonMs;
}

/**
 * Draws a fault plan for `profile` from `entropy`, sorted by time: each fault starts within
 * the profile's first 20 s (heavy: 40 s) of virtual time, or within `withinMs` when given (a
 * graph of your own whose run is over in 3 s met few of them: `faultsWithin`).
 *
 * @example
 * ```ts
 * const faults = drawFaults(new SimEntropy(7).fork("faults"), "default");
 * formatFaults(faults); // "partition@5230:1+14000,worker-crash@9120:4"
 * ```
 */
export function drawFaults(entropy: SimEntropy, profile: FaultProfile, withinMs?: number): Fault[] {
  if (!FAULT_PROFILES.includes(profile)) {
    throw new ConfigError(
      `unknown fault profile "${profile}": give one of ${FAULT_PROFILES.join(", ")}, or a list of faults`,
    );
  }
  const shape = SHAPE[profile];
  const count = entropy.int(shape.min, shape.max);
  const total = KINDS.reduce((sum, k) => sum + k.weight[profile], 0);
  const faults: Fault[] = [];
  for (let i = 0; i < count; i++) {
    const roll = entropy.int(1, total);
    let sum = 0;
    const kind = KINDS.find((k) => {
      sum += k.weight[profile];
      return roll <= sum;
    })!.kind;
    const at = entropy.int(0, withinMs ?? faultHorizonMs(profile));
    const target = entropy.int(0, 63);
    switch (kind) {
      case "worker-crash":
      case "reset":
        faults.push({ kind, at, target });
        break;
      case "partition":
        faults.push({ kind, at, target, ms: entropy.int(1_000, 30_000) });
        break;
      case "half-open":
        faults.push({ kind, at, target, side: entropy.chance(0.5) ? "server" : "client" });
        break;
      case "slow":
        faults.push({ kind, at, ms: entropy.int(1_000, 10_000), by: entropy.int(50, 3_000) });
        break;
      case "coordinator-crash":
        faults.push({ kind, at, ms: entropy.int(100, 5_000), torn: entropy.chance(0.5) });
        break;
      case "disk-stall":
        // Up to twice the probe deadline, so a stall can outlast a silent worker.
        faults.push({ kind, at, ms: entropy.int(1_000, 2 * DEFAULT_DEAD_AFTER_MS) });
        break;
      case "disk-full":
        faults.push({ kind, at, ms: entropy.int(1_000, 20_000) });
        break;
    }
  }
  return faults.sort((a, b) => a.at - b.at);
}

/** When the last fault is over (0 without faults). */
export function faultsEnd(faults: readonly Fault[]): number {
  let end = 0;
  for (const f of faults) end = Math.max(end, f.at + ("ms" in f ? f.ms : 0));
  return end;
}

/**
 * A plan as text, for a command line: `kind@at[:target][+ms][/option]`, comma-separated
 * (`slow` writes its extra latency as the option, `coordinator-crash` `torn` or `clean`).
 * Throws a `ConfigError`, as `simulate` would, for what is no list of faults it can apply
 * (it wrote an unknown kind as nothing, and took `5` with a TypeError from inside).
 *
 * @example
 * ```ts
 * formatFaults([{ kind: "partition", at: 5000, target: 0, ms: 20000 }]); // "partition@5000:0+20000"
 * ```
 */
export function formatFaults(faults: readonly Fault[]): string {
  if (!Array.isArray(faults)) {
    throw argumentError(
      "formatFaults",
      "its faults",
      "a list of faults, such as a simulation's faults",
      faults,
    );
  }
  checkFaults("formatFaults", faults);
  return faults.map(formatFault).join(",");
}

function formatFault(f: Fault): string {
  switch (f.kind) {
    case "worker-crash":
    case "reset":
      return `${f.kind}@${f.at}:${f.target}`;
    case "partition":
      return `${f.kind}@${f.at}:${f.target}+${f.ms}`;
    case "half-open":
      return `${f.kind}@${f.at}:${f.target}/${f.side}`;
    case "slow":
      return `${f.kind}@${f.at}+${f.ms}/${f.by}`;
    case "coordinator-crash":
      return `${f.kind}@${f.at}+${f.ms}/${f.torn ? "torn" : "clean"}`;
    case "disk-stall":
    case "disk-full":
      return `${f.kind}@${f.at}+${f.ms}`;
    case "cancel":
      return `${f.kind}@${f.at}`;
  }
}

/** What each kind of fault has beside `kind` and `at`, and how a fault list writes it. */
const SHAPES: Record<Fault["kind"], { fields: readonly string[]; form: string }> = {
  "worker-crash": { fields: ["target"], form: "worker-crash@AT:TARGET" },
  reset: { fields: ["target"], form: "reset@AT:TARGET" },
  partition: { fields: ["target", "ms"], form: "partition@AT:TARGET+MS" },
  "half-open": { fields: ["target", "side"], form: "half-open@AT:TARGET/server or /client" },
  slow: { fields: ["ms", "by"], form: "slow@AT+MS/EXTRA_MS" },
  "coordinator-crash": { fields: ["ms", "torn"], form: "coordinator-crash@AT+MS/torn or /clean" },
  "disk-stall": { fields: ["ms"], form: "disk-stall@AT+MS" },
  "disk-full": { fields: ["ms"], form: "disk-full@AT+MS" },
  cancel: { fields: [], form: "cancel@AT" },
};

/**
 * What is wrong with `fault` as a `Fault`, or undefined when nothing is: an unknown kind, a
 * field its kind does not have or lacks, a time, length or extra latency that is not a whole
 * number of virtual ms up to `SIM_LIMITS.virtualMs`, a target that is not a whole number.
 * `listed`: the fault was read from a fault list, which writes `torn` as `/torn` or `/clean`
 * (its message said to give true or false, and refused `/true`).
 */
function faultProblem(fault: unknown, listed = false): string | undefined {
  if (typeof fault !== "object" || fault === null) return `is not a fault: ${String(fault)}`;
  const { kind, ...rest } = fault as Record<string, unknown>;
  if (!Object.hasOwn(SHAPES, kind as string)) {
    return `has an unknown kind "${String(kind)}"; give one of ${Object.keys(SHAPES).join(", ")}`;
  }
  const { fields } = SHAPES[kind as Fault["kind"]];
  const extra = Object.keys(rest).filter((name) => name !== "at" && !fields.includes(name));
  if (extra.length > 0) return `(${kind}) takes no ${extra.join(" or ")}`;
  const virtualMs = (v: unknown) =>
    Number.isInteger(v) && (v as number) >= 0 && (v as number) <= SIM_LIMITS.virtualMs;
  const checks: Record<string, [(v: unknown) => boolean, string]> = {
    at: [virtualMs, `a whole number of virtual ms from 0 to ${SIM_LIMITS.virtualMs}`],
    ms: [virtualMs, `a whole number of virtual ms from 0 to ${SIM_LIMITS.virtualMs}`],
    by: [virtualMs, `a whole number of virtual ms from 0 to ${SIM_LIMITS.virtualMs}`],
    target: [(v) => Number.isSafeInteger(v) && (v as number) >= 0, "a whole number of 0 or more"],
    side: [(v) => v === "server" || v === "client", '"server" or "client"'],
    torn: [(v) => typeof v === "boolean", listed ? "/torn or /clean" : "true or false"],
  };
  for (const name of ["at", ...fields]) {
    const [valid, what] = checks[name]!;
    if (!(name in rest)) return `(${kind}) lacks ${name}: give ${what}`;
    if (!valid(rest[name])) {
      return `(${kind}) ${name} must be ${what}, not ${preview(rest[name])}`;
    }
  }
  return undefined;
}

/**
 * Refuses, with a `ConfigError` naming `where` and the fault, a plan that is not a list of
 * `Fault`s the simulation can apply: such a fault used to be skipped without a word (an
 * unknown kind), crash the simulation (a partition without a target) or, past 8.64e15 ms,
 * fail the seed with a RangeError.
 *
 * @example
 * ```ts
 * checkFaults("simulate", [{ kind: "partition", at: 5000, target: 0, ms: 20000 }]); // fine
 * checkFaults("simulate", [{ kind: "partition", at: 5000 }]);
 * // ConfigError: simulate: faults[0] (partition) lacks target: give a whole number of 0 or more
 * ```
 */
export function checkFaults(where: string, faults: unknown): asserts faults is readonly Fault[] {
  if (!Array.isArray(faults)) {
    // A failure prints its plan as text, which a caller pastes in as it is.
    const asText =
      typeof faults === "string" && faults.includes("@")
        ? `; a fault list as a failure prints it goes through parseFaults: faults: parseFaults(${JSON.stringify(faults)})`
        : "";
    throw new ConfigError(
      `${where}: faults must be one of ${FAULT_PROFILES.join(", ")} or a list of faults, not ${preview(faults)}${asText}`,
    );
  }
  faults.forEach((fault, i) => {
    const problem = faultProblem(fault);
    if (problem !== undefined) throw new ConfigError(`${where}: faults[${i}] ${problem}`);
  });
}

/**
 * The inverse of {@link formatFaults}; throws a `ConfigError` naming a malformed entry, one
 * with parts its kind does not take, or a time past `SIM_LIMITS.virtualMs`, or saying it takes
 * text when given anything else.
 *
 * @example
 * ```ts
 * parseFaults("partition@5000:0+20000,worker-crash@11634:3");
 * // [{ kind: "partition", at: 5000, target: 0, ms: 20000 }, { kind: "worker-crash", at: 11634, target: 3 }]
 * await simulate({ seed: 7, faults: parseFaults("partition@5000:0+20000") });
 * ```
 */
export function parseFaults(text: string): Fault[] {
  if (typeof text !== "string") {
    throw argumentError(
      "parseFaults",
      "its fault list",
      'text such as "partition@5000:0+20000"',
      text,
    );
  }
  if (text.trim() === "") return [];
  return text.split(",").map((entry) => {
    const m = /^([a-z-]+)@(\d+)(?::(\d+))?(?:\+(\d+))?(?:\/([a-z0-9]+))?$/.exec(entry.trim());
    if (!m) {
      throw new ConfigError(
        `bad fault "${entry}": expected kind@at[:target][+ms][/option], e.g. partition@5000:1+20000`,
      );
    }
    const [, kind, at, target, ms, option] = m;
    const fault: Record<string, unknown> = { kind, at: Number(at) };
    if (target !== undefined) fault.target = Number(target);
    if (ms !== undefined) fault.ms = Number(ms);
    if (option !== undefined) fault[optionField(kind!)] = optionValue(kind!, option);
    const problem = faultProblem(fault, true);
    if (problem !== undefined) {
      const form = SHAPES[kind as Fault["kind"]]?.form;
      throw new ConfigError(
        `bad fault "${entry.trim()}": it ${problem}${form ? `; write it as ${form}` : ""}`,
      );
    }
    return fault as Fault;
  });
}

/** The field a fault list's `/option` sets for `kind` ("option" for a kind that takes none). */
function optionField(kind: string): string {
  return { "half-open": "side", slow: "by", "coordinator-crash": "torn" }[kind] ?? "option";
}

/** A fault list's `/option` as its field holds it: slow's extra ms, coordinator-crash's torn. */
function optionValue(kind: string, option: string): unknown {
  if (kind === "slow") return /^\d+$/.test(option) ? Number(option) : option;
  if (kind === "coordinator-crash") return { torn: true, clean: false }[option] ?? option;
  return option;
}
