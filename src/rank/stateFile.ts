import { argumentError } from "../argumentError.ts";
import { ConfigError, RankFileError } from "../errors.ts";
import type { Files } from "../runtime/ports.ts";
import { requireMethods } from "../runtime/requireMethods.ts";
import { isDeploymentId } from "./deploymentPaths.ts";

/**
 * One kind of rank-group state file: the value of its `format` field and how to build the
 * typed value from the parsed JSON object, field by field. Fields the format does not name
 * are ignored (and dropped), so a rank may add its own; every named field is checked.
 */
export interface StateFileFormat<T> {
  /** The `format` field every file of this kind carries, e.g. `baton.marker/1`. */
  readonly id: string;
  decode(fields: Fields): T;
}

/** Why a field was refused; turned into a `RankFileError` naming the file by `parseStateFile`. */
class FieldError extends Error {}

/**
 * Typed, checked access to the fields of one JSON object of a state file. Each reader throws
 * when the field is missing or has another type, naming the field (`ranks[1].pid`).
 *
 * @example
 * ```ts
 * const CHECKPOINT_FORMAT: StateFileFormat<{ deployment: string; step: number }> = {
 *   id: "myapp.checkpoint/1",
 *   decode: (fields) => ({ deployment: fields.deployment(), step: fields.integer("step", 0) }),
 * };
 * ```
 */
export class Fields {
  constructor(
    private readonly value: Record<string, unknown>,
    private readonly prefix = "",
  ) {}

  /** A string; with `accept`, one it accepts (`what` says what was expected). */
  string(name: string, accept?: (value: string) => boolean, what = "a string"): string {
    const value = this.value[name];
    if (typeof value !== "string" || (accept !== undefined && !accept(value))) {
      throw this.refuse(name, what, value);
    }
    return value;
  }

  /** Whether the object has the field at all: an optional field is read only when it does. */
  has(name: string): boolean {
    return this.value[name] !== undefined;
  }

  /** The `deployment` field every state file carries: a deployment id. */
  deployment(): string {
    return this.string("deployment", isDeploymentId, "a deployment id");
  }

  /** A safe integer ≥ `min`. */
  integer(name: string, min: number): number {
    const value = this.value[name];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
      throw this.refuse(name, `an integer ≥ ${min}`, value);
    }
    return value;
  }

  /** A boolean. */
  boolean(name: string): boolean {
    const value = this.value[name];
    if (typeof value !== "boolean") throw this.refuse(name, "true or false", value);
    return value;
  }

  /** One of `values`. */
  oneOf<V extends string>(name: string, values: readonly V[]): V {
    const value = this.value[name];
    if (typeof value !== "string" || !(values as readonly string[]).includes(value)) {
      throw this.refuse(name, `one of ${values.map((v) => `"${v}"`).join(", ")}`, value);
    }
    return value as V;
  }

  /** An array of strings. */
  strings(name: string): string[] {
    const value = this.value[name];
    if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) {
      throw this.refuse(name, "an array of strings", value);
    }
    return [...value];
  }

  /** A nested object, read through its own `Fields`. */
  object<T>(name: string, decode: (fields: Fields) => T): T {
    const value = this.value[name];
    if (!isObject(value)) throw this.refuse(name, "an object", value);
    return decode(new Fields(value, `${this.prefix}${name}.`));
  }

  /** An array of objects, each read through its own `Fields`. */
  list<T>(name: string, decode: (fields: Fields) => T): T[] {
    const value = this.value[name];
    if (!Array.isArray(value)) throw this.refuse(name, "an array", value);
    return value.map((item, index) => {
      const at = `${this.prefix}${name}[${index}]`;
      if (!isObject(item)) throw new FieldError(`field "${at}" must be an object`);
      return decode(new Fields(item, `${at}.`));
    });
  }

  /** A refusal for a rule that spans fields (`ranks[2].rank must be below worldSize`). */
  invalid(message: string): Error {
    return new FieldError(message);
  }

  private refuse(name: string, expected: string, value: unknown): Error {
    const got = value === undefined ? "it is missing" : `got ${JSON.stringify(value)}`;
    return new FieldError(`field "${this.prefix}${name}" must be ${expected}; ${got}`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Refuses a `format` that is no {@link StateFileFormat}: its `id` and its `decode`. */
function requireFormat(where: string, format: unknown): void {
  const what = "a StateFileFormat, such as MARKER_FORMAT or { id, decode }";
  requireMethods(where, "format", format, ["decode"], what);
  const { id } = format as { id: unknown };
  if (typeof id !== "string")
    throw argumentError(where, "format.id", "its format's name, a string", id);
}

/**
 * Parses the text of a state file as `format`. Given a format, the file's text and its path,
 * never throws anything but a `RankFileError` that names the file, the field at fault and
 * where the format is documented; arguments it cannot take (a format that is none, text that
 * is a Buffer or undefined, which read as a file that is no JSON) are a `ConfigError`.
 *
 * @example
 * ```ts
 * const marker = parseStateFile(MARKER_FORMAT, text, "/run/dep-1/rank-0.marker.json");
 * ```
 */
export function parseStateFile<T>(format: StateFileFormat<T>, text: string, path: string): T {
  requireFormat("parseStateFile", format);
  if (typeof text !== "string") {
    throw argumentError(
      "parseStateFile",
      "text",
      'the file\'s text, a string (readFile(path, "utf8"))',
      text,
      ArrayBuffer.isView(text as unknown)
        ? `a ${(text as object).constructor.name}: decode it first`
        : undefined,
    );
  }
  if (typeof path !== "string") {
    throw argumentError("parseStateFile", "path", "the file's path, which its errors name", path);
  }
  const fail = (problem: string) =>
    new RankFileError(
      `${path} is not a valid ${format.id} file: ${problem} (the format is documented in ARCHITECTURE.md, "Rank-side files and library"; a file no baton process owns can be removed)`,
      path,
      format.id,
      problem,
    );
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw fail(`not JSON (${(error as Error).message})`);
  }
  if (!isObject(value)) throw fail("not a JSON object");
  if (value.format !== format.id) {
    throw fail(`its format is ${JSON.stringify(value.format)}, expected "${format.id}"`);
  }
  try {
    return format.decode(new Fields(value));
  } catch (error) {
    if (error instanceof FieldError) throw fail(error.message);
    throw error;
  }
}

/**
 * The text of a state file: one JSON object, `format` first, and a final newline. A format
 * that is none, and a value that is no object (undefined, a string, a list), are a
 * `ConfigError`: the first threw a TypeError or wrote a file with no format, the second wrote
 * one with none of its fields, or its letters as fields. So is a value that the format would
 * refuse to read back (a field missing or of another type, as `parseStateFile` names it), or
 * whose own `format` field is another: each was written, for its reader to refuse.
 *
 * @example
 * ```ts
 * await files.writeAtomic(paths.lease, encodeStateFile(LEASE_FORMAT, lease));
 * ```
 */
export function encodeStateFile<T extends object>(format: StateFileFormat<T>, value: T): string {
  requireFormat("encodeStateFile", format);
  if (!isObject(value)) {
    throw argumentError(
      "encodeStateFile",
      "value",
      `the file's fields as an object, such as a ${format.id} file holds`,
      value,
    );
  }
  const fields = { format: format.id, ...value };
  const wrong = (why: string) =>
    new ConfigError(`encodeStateFile: the value is no ${format.id} file: ${why}`);
  if (fields.format !== format.id) {
    throw wrong(`its format field is ${JSON.stringify(fields.format)}; leave it out`);
  }
  try {
    format.decode(new Fields(fields));
  } catch (error) {
    if (error instanceof FieldError) throw wrong(error.message);
    throw error;
  }
  return `${JSON.stringify(fields)}\n`;
}

/**
 * Reads and parses a state file: `undefined` when it does not exist, a `RankFileError` when
 * it is malformed.
 *
 * @example
 * ```ts
 * const lease = await readStateFile(files, LEASE_FORMAT, paths.lease);
 * ```
 */
export async function readStateFile<T>(
  files: Files,
  format: StateFileFormat<T>,
  path: string,
): Promise<T | undefined> {
  requireMethods("readStateFile", "files", files, ["read"], "a Files, such as nodeFiles()");
  const text = await files.read(path);
  return text === undefined ? undefined : parseStateFile(format, text, path);
}
