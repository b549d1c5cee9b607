import { inspect, types } from "node:util";
import { cutText } from "../transport/cutText.ts";
import type { SerializedError } from "../transport/frames.ts";

/** The longest message kept: a failed job's message is printed whole by `baton run`. */
const MESSAGE_CHARS = 10_000;
/** The longest stack kept, its causes included. */
const STACK_CHARS = 100_000;
/** How many causes, and how many of an AggregateError's errors, a message names. */
const NAMED_CAUSES = 5;

/**
 * Turns anything a handler threw into an error with a name, a message and a stack, for a
 * failed result. It never throws itself, whatever the value does when read: a getter or a
 * Proxy trap that throws, or a `name`, `message` or `stack` that is not a string (what cannot
 * be read as text is replaced, so the frame always encodes). A thrown value with
 * `retryable: false` (a `NonRetryableError`, a `GraphError`, a `ConfigError`, a `RankGroupError`
 * of a launch that cannot work) gives `retryable: false`.
 *
 * An Error's `cause` (and its cause's, and so on) and an AggregateError's `errors` are kept:
 * their messages follow the error's own (`fetch failed; caused by: ECONNREFUSED`), and the
 * stack is Node's rendering with each one's stack under `[cause]` or `[errors]`. A message
 * past 10,000 characters and a stack past 100,000 are cut, saying how much was left out, so
 * a handler that throws a whole response body still fits a frame and a terminal.
 *
 * @example
 * ```ts
 * serializeThrown("boom", { kind: "fetch", id: "3f2a", attempt: 1 });
 * // { name: "NonErrorThrown", message: 'the handler for "fetch" threw a non-Error value: boom', stack: … }
 * ```
 */
export function serializeThrown(
  thrown: unknown,
  job: { kind: string; id: string; attempt: number },
): SerializedError {
  const where = `    at handler "${job.kind}" (job ${job.id}, attempt ${job.attempt})`;
  const final = saysNotRetryable(thrown) && { retryable: false as const };
  if (isInstance(thrown, Error)) {
    const name = textOf(() => thrown.name) || "Error";
    const own = textOf(() => thrown.message) || `${name} without a message`;
    const related = relatedErrors(thrown);
    const message = cutText(own + describeRelated(related), MESSAGE_CHARS);
    const plain = textOf(() => thrown.stack) ?? `${name}: ${own}\n${where}`;
    const stack = related.values.length > 0 ? (textOf(() => inspect(thrown)) ?? plain) : plain;
    return { name, message, stack: cutText(stack, STACK_CHARS), ...final };
  }
  const preview =
    textOf(() => (typeof thrown === "string" ? thrown : JSON.stringify(thrown))) ??
    // A cyclic object; not a Proxy, which inspect would show as its target, unread.
    textOf(() =>
      types.isProxy(thrown)
        ? undefined
        : inspect(thrown, { depth: 2, breakLength: Number.POSITIVE_INFINITY }),
    ) ??
    textOf(() => String(thrown)) ??
    `a value that cannot be shown (typeof ${typeof thrown})`;
  const message = `the handler for "${job.kind}" threw a non-Error value: ${preview.slice(0, 500)}`;
  return { name: "NonErrorThrown", message, stack: `${message}\n${where}`, ...final };
}

/**
 * What else `error` carries: its causes, nearest first (each once, however they loop), or an
 * AggregateError's errors; at most `NAMED_CAUSES`, with how many more were left out.
 */
interface Related {
  how: "cause" | "errors";
  values: unknown[];
  more: number;
}

function relatedErrors(error: Error): Related {
  const errors = isInstance(error, AggregateError) ? readOr(() => error.errors) : undefined;
  if (Array.isArray(errors)) {
    const values = errors.slice(0, NAMED_CAUSES);
    return { how: "errors", values, more: errors.length - values.length };
  }
  const values: unknown[] = [];
  const seen = new Set<unknown>([error]);
  let cause = causeOf(error);
  while (cause !== undefined && !seen.has(cause) && values.length < NAMED_CAUSES) {
    seen.add(cause);
    values.push(cause);
    cause = causeOf(cause);
  }
  return { how: "cause", values, more: 0 };
}

/** The `cause` an Error was given, if any (undefined when reading it throws). */
function causeOf(value: unknown): unknown {
  return readOr(() =>
    isInstance(value, Error) && Object.hasOwn(value, "cause") ? value.cause : undefined,
  );
}

/** `related` as it follows the error's own message. */
function describeRelated({ how, values, more }: Related): string {
  const texts = values.map(shortText);
  if (how === "cause") return texts.map((text) => `; caused by: ${text}`).join("");
  if (texts.length === 0) return "";
  return ` (errors: ${texts.join("; ")}${more > 0 ? `; and ${more} more` : ""})`;
}

/** A cause or an aggregated error as a few words: an Error's message, else the value. */
function shortText(value: unknown): string {
  const text = isInstance(value, Error)
    ? textOf(() => value.message) || textOf(() => value.name) || "Error"
    : (textOf(() => (typeof value === "string" ? value : JSON.stringify(value))) ??
      textOf(() => String(value)) ??
      `a value that cannot be shown (typeof ${typeof value})`);
  return text.slice(0, 500);
}

/** What `read` returns, undefined when it throws. */
function readOr(read: () => unknown): unknown {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/**
 * Whether `thrown` has `retryable: false` (a `NonRetryableError`, a `ConfigError`), false when
 * asking throws.
 */
export function saysNotRetryable(thrown: unknown): boolean {
  try {
    return (
      typeof thrown === "object" &&
      thrown !== null &&
      (thrown as { retryable?: unknown }).retryable === false
    );
  } catch {
    return false;
  }
}

/** `value instanceof type`, false when asking throws (a Proxy whose traps throw). */
export function isInstance<T>(
  value: unknown,
  type: abstract new (...args: never[]) => T,
): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/** What `read` returns when it is a string; undefined when it is not, or when reading throws. */
function textOf(read: () => unknown): string | undefined {
  try {
    const value = read();
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}
