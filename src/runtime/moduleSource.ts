import { readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { nearestFile } from "./nearestFile.ts";

/** `from "./x"`, `import "./x"`, `import("./x")`, `require("./x")`: a relative specifier. */
const RELATIVE_IMPORT =
  /(?:\bfrom|\bimport|\bimport\s*\(|\brequire\s*\()\s*["'](\.{1,2}\/[^"'\n]+)["']/g;
/** What a specifier without the file's own extension may stand for, tried in this order. */
const CANDIDATE_SUFFIXES = [".ts", ".mts", ".js", ".mjs", "/index.ts", "/index.js"];

/**
 * The text a job module's code hash is taken over: the module file's text and that of every
 * local file it imports with a relative specifier, transitively (`./jobs.ts`, `../lib/x.js`,
 * a `.js` specifier that a TypeScript file stands behind), each under its path relative to
 * the module. Packages are left out (their versions are the deployment's business), and so
 * are imports whose path is computed at run time. A coordinator and a worker that load the
 * same module file from the same tree get the same text; a worker whose imported handler
 * file differs does not, and is refused. A module file that cannot be read (a wrong
 * `jobsModule` given to a pool) is a `ConfigError` naming it.
 *
 * @example
 * ```ts
 * const jobs = loadJobs(module, moduleSource("graph.ts")); // graph.ts + ./jobs.ts + …
 * ```
 */
export function moduleSource(path: string): string {
  const root = resolve(path);
  const base = dirname(root);
  const texts = moduleFiles(path);
  const parts = [texts.get(root)!];
  const imported = [...texts.keys()].filter((file) => file !== root);
  for (const file of imported.map((f) => relative(base, f)).sort()) {
    parts.push(`\n// ${file}\n${texts.get(join(base, file))}`);
  }
  return parts.join("");
}

/**
 * The module file's text and that of every local file it imports with a relative specifier,
 * transitively, by absolute path, the module first (what `moduleSource` covers). A module
 * that cannot be read is a `ConfigError` naming it.
 *
 * @example
 * ```ts
 * [...moduleFiles("graph.ts").keys()]; // ["/home/me/graph.ts", "/home/me/jobs.ts", …]
 * ```
 */
export function moduleFiles(path: string): Map<string, string> {
  const root = resolve(path);
  const texts = new Map<string, string>();
  const pending = [root];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (texts.has(file)) continue;
    const text = file === root ? readModule(root, path) : readFileSync(file, "utf8");
    texts.set(file, text);
    for (const [, specifier] of text.matchAll(RELATIVE_IMPORT)) {
      const found = existingFile(join(dirname(file), specifier!));
      if (found !== undefined && !texts.has(found)) pending.push(found);
    }
  }
  return texts;
}

/**
 * The job module's own text; a module that cannot be read is a `ConfigError` naming it, and
 * the file of a close name beside one that is not there (`jbos.ts`: did you mean jobs.ts?).
 */
function readModule(file: string, given: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(
      `cannot read the job module ${file} (${reason}): give the path of the job module file its workers load` +
        (file === given
          ? ""
          : ` (a relative path such as ${given} is taken from ${process.cwd()})`) +
        (reason === "ENOENT" ? nearestFile(given) : ""),
      { cause: error },
    );
  }
}

/** The file `candidate` names (or a TypeScript file behind its `.js`), if there is one. */
function existingFile(candidate: string): string | undefined {
  const behindJs = candidate.endsWith(".js") ? [`${candidate.slice(0, -3)}.ts`] : [];
  for (const path of [candidate, ...behindJs, ...CANDIDATE_SUFFIXES.map((s) => candidate + s)]) {
    if (statSync(path, { throwIfNoEntry: false })?.isFile()) return path;
  }
  return undefined;
}
