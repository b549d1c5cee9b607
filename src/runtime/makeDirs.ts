import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * `mkdir -p`, one component at a time. Node's own `mkdir(dir, { recursive: true })` spins
 * forever at full CPU when the kernel answers ENOENT for a component whose parent exists (any
 * path under `/proc/self/`, e.g. a mistyped `--state-dir`); here that is the plain ENOENT
 * error naming the path. Missing components get `mode`; a component another process creates
 * meanwhile is accepted; a path that exists but is not a directory is EEXIST or ENOTDIR.
 * Returns the topmost folder this call made (as Node's recursive `mkdir` does), undefined when
 * it made none.
 *
 * @example
 * ```ts
 * makeDirs("/var/lib/baton/logs", 0o700); // "/var/lib/baton" when only /var/lib was there
 * ```
 */
export function makeDirs(dir: string, mode = 0o777): string | undefined {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.push(at);
    if (dirname(at) === at) break;
  }
  if (missing.length === 0) {
    if (!statSync(dir).isDirectory()) mkdirSync(dir);
    return undefined;
  }
  let top: string | undefined;
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path, { mode });
      top ??= path;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(path).isDirectory())
        throw err;
    }
  }
  return top;
}
