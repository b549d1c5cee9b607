// Whether the compiled dist/ beside this bin is compiled from the src/ beside it: a digest
// of every file under src/ (its path and its bytes), which `npm run build` writes into dist/
// once the build is complete (scripts/stampDist.mjs), compared with the digest of src/ now.
// A dist/ built before an edit, a checkout, a pull or a failed build has no digest or
// another one, and the `baton` command then runs the sources instead.
// Reading every file takes 30-70 ms on a busy machine, so a check that found the digest
// current leaves a note of what stat said of each file then (sources.checked): its path,
// size, modification and change times and inode. While stat says the same, no file was
// written since: a write sets the change time to the clock's now, and nothing but the clock
// sets it (touch -d, cp -p and rsync -a set the modification time, never the change time).
// A file changed too recently for its timestamps' granularity to tell a later write apart
// (the last SETTLED_MS) gets no note, so the next check reads the files again.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The file in dist/ holding the digest of the sources it was compiled from. */
export const DIGEST_FILE = "sources.digest";

/** The file in dist/ noting what stat said of src/ when its digest was last found current. */
export const CHECKED_FILE = "sources.checked";

/** How long ago a file must have changed for a note to vouch for it. */
const SETTLED_MS = 2_000;

/** Calls `visit` with the path (`src/…`) of every file under `root`/src, in a fixed order. */
function eachSource(root, visit) {
  const walk = (dir) => {
    const entries = readdirSync(join(root, dir), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else visit(path);
    }
  };
  walk("src");
}

/** The digest of every file under `root`/src: each relative path, its length, its bytes. */
export function sourcesDigest(root = ROOT) {
  const hash = createHash("sha256");
  eachSource(root, (path) => {
    const bytes = readFileSync(join(root, path));
    hash.update(`${path}\0${bytes.length}\0`).update(bytes);
  });
  return hash.digest("hex");
}

/**
 * What stat says of every file under `root`/src (path, size, times, inode, device) as one
 * hash, and whether every file changed more than SETTLED_MS before `now`.
 */
export function sourcesStat(root = ROOT, now = Date.now()) {
  const hash = createHash("sha256");
  let settled = true;
  eachSource(root, (path) => {
    const s = statSync(join(root, path), { bigint: true });
    const changed = Math.max(Number(s.ctimeMs), Number(s.mtimeMs));
    if (now - changed < SETTLED_MS) settled = false;
    hash.update(`${path}\0${s.size}\0${s.mtimeNs}\0${s.ctimeNs}\0${s.ino}\0${s.dev}\n`);
  });
  return { stat: hash.digest("hex"), settled };
}

/**
 * Whether `root`/dist holds the digest of `root`/src as it is now (false if either is
 * unreadable): at once when the note says stat found the same, else by reading src/.
 */
export function distIsCurrent(root = ROOT, now = Date.now()) {
  try {
    const digest = readFileSync(join(root, "dist", DIGEST_FILE), "utf8").trim();
    const { stat, settled } = sourcesStat(root, now);
    const note = `${stat} ${digest}\n`;
    if (settled && readNote(root) === note) return true;
    if (sourcesDigest(root) !== digest) return false;
    if (settled) writeNote(root, note);
    return true;
  } catch {
    return false;
  }
}

function readNote(root) {
  try {
    return readFileSync(join(root, "dist", CHECKED_FILE), "utf8");
  } catch {
    return undefined;
  }
}

/** Writes the note whole (renamed into place); a dist/ it cannot write to is read each time. */
function writeNote(root, note) {
  const file = join(root, "dist", CHECKED_FILE);
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, note);
    renameSync(temporary, file);
  } catch {
    rmSync(temporary, { force: true });
  }
}
