import { canonicalJson } from "./canonicalJson.ts";
import type { Json } from "./job.ts";
import { sha256Hex } from "./sha256Hex.ts";

/**
 * The stable id of a job: the first 16 hex digits (64 bits) of the SHA-256 of the JSON
 * array `[kind, canonicalJson(input), deps, version]`, where `deps` are the ids of the
 * jobs it runs after, deduplicated and sorted so that the order of `after` does not
 * matter. Encoding the parts as a JSON array keeps them apart (no two different tuples
 * share an encoding); the input is canonical, so the order of its keys does not matter.
 *
 * The same job gives the same id in every run and on every machine, which is what lets a
 * rerun skip stored results and two identical jobs of one graph merge into one. Changing
 * the handler's `version` changes the id, so stored results of an older handler are not
 * reused. With 64 bits, the chance of any collision among a million jobs is below 1e-7.
 *
 * @example
 * ```ts
 * const fetch = jobId("fetch", { url: "https://example.org" }, [], "1");
 * jobId("parse", { strict: true }, [fetch], "1"); // 16 hex digits, the same every time
 * ```
 */
export function jobId(kind: string, input: Json, deps: readonly string[], version: string): string {
  // No dependency or one (most jobs) is its own sorted set: no copy, no Set made for it.
  const sorted = deps.length < 2 ? deps : [...new Set(deps)].sort();
  if (kind !== quoted.kind || version !== quoted.version) {
    quoted.kind = kind;
    quoted.version = version;
    quoted.head = `[${JSON.stringify(kind)},`;
    quoted.tail = `,${JSON.stringify(version)}]`;
  }
  // The array's JSON, written out: its kind and version quoted once for a run of jobs of one
  // kind, not with every job (`JSON.stringify` of the array, the same text, cost twice as much).
  const encoded = `${quoted.head}${JSON.stringify(canonicalJson(input))},${sorted.length === 0 ? "[]" : JSON.stringify(sorted)}${quoted.tail}`;
  return firstSixteen(sha256Hex(encoded));
}

/** The kind and version of the last id made, quoted as the JSON array's head and tail. */
const quoted: { kind: string | undefined; version: string; head: string; tail: string } = {
  kind: undefined,
  version: "",
  head: "",
  tail: "",
};

/**
 * The first 16 characters of `hex` as a string of their own. V8's `slice` of 13 characters or
 * more is a view of the whole string: every id then held its 64-digit digest too (about 80 B
 * more a job in the plan and the board), and each comparison with an id read from a frame
 * went through the view (a lookup in a map of 100,000 ids took twice as long). The codes are
 * passed as arguments, not through `apply` of an array (about 35 ns less an id).
 */
function firstSixteen(hex: string): string {
  return String.fromCharCode(
    hex.charCodeAt(0),
    hex.charCodeAt(1),
    hex.charCodeAt(2),
    hex.charCodeAt(3),
    hex.charCodeAt(4),
    hex.charCodeAt(5),
    hex.charCodeAt(6),
    hex.charCodeAt(7),
    hex.charCodeAt(8),
    hex.charCodeAt(9),
    hex.charCodeAt(10),
    hex.charCodeAt(11),
    hex.charCodeAt(12),
    hex.charCodeAt(13),
    hex.charCodeAt(14),
    hex.charCodeAt(15),
  );
}
