import { basename, join } from "node:path";
import { canonicalJson } from "../graph/canonicalJson.ts";
import type { Json } from "../graph/job.ts";
import { sha256Hex } from "../graph/sha256Hex.ts";
import { removeAbandonedTemps } from "./abandonedTemps.ts";
import { atomicTempTarget } from "./atomicTempTarget.ts";
import { inFlightLimit } from "./inFlightLimit.ts";
import { nodeClock } from "./nodeClock.ts";
import type { Clock, Files } from "./ports.ts";
import { storeOpenError, storeReadError } from "./storeErrors.ts";
import {
  checkStoreFormat,
  formatMarker,
  markStoreFormat,
  newerFormatError,
  STORE_FORMAT,
} from "./storeFormat.ts";

/** What the store needs of a logger: pino's `warn` and `info(object, message)`. */
export interface StoreLogger {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

/** The outcome of {@link ResultStore.loadAll}. */
export interface LoadedResults {
  /** The valid stored values, by job id; hand this to the job board as `stored`. */
  stored: Map<string, Json>;
  /** Entries that existed but were corrupt; each was quarantined and will be recomputed. */
  corrupt: number;
}

/** One file of the store, as written on disk (keys in canonical order). */
type Entry = {
  format: typeof STORE_FORMAT;
  id: string;
  kind: string;
  value: Json;
  checksum: string;
  storedAt: number;
};

const JOB_ID = /^[0-9a-f]{16}$/;
/** Shard listings (and checks of temp files) in flight at once in `loadAll`. */
const CONCURRENCY = 64;
/** Entries `loadAll` reads per `readMany` (a few ms of blocking with the node port). */
const READ_BATCH = 250;
/**
 * The start of the name of the file `open` makes and removes in `results/` to see that it may,
 * `.writable-MS`. It lives for the milliseconds of one create and remove, so one untouched for
 * {@link ABANDONED_TEMP_MS} is what a process killed in between left, and is removed by its age
 * alone. No pid in the name: in the simulation it would be the real process's, in the trace.
 */
const PROBE_PREFIX = ".writable-";
/**
 * A temp file of a `put` unchanged for this long is abandoned: its writer died between writing
 * it and renaming it (a crash while storing). A live write takes milliseconds; one held up
 * longer than this by a hung disk only fails its rename, and the attempt is retried.
 */
export const ABANDONED_TEMP_MS = 15 * 60_000;

/**
 * The content-addressed result store: one JSON file per job id,
 * `DIR/results/<first two hex digits of the id>/<id>.json`, holding
 * `{ format: 1, id, kind, value, checksum, storedAt }` where `checksum` is the SHA-256 (hex)
 * of `canonicalJson(value)`. Every file access goes through the {@link Files} port, so the
 * simulation can run it on in-memory files; entries are written with `writeAtomic` (temp
 * file, fsync, rename, mode 0600), so a crash leaves either no entry or a whole one, and
 * perhaps the temp file; `loadAll` removes the temp files it comes across that no write has
 * touched for {@link ABANDONED_TEMP_MS}.
 *
 * Reading never serves a bad value: an entry that is not JSON, has an unknown format, names
 * another id or fails its checksum (a torn write, a flipped bit) is logged, moved to
 * `DIR/quarantine/` (nothing is deleted) and reported as missing, so the job is computed
 * again. A store, or an entry, of a format newer than {@link STORE_FORMAT} is a `StoreError`
 * (`STORE_NEWER_FORMAT`) instead, before anything of it is moved or written over: the store
 * says its format in `DIR/format.json` (see `storeFormat.ts`). Operations on one id are
 * serialized within a store, so quarantining an entry never removes a good one a concurrent
 * `put` has just written.
 *
 * There is deliberately no way to delete results. `--force` ("recompute everything") means
 * the caller does not call {@link ResultStore.loadAll}: every job runs and its `put`
 * replaces the stored entry. A job id is a hash of the job (kind, input, dependencies,
 * handler version), so the same id normally means the same value; if a handler is not
 * deterministic, the last `put` wins.
 *
 * An entry that cannot be read at all (another user's, mode 0600; a directory in its place)
 * is a `StoreError`: the job's result could not be stored there either.
 *
 * `DIR/logs/` is created for the process logs of the run (see {@link ResultStore.logsDir}).
 *
 * @example
 * ```ts
 * const store = await ResultStore.open(join(graphDir, ".baton"), nodeFiles(), logger);
 * const { stored, corrupt } = await store.loadAll(plan.jobs.map((j) => j.id));
 * // ... run the graph with `stored`; for each job that completes:
 * await store.put(job.id, job.kind, value); // durable once it resolves
 * await store.get(job.id); // the value, or undefined when missing or corrupt
 * ```
 */
export class ResultStore {
  readonly #files: Files;
  readonly #logger: StoreLogger | undefined;
  readonly #clock: Pick<Clock, "now">;
  readonly #locks = new Map<string, Promise<void>>();
  readonly #readOnly: boolean;
  /**
   * `DIR/results/` and `DIR/quarantine/`, joined once: joined again for each entry read or
   * written, they were about 0.3 % of a simulated seed's CPU.
   */
  readonly #resultsDir: string;
  readonly #quarantineDir: string;
  /** The check of the store's format marker, made once: at `open`, or at the first read. */
  #formatChecked: Promise<void> | undefined;
  #writes = 0;

  private constructor(
    readonly dir: string,
    files: Files,
    logger: StoreLogger | undefined,
    clock: Pick<Clock, "now">,
    readOnly: boolean,
  ) {
    this.#files = files;
    this.#logger = logger;
    this.#clock = clock;
    this.#readOnly = readOnly;
    this.#resultsDir = join(dir, "results");
    this.#quarantineDir = join(dir, "quarantine");
  }

  /**
   * Opens (creating as needed) the store in `dir`: its format marker, `results/`,
   * `quarantine/` and `logs/`. `clock` stamps `storedAt` (the simulation passes its own). A
   * store of a newer format, a `dir` that cannot be a directory (a file is in the way) or one
   * that cannot be written (checked by making and removing a file in `results/`) is a
   * `StoreError`. The temp files a process killed while making the marker left, and the files
   * such a process left of that check, are removed first (`removeAbandonedTemps`, after
   * {@link ABANDONED_TEMP_MS}), and so are those of `quarantine/` untouched for as long.
   */
  static async open(
    dir: string,
    files: Files,
    logger?: StoreLogger,
    clock: Pick<Clock, "now"> = nodeClock(),
  ): Promise<ResultStore> {
    const store = new ResultStore(dir, files, logger, clock, false);
    try {
      // First, so that a store a newer baton wrote is refused before anything is made in it.
      await store.#checkFormat();
      await Promise.all(
        [store.#resultsDir, store.#quarantineDir, store.logsDir].map((d) => files.mkdirp(d)),
      );
      await store.#removeAbandonedMarks();
      // Folders that exist but cannot be written fail here, not at each job's result (a result
      // that cannot be stored is a failed attempt, so every job would be tried in vain).
      const probe = join(store.#resultsDir, `${PROBE_PREFIX}${Math.round(clock.now())}`);
      // Not synced to the disk: nothing of it is to outlive this call.
      if (await files.createExclusive(probe, "", 0o600, { durable: false })) {
        await files.remove(probe);
      }
      await markStoreFormat(dir, files);
    } catch (error) {
      throw storeOpenError(dir, error);
    }
    return store;
  }

  /**
   * The store in `dir` for reading only (a dry run): nothing is created, a corrupt entry is
   * counted but left where it is (the run that recomputes it quarantines it), and `put`
   * throws. A store that does not exist holds nothing.
   *
   * @example
   * ```ts
   * const store = ResultStore.openReadOnly(".baton", nodeFiles());
   * const { stored, corrupt } = await store.loadAll(ids); // what a run would reuse
   * ```
   */
  static openReadOnly(dir: string, files: Files): ResultStore {
    return new ResultStore(dir, files, undefined, nodeClock(), true);
  }

  /** Where process logs of the run go; the store creates it and never touches its content. */
  get logsDir(): string {
    return join(this.dir, "logs");
  }

  /** Entries written by `put` since the store was opened (each call writes once). */
  get writes(): number {
    return this.#writes;
  }

  /** Stores `value` as the result of job `id`; resolves once the entry is durable. */
  async put(id: string, kind: string, value: Json): Promise<void> {
    if (this.#readOnly) throw new Error(`the result store ${this.dir} was opened read-only`);
    const path = this.#pathOf(id);
    const entry: Entry = {
      format: STORE_FORMAT,
      id,
      kind,
      value,
      checksum: checksumOf(value),
      storedAt: this.#clock.now(),
    };
    return this.#exclusive(id, async () => {
      // A newer baton's entry (in a store without its marker) is never written over. One that
      // cannot be read is for the write to say.
      const existing = await this.#files.read(path).catch(() => undefined);
      const checked = existing === undefined ? undefined : checkEntry(id, existing);
      if (checked && "newer" in checked) throw newerFormatError(this.dir, path, checked.newer);
      await this.#files.writeAtomic(path, canonicalJson(entry));
      this.#writes++;
    });
  }

  /**
   * The stored result of job `id`, or undefined when there is none or the entry is corrupt
   * (a corrupt entry is logged and quarantined first).
   */
  async get(id: string): Promise<Json | undefined> {
    const result = await this.#read(id);
    return result.ok ? result.value : undefined;
  }

  /**
   * The stored results among `ids`, for a rerun: the shard directories are listed once, so
   * ids with no entry cost nothing, and the entries that exist are read
   * {@link READ_BATCH} at a time through `Files.readMany`. Corrupt entries are quarantined,
   * counted and left out. `onRead(done, total)` follows the reading: after each entry, of the
   * `total` that exist.
   */
  async loadAll(
    ids: Iterable<string>,
    onRead?: (done: number, total: number) => void,
  ): Promise<LoadedResults> {
    const wanted = [...new Set(ids)].map(checkJobId);
    await this.#checkFormat();
    const shards = [...new Set(wanted.map((id) => id.slice(0, 2)))];
    const present = new Set<string>();
    const temps: string[] = [];
    const limit = inFlightLimit(CONCURRENCY);
    await Promise.all(
      shards.map((shard) =>
        limit(async () => {
          const folder = join(this.#resultsDir, shard);
          let names: string[];
          try {
            names = await this.#files.list(folder);
          } catch (error) {
            throw storeReadError(this.dir, folder, error);
          }
          for (const name of names) {
            if (atomicTempTarget(name) === undefined) present.add(name);
            else temps.push(join(folder, name));
          }
        }),
      ),
    );
    const found = wanted.filter((id) => present.has(`${id}.json`));
    const stored = new Map<string, Json>();
    const suspect: string[] = [];
    let done = 0;
    for (let start = 0; start < found.length; start += READ_BATCH) {
      const batch = found.slice(start, start + READ_BATCH);
      const texts = await this.#readMany(batch.map((id) => this.#pathOf(id)));
      for (const [index, id] of batch.entries()) {
        const text = texts[index];
        const checked = text === undefined ? undefined : checkEntry(id, text);
        if (checked !== undefined) {
          if ("entry" in checked) stored.set(id, checked.entry.value);
          else if ("newer" in checked) {
            throw newerFormatError(this.dir, this.#pathOf(id), checked.newer);
          } else suspect.push(id);
        }
        onRead?.(++done, found.length);
      }
    }
    // Only once every entry was read, so that a store holding a newer baton's entries has
    // nothing moved: read again under the id's lock before quarantining, as `get` does (a
    // `put` may have replaced the entry since).
    let corrupt = 0;
    for (const id of suspect) {
      const result = await this.#read(id);
      if (result.ok) stored.set(id, result.value);
      else if (result.corrupt) corrupt++;
    }
    if (!this.#readOnly && temps.length > 0) await this.#removeAbandoned(temps);
    return { stored, corrupt };
  }

  /**
   * Removes what processes killed while they opened the store left, each folder listed once:
   * the temp files of the format marker and of `open`'s probes (`removeAbandonedTemps`: a
   * writer gone from this host, and untouched for {@link ABANDONED_TEMP_MS}); the probes
   * themselves, which name no writer, and the temp files that a run killed as it moved a
   * corrupt entry to `quarantine/` left, by age alone, as `loadAll` takes those of entries (the
   * simulation's temps there are numbered, not named after a pid).
   */
  async #removeAbandonedMarks(): Promise<void> {
    const ports = {
      files: this.#files,
      staleMs: ABANDONED_TEMP_MS,
      now: this.#clock.now(),
      logger: this.#logger,
    };
    const marker = basename(formatMarker(this.dir));
    const [, results, quarantined] = await Promise.all([
      removeAbandonedTemps(this.dir, { ...ports, of: (target) => target === marker }),
      this.#files.list(this.#resultsDir),
      this.#files.list(this.#quarantineDir),
    ]);
    await removeAbandonedTemps(this.#resultsDir, { ...ports, names: results, of: isProbe });
    const byAge = [
      ...results
        .filter((name) => name.startsWith(PROBE_PREFIX))
        .map((name) => join(this.#resultsDir, name)),
      ...quarantined
        .filter((name) => atomicTempTarget(name) !== undefined)
        .map((name) => join(this.#quarantineDir, name)),
    ];
    if (byAge.length > 0) await this.#removeAbandoned(byAge);
  }

  /** Removes the temp files among `temps` that no write has touched for {@link ABANDONED_TEMP_MS}. */
  async #removeAbandoned(temps: readonly string[]): Promise<void> {
    const now = this.#clock.now();
    const removed: string[] = [];
    const limit = inFlightLimit(CONCURRENCY);
    await Promise.all(
      temps.map((temp) =>
        limit(async () => {
          const modifiedAt = await this.#files.modifiedAt(temp);
          if (modifiedAt === undefined || now - modifiedAt <= ABANDONED_TEMP_MS) return;
          await this.#files.remove(temp);
          removed.push(temp);
        }),
      ),
    );
    if (removed.length === 0) return;
    removed.sort();
    this.#logger?.info(
      { removed },
      `removed ${removed.length} temp file${removed.length === 1 ? "" : "s"} from the result store that a run left when it stopped while opening the store, storing or quarantining results (untouched for over ${ABANDONED_TEMP_MS / 60_000} minutes)`,
    );
  }

  /**
   * `Files.readMany`, with an entry that cannot be read at all (another user's, a directory)
   * a `StoreError` naming it: `readMany` does not say which path failed.
   */
  async #readMany(paths: readonly string[]): Promise<(string | undefined)[]> {
    try {
      return await this.#files.readMany(paths);
    } catch (error) {
      for (const path of paths) await this.#readFile(path);
      throw error;
    }
  }

  /** `Files.read`, with an entry that cannot be read at all a `StoreError`. */
  async #readFile(path: string): Promise<string | undefined> {
    try {
      return await this.#files.read(path);
    } catch (error) {
      throw storeReadError(this.dir, path, error);
    }
  }

  #pathOf(id: string): string {
    return join(this.#resultsDir, checkJobId(id).slice(0, 2), `${id}.json`);
  }

  async #read(id: string): Promise<{ ok: true; value: Json } | { ok: false; corrupt: boolean }> {
    const path = this.#pathOf(id);
    return this.#exclusive(id, async () => {
      await this.#checkFormat();
      const text = await this.#readFile(path);
      if (text === undefined) return { ok: false, corrupt: false };
      const checked = checkEntry(id, text);
      if ("entry" in checked) return { ok: true, value: checked.entry.value };
      if ("newer" in checked) throw newerFormatError(this.dir, path, checked.newer);
      if (!this.#readOnly) await this.#quarantine(id, path, text, checked.problem);
      return { ok: false, corrupt: true };
    });
  }

  /** Refuses a store whose marker names a newer format (checked once). */
  #checkFormat(): Promise<void> {
    this.#formatChecked ??= checkStoreFormat(this.dir, this.#files).then(() => undefined);
    return this.#formatChecked;
  }

  /**
   * Moves a corrupt entry to `quarantine/` under a name no earlier quarantine has taken,
   * found by looking at the names it could take (one, unless this id was quarantined before):
   * listing the whole folder for each entry made a store of 4,000 corrupt entries take 35 s
   * to read, and one of 50,000 (every entry of a store, after a format change) hours.
   */
  async #quarantine(id: string, path: string, text: string, problem: string): Promise<void> {
    let moved = join(this.#quarantineDir, `${id}.json`);
    for (let n = 1; (await this.#files.modifiedAt(moved)) !== undefined; n++) {
      moved = join(this.#quarantineDir, `${id}.${n}.json`);
    }
    this.#logger?.warn(
      { file: path, problem, quarantined: moved },
      `corrupt result ${path} (${problem}); moving it to ${moved}, the job will be recomputed`,
    );
    await this.#files.writeAtomic(moved, text);
    await this.#files.remove(path);
  }

  /** Runs `fn` after every earlier operation on `id` of this store has settled. */
  #exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.#locks.get(id) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#locks.set(id, tail);
    void tail.then(() => {
      if (this.#locks.get(id) === tail) this.#locks.delete(id);
    });
    return run;
  }
}

/**
 * Whether `target`, what a temp file in `results/` was to become (`atomicTempTarget`), is
 * `open`'s probe (`.writable-MS`): the temp file of its creation (`..writable-MS.PID.RANDOM.tmp`).
 */
function isProbe(target: string): boolean {
  return target.startsWith(PROBE_PREFIX);
}

/** Returns `id` if it is a job id (16 hex digits), so it is safe to use in a path. */
function checkJobId(id: string): string {
  if (!JOB_ID.test(id)) throw new Error(`not a job id (16 hex digits): ${JSON.stringify(id)}`);
  return id;
}

function checksumOf(value: Json): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * What `text` is as the entry of `id`: a valid entry, one a newer baton wrote (its format is
 * above {@link STORE_FORMAT}: not to be read, moved or written over), or what is wrong with it.
 */
function checkEntry(
  id: string,
  text: string,
): { entry: Entry } | { newer: number } | { problem: string } {
  let entry: unknown;
  try {
    entry = JSON.parse(text);
  } catch {
    return { problem: "not valid JSON (torn or truncated write?)" };
  }
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    return { problem: "not a JSON object" };
  }
  const e = entry as Partial<Record<keyof Entry, unknown>>;
  if (Number.isSafeInteger(e.format) && (e.format as number) > STORE_FORMAT) {
    return { newer: e.format as number };
  }
  const problem = (what: string) => ({ problem: what });
  if (e.format !== STORE_FORMAT) return problem(`unknown format ${JSON.stringify(e.format)}`);
  if (e.id !== id) return problem(`holds id ${JSON.stringify(e.id)}, expected ${id}`);
  if (typeof e.kind !== "string") return problem("kind is not a string");
  if (typeof e.storedAt !== "number") return problem("storedAt is not a number");
  if (!("value" in e)) return problem("no value");
  if (typeof e.checksum !== "string") return problem("checksum is not a string");
  if (checksumOf(e.value as Json) !== e.checksum)
    return problem("checksum mismatch (value changed)");
  return { entry: e as Entry };
}
