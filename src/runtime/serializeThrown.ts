import type { SerializedError } from "../transport/frames.ts";

/**
 * Turns anything a handler threw into an error with a name, a message and a stack, for a
 * failed result. It never throws itself, whatever the value does when read: a getter or a
 * Proxy trap that throws, or a `name`, `message` or `stack` that is not a string (what cannot
 * be read as text is replaced, so the frame always encodes). A thrown value with
 * `retryable: false` (a `NonRetryableError`, a `GraphError`) gives `retryable: false`.
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
    const message = textOf(() => thrown.message) || `${name} without a message`;
    const stack = textOf(() => thrown.stack) ?? `${name}: ${message}\n${where}`;
    return { name, message, stack, ...final };
  }
  const preview =
    textOf(() => (typeof thrown === "string" ? thrown : JSON.stringify(thrown))) ??
    textOf(() => String(thrown)) ??
    `a value that cannot be shown (typeof ${typeof thrown})`;
  const message = `the handler for "${job.kind}" threw a non-Error value: ${preview.slice(0, 500)}`;
  return { name: "NonErrorThrown", message, stack: `${message}\n${where}`, ...final };
}

/** Whether `thrown` has `retryable: false` (a `NonRetryableError`), false when asking throws. */
function saysNotRetryable(thrown: unknown): boolean {
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
