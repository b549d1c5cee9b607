import { join } from "node:path";
import { StoreError } from "../errors.ts";
import { isPermissionDenied } from "./fileOwner.ts";
import type { Files } from "./ports.ts";
import { storeOpenError, storeReadError } from "./storeErrors.ts";

/**
 * The result store's format: what this baton writes, in the store's marker and in each entry,
 * and the newest it reads. A store or an entry of a newer format is refused, never quarantined
 * or written over, so raising this number is what keeps every baton before it off a store a
 * newer one has written (a baton before the marker quarantined such entries as corrupt).
 */
export const STORE_FORMAT = 1;

/** The store's format marker, `DIR/format.json`: `{"format":N}`. */
export function formatMarker(dir: string): string {
  return join(dir, "format.json");
}

/**
 * The format of the store in `dir`, from its marker, else {@link STORE_FORMAT}: a store made
 * before the marker (format 1, the only format there was) is read as this baton's. A marker
 * of a newer format is `STORE_NEWER_FORMAT`; one that holds no format (edited by hand, or
 * empty: a marker appears whole, so something emptied it) is `STORE_UNREADABLE`, as baton
 * cannot tell which it is.
 *
 * @example
 * ```ts
 * await checkStoreFormat(".baton", nodeFiles()); // 1, or a StoreError before anything is read or made
 * ```
 */
export async function checkStoreFormat(dir: string, files: Files): Promise<number> {
  return (await markedFormat(dir, files)) ?? STORE_FORMAT;
}

/**
 * Checks the store's format ({@link checkStoreFormat}), then writes its marker if it has none,
 * as the first baton that writes to it: a store made before the marker gets one the first
 * time it is opened to be written. A marker is never written over, so a newer baton's stays.
 * One this user may not make (a store shared by several users, whose own folder is another
 * user's while `results/` and `run/` are open to all) is left to a user who may: a store
 * without a marker reads as this format all the same.
 */
export async function markStoreFormat(dir: string, files: Files): Promise<void> {
  if ((await markedFormat(dir, files)) !== undefined) return;
  try {
    // Readable by all: every user of a store shared by several checks it (entries stay 0600).
    await files.createExclusive(formatMarker(dir), `{"format":${STORE_FORMAT}}\n`, 0o644);
  } catch (error) {
    if (!isPermissionDenied(error)) throw storeOpenError(dir, error);
  }
}

/** The format the store's marker names, undefined when it has none. */
async function markedFormat(dir: string, files: Files): Promise<number | undefined> {
  const marker = formatMarker(dir);
  let text: string | undefined;
  try {
    text = await files.read(marker);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EISDIR")
      throw storeReadError(dir, marker, error);
    throw new StoreError(
      "STORE_UNREADABLE",
      `the result store ${dir} has a directory where its format marker ${marker} belongs (no baton made it); remove it (baton writes the marker again), or give this run another store (--store DIR)`,
      dir,
      marker,
      { cause: error },
    );
  }
  if (text === undefined) return undefined;
  const format = formatIn(text);
  if (format === undefined) {
    // A marker appears whole (`Files.createExclusive`): an empty one was emptied afterwards.
    const what =
      text === ""
        ? `an empty format marker ${marker} (baton writes it whole, so something emptied it)`
        : `a format marker ${marker} that names no format (it holds ${JSON.stringify(text.slice(0, 80))})`;
    throw new StoreError(
      "STORE_UNREADABLE",
      `the result store ${dir} has ${what}; baton writes it as {"format":${STORE_FORMAT}}: put back the one its baton wrote, or give this run another store (--store DIR)`,
      dir,
      marker,
    );
  }
  if (format > STORE_FORMAT) throw newerFormatError(dir, marker, format);
  return format;
}

/**
 * The `STORE_NEWER_FORMAT` error: the store (its marker) or an entry of it, `path`, is in
 * `format`, newer than this baton's, and what to do.
 */
export function newerFormatError(dir: string, path: string, format: number): StoreError {
  return new StoreError(
    "STORE_NEWER_FORMAT",
    `the result store ${dir} was written by a newer baton: ${path} is in store format ${format}, and this baton knows formats up to ${STORE_FORMAT}; no entry of it was moved or written over. Upgrade baton to use this store, or give this run another store (--store DIR) or none (--no-store)`,
    dir,
    path,
  );
}

/** The format a marker's text names: a whole number of 1 or more. */
function formatIn(text: string): number | undefined {
  try {
    const format = (JSON.parse(text) as { format?: unknown } | null)?.format;
    return Number.isSafeInteger(format) && (format as number) >= 1 ? (format as number) : undefined;
  } catch {
    return undefined;
  }
}
