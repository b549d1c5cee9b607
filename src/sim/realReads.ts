import nodeCrypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import nodeOs from "node:os";
import { ConfigError } from "../errors.ts";
import { whereThrown } from "../runtime/whereThrown.ts";

/**
 * The reads of the real clock and of real randomness that a simulation catches in your
 * handlers, each with the simulation tool to use instead. `node:crypto`'s `randomBytes` and
 * `randomInt` count only without a callback: with one, they start real work, which
 * `RealWorkWatch`'s hook sees.
 */
export const REAL_READS = {
  "Date.now()": "now",
  "new Date()": "now",
  "Date()": "now",
  "performance.now()": "now",
  "process.hrtime()": "now",
  "process.hrtime.bigint()": "now",
  "os.uptime()": "now",
  "process.uptime()": "now",
  "Math.random()": "random",
  "crypto.randomUUID()": "random",
  "crypto.getRandomValues()": "random",
  "crypto.randomBytes()": "random",
  "crypto.randomInt()": "random",
} as const;

/** One of `REAL_READS`: the API a handler called, as a person would write the call. */
export type RealReadApi = keyof typeof REAL_READS;

/**
 * Told of every read made while trapped, with `where` it was made (called at once, if at all:
 * a stack is taken only for the read a listener keeps); it decides whether the read was a
 * handler's.
 */
type Listener = (api: RealReadApi, where: () => string) => void;

/** An own property of an object as it was before it was trapped (`undefined`: none). */
interface Replaced {
  target: object;
  key: string;
  before: PropertyDescriptor | undefined;
  trap: unknown;
}

const listeners = new Set<Listener>();
let replaced: Replaced[] = [];

/**
 * Has `listener` told of every call of a `REAL_READS` API made in this thread until the
 * returned release is called. The first trap replaces the globals (`Date`, `Date.now`,
 * `performance.now`, `process.hrtime` and its `bigint`, `process.uptime`, `Math.random`, the global `crypto`'s
 * methods, `node:crypto`'s exports and `node:os`'s `uptime`, named imports included); the
 * last release puts back what was there. Every call
 * still goes to the original and returns what it returns: a listener only notes it. Each
 * thread has globals of its own, and traps them itself; simulations that overlap in one thread
 * (nested or concurrent) share the one set of wrappers, each listening for its own handlers.
 * A global that cannot be replaced (`Object.freeze(Math)`, a lockdown) is a `ConfigError`
 * naming it, which begins with `says` (`simulate: `; nothing under `baton sim`, which prints
 * its own name before it).
 *
 * @example
 * ```ts
 * const release = trapRealReads((api) => console.log(api));
 * Date.now(); // logs "Date.now()", and returns the real time
 * release(); // Date.now is the original again
 * ```
 */
export function trapRealReads(listener: Listener, says = "simulate: "): () => void {
  // A listener of its own, so that the same function trapped twice is released once each.
  const own: Listener = (api, where) => listener(api, where);
  listeners.add(own);
  if (listeners.size === 1) {
    try {
      install();
    } catch (error) {
      // A global someone froze (a lockdown): put back what was replaced, and say which.
      listeners.delete(own);
      restore();
      if (!(error instanceof Unreplaceable)) throw error;
      throw new ConfigError(
        `${says}cannot watch your handlers for reads of the real clock and randomness: ${error.global} cannot be replaced (${error.message}), as after Object.freeze or a lockdown. The simulation replaces Date, performance.now, process.hrtime, process.uptime, os.uptime, Math.random and crypto's random functions while it runs, and puts them back after: leave ${error.global} writable where a simulation runs (freeze it after the simulation, or only in processes that run none)`,
        { cause: error.cause },
      );
    }
  }
  return () => {
    if (!listeners.delete(own) || listeners.size > 0) return;
    restore();
  };
}

/** A function that stands in for a trapped one: where a stack of the read starts. */
type Trap = (...args: never) => unknown;

/** Tells every listener of a read of `api`, made by a call of `trap`. */
function note(api: RealReadApi, trap: Trap): void {
  const where = () => whereCalled(trap);
  for (const listener of listeners) listener(api, where);
}

/**
 * Where the call of `trap` was made: the first frame under it outside Node and node_modules,
 * as ` (at file:line:column)`, so that a library's read (undici's `performance.now()` in a
 * `fetch`) names the line of yours that called the library; "" when none is near.
 */
function whereCalled(trap: Trap): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 50;
  const call: { stack?: string } = {};
  Error.captureStackTrace(call, trap);
  Error.stackTraceLimit = limit;
  return whereThrown(call);
}

/** `method` of `target`, noting `api` on each call (or on each call `when` picks). */
function replaceMethod(
  target: object,
  key: string,
  api: RealReadApi,
  when: (args: unknown[]) => boolean = () => true,
): void {
  const original = Reflect.get(target, key) as (...args: unknown[]) => unknown;
  const trap = function (this: unknown, ...args: unknown[]) {
    if (when(args)) note(api, trap);
    return Reflect.apply(original, this, args);
  };
  replace(target, key, trap, api.replace(/\(\)$/, ""));
}

/** A global `replace` could not replace: its `global` name, and why (Node's own message). */
class Unreplaceable extends Error {
  constructor(
    readonly global: string,
    cause: unknown,
  ) {
    super(cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause), { cause });
  }
}

/** Replaces `key` of `target`, which messages name `global`, with `trap` until `restore`. */
function replace(target: object, key: string, trap: unknown, global: string): void {
  const before = Object.getOwnPropertyDescriptor(target, key);
  try {
    Object.defineProperty(target, key, {
      value: trap,
      writable: true,
      configurable: true,
      enumerable: before?.enumerable ?? false,
    });
  } catch (error) {
    throw new Unreplaceable(global, error);
  }
  replaced.push({ target, key, before, trap });
}

const synchronous = (args: unknown[]) => typeof args.at(-1) !== "function";

function install(): void {
  const RealDate = Date;
  replaceMethod(RealDate, "now", "Date.now()");
  const construct = (target: DateConstructor, args: unknown[], newTarget: Trap) => {
    if (args.length === 0) note("new Date()", construct);
    return Reflect.construct(target, args, newTarget) as object;
  };
  const apply = (target: DateConstructor, self: unknown, args: unknown[]) => {
    note("Date()", apply);
    return Reflect.apply(target, self, args) as unknown;
  };
  const TrappedDate = new Proxy(RealDate, { construct, apply });
  replace(globalThis, "Date", TrappedDate, "Date");
  // A date's constructor is `Date` still (`value.constructor === Date`, as some libraries test).
  replace(RealDate.prototype, "constructor", TrappedDate, "Date.prototype.constructor");
  replaceMethod(performance, "now", "performance.now()");
  // `bigint` is a property of `process.hrtime`: trapped on the original, and carried over to
  // the function that stands in for it.
  const hrtime = process.hrtime;
  replaceMethod(hrtime, "bigint", "process.hrtime.bigint()");
  replaceMethod(process, "hrtime", "process.hrtime()");
  Object.defineProperty(process.hrtime, "bigint", { value: hrtime.bigint });
  replaceMethod(nodeOs, "uptime", "os.uptime()");
  replaceMethod(process, "uptime", "process.uptime()");
  replaceMethod(Math, "random", "Math.random()");
  // The global crypto is node:crypto's webcrypto, whose getRandomValues node:crypto's calls:
  // trapping it traps both (and nanoid, which draws there).
  replaceMethod(globalThis.crypto, "randomUUID", "crypto.randomUUID()");
  replaceMethod(globalThis.crypto, "getRandomValues", "crypto.getRandomValues()");
  replaceMethod(nodeCrypto, "randomUUID", "crypto.randomUUID()");
  replaceMethod(nodeCrypto, "randomBytes", "crypto.randomBytes()", synchronous);
  replaceMethod(nodeCrypto, "randomInt", "crypto.randomInt()", synchronous);
  // `import { randomUUID } from "node:crypto"` (or `uptime` from node:os) reads the ESM
  // facade, updated only on request.
  syncBuiltinESMExports();
}

/**
 * Puts back what each trap replaced, last first. A property someone else replaced since (a
 * test's fake timers) is left to them: the trap under theirs only notes for listeners, and
 * there are none.
 */
function restore(): void {
  for (const { target, key, before, trap } of replaced.reverse()) {
    if (Reflect.get(target, key) !== trap) continue;
    if (before === undefined) Reflect.deleteProperty(target, key);
    else Object.defineProperty(target, key, before);
  }
  replaced = [];
  syncBuiltinESMExports();
}
