/** Most characters of JSON any one value may take in what leaves the process (1 KiB). */
export const INSPECT_VALUE_LIMIT = 1024;

/**
 * Keys whose values are secret wherever they appear: the run secret, proofs, nonces, tokens,
 * and a worker process's instance (with the secret, it would let a hello replace that
 * worker's connection).
 */
const SECRET_KEY = /secret|proof|nonce|token|password|credential|instance/i;

/** Keys that carry users' data (job inputs, results, errors), cut to the limit as a whole. */
const PAYLOAD_KEYS = new Set(["input", "value", "deps", "error", "needs", "output", "results"]);

/** Deeper than this, a value is summarised: inspection is for reading, not for dumps. */
const MAX_DEPTH = 12;

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/**
 * A copy of an inspection event that is safe to send out of the process: every value under
 * a secret-looking key (`secret`, `proof`, `welcomeProof`, `nonce`, `token`, `instance`, ...) replaced by
 * `[redacted]` at any depth; a job's input, result, dependencies' results or error cut to
 * 1 KiB of JSON (a string ending in `… (N chars, truncated)`), as is any longer string; `toJSON`
 * honoured (the coordinator's job board reports counts, an actor reference its id); cycles
 * and functions dropped. The machine `definition` an actor event carries is kept whole: it is
 * code, not data. Applying it twice changes nothing.
 *
 * @example
 * ```ts
 * sanitizeInspection({ type: "@xstate.event", event: { type: "HELLO", frame: { proof: "ab12" } } });
 * // { type: "@xstate.event", event: { type: "HELLO", frame: { proof: "[redacted]" } } }
 * ```
 */
export function sanitizeInspection<T extends object>(event: T, limit = INSPECT_VALUE_LIMIT): T {
  const { definition, ...rest } = event as T & { definition?: unknown };
  const clean = walk(rest, limit, 0, new Set()) as Record<string, unknown>;
  return (definition === undefined ? clean : { ...clean, definition }) as T;
}

function walk(value: unknown, limit: number, depth: number, ancestors: Set<object>): unknown {
  if (typeof value === "string") return cut(value, limit);
  if (value === null || typeof value !== "object") {
    return typeof value === "function" || typeof value === "symbol" ? undefined : value;
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    return walk(toJSON.call(value), limit, depth, ancestors);
  }
  if (ancestors.has(value)) return "[circular]";
  if (depth >= MAX_DEPTH) return "[too deep]";
  ancestors.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((item) => walk(item, limit, depth + 1, ancestors) ?? null);
  } else {
    const entries: [string, unknown][] = [];
    const source = value instanceof Map ? Object.fromEntries(value) : value;
    for (const [key, item] of Object.entries(source)) {
      if (SECRET_KEY.test(key)) {
        entries.push([key, REDACTED]);
        continue;
      }
      const clean = walk(item, limit, depth + 1, ancestors);
      if (clean === undefined) continue;
      entries.push([key, PAYLOAD_KEYS.has(key) ? cutJson(clean, limit) : clean]);
    }
    out = Object.fromEntries(entries);
  }
  ancestors.delete(value);
  return out;
}

function cutJson(value: unknown, limit: number): unknown {
  if (typeof value === "string") return value;
  const json = JSON.stringify(value);
  return json.length > limit ? cut(json, limit) : value;
}

function cut(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const note = `… (${text.length} chars, truncated)`;
  return text.slice(0, Math.max(limit - note.length, 0)) + note;
}
