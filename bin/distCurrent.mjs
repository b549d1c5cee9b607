// Whether the compiled dist/ beside this bin is compiled from the src/ beside it: a digest
// of every file under src/ (its path and its bytes), which `npm run build` writes into dist/
// once the build is complete (scripts/stampDist.mjs), compared with the digest of src/ now.
// A dist/ built before an edit, a checkout, a pull or a failed build has no digest or
// another one, and the `baton` command then runs the sources instead.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The file in dist/ holding the digest of the sources it was compiled from. */
export const DIGEST_FILE = "sources.digest";

/** The digest of every file under `root`/src: each relative path, its length, its bytes. */
export function sourcesDigest(root = ROOT) {
  const hash = createHash("sha256");
  const walk = (dir) => {
    const entries = readdirSync(join(root, dir), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else {
        const bytes = readFileSync(join(root, path));
        hash.update(`${path}\0${bytes.length}\0`).update(bytes);
      }
    }
  };
  walk("src");
  return hash.digest("hex");
}

/** Whether `root`/dist holds the digest of `root`/src as it is now (false if either is unreadable). */
export function distIsCurrent(root = ROOT) {
  try {
    return readFileSync(join(root, "dist", DIGEST_FILE), "utf8").trim() === sourcesDigest(root);
  } catch {
    return false;
  }
}
