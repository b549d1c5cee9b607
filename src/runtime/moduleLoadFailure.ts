import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { closestName } from "../closestName.ts";
import { ModuleLoadError } from "../errors.ts";
import { moduleFiles } from "./moduleSource.ts";
import { nearestFile } from "./nearestFile.ts";
import { shellLine } from "./shellQuote.ts";
import { type SyntaxErrorSite, syntaxErrorAt } from "./syntaxErrorAt.ts";
import { thrownAt } from "./whereThrown.ts";

/** Node's word for an import that names no installed package or existing file, ES module or CommonJS. */
const NOT_FOUND = new Set(["ERR_MODULE_NOT_FOUND", "MODULE_NOT_FOUND"]);
/** `Cannot find package 'x' imported from FILE` / `Cannot find module 'x' imported from FILE`. */
const ESM_NOT_FOUND = /^Cannot find (?:package|module) '([^']+)' imported from (.+)$/;
/** `Cannot find module 'x'` with CommonJS's `Require stack:` below it. */
const CJS_NOT_FOUND = /^Cannot find module '([^']+)'/;
/** An ES module's import of a name the module it imports does not export (a link error). */
const NO_SUCH_EXPORT = /^The requested module '([^']+)' does not provide an export named '([^']+)'/;
/** The same of a CommonJS module, whose named exports Node guesses from its code. */
const NO_SUCH_CJS_EXPORT =
  /^Named export '([^']+)' not found\. The requested module '([^']+)' is a CommonJS module/;
/** A file Node has no loader for (`baton run README.md`, an `import "./data.yaml"`). */
const UNKNOWN_EXTENSION = /^Unknown file extension "([^"]+)" for (.+)$/;

/**
 * Why the module `path` (at `absolute`) did not load, as a `ModuleLoadError` that names the
 * file at fault, which may be one the module imports, and says what to do:
 * - a syntax error: the file, line and column, what is wrong, and the line itself
 *   (`MODULE_SYNTAX`);
 * - an import of a name that the module imported does not export: where, which name from
 *   which module (its file, when local), and the line (`MODULE_MISSING_EXPORT`);
 * - an import of a package that is not installed: which file imports it, and to `npm install`
 *   it in the folder of that file's package.json (`MODULE_MISSING_IMPORT`; a local file that
 *   is not there: to check the path);
 * - a throw (or a rejected top-level `await`) while loading: where, what it said, to fix the
 *   module's top-level code, and how to see the whole stack (`MODULE_THREW`); a `BatonError`
 *   (an unknown `job()` option), whose message says what to do, gets where and what it said;
 * - a file that is no module (a `.md` given, a `.yaml` imported): the modules baton loads, or
 *   to read an imported one as a file (`MODULE_LOAD`).
 * Anything else keeps Node's message (`MODULE_LOAD`). `error` is the `cause`.
 *
 * @example
 * ```ts
 * // error: what import() threw, graph.ts's top-level `throw new Error("DATA_DIR is not set")`
 * moduleLoadFailure(error, "graph.ts", "/home/me/graph.ts").message;
 * // "could not load graph.ts: /home/me/graph.ts:3:7 threw while loading: DATA_DIR is not set; fix its top-level code (for its stack: node --import /home/me/node_modules/tsx/dist/loader.mjs /home/me/graph.ts)"
 * ```
 */
export function moduleLoadFailure(error: unknown, path: string, absolute: string): ModuleLoadError {
  const failed = `could not load ${path}`;
  const cause = { cause: error };
  const message = messageOf(error);
  const unexported = missingExport(message);
  if (unexported !== undefined) {
    // The import's place is in the error's stack: no file needs checking for it.
    const site = syntaxErrorAt(error, () => []);
    const says = unexportedMessage(unexported, site?.file);
    return site === undefined
      ? new ModuleLoadError(
          "MODULE_MISSING_EXPORT",
          `${failed}: missing export: ${says}`,
          undefined,
          cause,
        )
      : new ModuleLoadError(
          "MODULE_MISSING_EXPORT",
          `${failed}: ${placed("missing export", site, says)}`,
          { file: site.file, line: site.line, column: site.column },
          cause,
        );
  }
  const site = syntaxErrorAt(error, () => localFiles(absolute));
  if (site !== undefined) {
    const { file, line, column } = site;
    const says = `${failed}: ${placed("syntax error", site, site.message)}`;
    return new ModuleLoadError("MODULE_SYNTAX", says, { file, line, column }, cause);
  }
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const missing = NOT_FOUND.has(code ?? "") ? missingImport(error as Error, message) : undefined;
  if (missing !== undefined) {
    const { importer, says } = missing;
    return new ModuleLoadError(
      "MODULE_MISSING_IMPORT",
      `${failed}: ${says}`,
      { file: importer },
      cause,
    );
  }
  const notModule = code === "ERR_UNKNOWN_FILE_EXTENSION" ? UNKNOWN_EXTENSION.exec(message) : null;
  if (notModule !== null) {
    const extension = notModule[1]!;
    const file = notModule[2]!;
    const says =
      file === absolute
        ? `it is a ${extension} file, not a module: give a TypeScript (.ts, .mts, .cts) or JavaScript (.js, .mjs, .cjs) file`
        : `it imports ${file}, a ${extension} file, which is not a module: import TypeScript, JavaScript or JSON, or read the file with readFileSync`;
    return new ModuleLoadError("MODULE_LOAD", `${failed}: ${says}`, { file }, cause);
  }
  const at = thrownAt(error);
  // Node's loader throws its errors (a name it cannot resolve, a file it cannot load) with a
  // code of its own (`ERR_…`); anything else was thrown by the module's code as it ran.
  const loader = error instanceof SyntaxError || code?.startsWith("ERR_") === true;
  if (loader) {
    return new ModuleLoadError(
      "MODULE_LOAD",
      `${failed}: ${message}${at === undefined ? "" : ` (at ${at})`}`,
      undefined,
      cause,
    );
  }
  const where = at === undefined ? { file: absolute } : location(at);
  const thrower =
    at === undefined
      ? "it"
      : [where.file, where.line, where.column].filter((part) => part !== undefined).join(":");
  // Baton's own error (an unknown job() option at the top level) says what to do already.
  const fix = batonsOwn(error)
    ? ""
    : `; fix its top-level code (for its stack: ${runAlone(where.file)})`;
  return new ModuleLoadError(
    "MODULE_THREW",
    `${failed}: ${thrower} threw while loading: ${message}${fix}`,
    where,
    cause,
  );
}

/**
 * Whether `error` is a `BatonError`, whose message says what to do: of this copy of baton, or
 * of the one the module imported (another file in a clone, whose class is another).
 */
function batonsOwn(error: unknown): boolean {
  for (let proto = error; typeof proto === "object" && proto !== null; ) {
    if (proto.constructor?.name === "BatonError") return true;
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}

/** `WHAT at FILE:LINE:COLUMN: SAYS`, then the line, and a caret under the column. */
function placed(what: string, { file, line, column, text }: SyntaxErrorSite, says: string): string {
  const where = `${file}:${line}${column === undefined ? "" : `:${column}`}`;
  if (text === undefined) return `${what} at ${where}: ${says}`;
  const gutter = `  ${line} | `;
  const caret =
    column === undefined ? "" : `\n${" ".repeat(gutter.length - 2)}| ${" ".repeat(column - 1)}^`;
  return `${what} at ${where}: ${says}\n${gutter}${text}${caret}`;
}

/** An import of a name its module does not export: the name, the module, and whether CommonJS. */
interface MissingExport {
  name: string;
  specifier: string;
  commonJs: boolean;
}

function missingExport(message: string): MissingExport | undefined {
  const esm = NO_SUCH_EXPORT.exec(message);
  if (esm !== null) return { specifier: esm[1]!, name: esm[2]!, commonJs: false };
  const cjs = NO_SUCH_CJS_EXPORT.exec(message);
  if (cjs !== null) return { name: cjs[1]!, specifier: cjs[2]!, commonJs: true };
  return undefined;
}

/**
 * What is missing and what to do: the module imported (with its file, when a local one that is
 * there, resolved from `importer`) does not export the name.
 */
function unexportedMessage(
  { name, specifier, commonJs }: MissingExport,
  importer: string | undefined,
): string {
  const local = /^(?:\.|\/)/.test(specifier);
  const file = local && importer !== undefined ? resolve(dirname(importer), specifier) : undefined;
  const module = `"${specifier}"${file !== undefined && existsSync(file) ? ` (${file})` : ""}`;
  if (commonJs) {
    return `${name} is imported from ${module}, a CommonJS module in which Node finds no export of that name: import its default export and take ${name} from that (import m from "${specifier}"; const { ${name} } = m)`;
  }
  const add = name === "default" ? "add export default there" : "export it there";
  const fix = local
    ? `${add}, or import a name that module exports`
    : "import a name it exports (check the package's installed version and its documentation)";
  return name === "default"
    ? `the default export of ${module} is imported, and it has none: ${fix}`
    : `${name} is imported from ${module}, which does not export it: ${fix}`;
}

/** What a missing import is: which file imports what, and what to do about it. */
function missingImport(
  error: Error & { requireStack?: readonly string[] },
  message: string,
): { importer: string; says: string } | undefined {
  const esm = ESM_NOT_FOUND.exec(message);
  const specifier = esm?.[1] ?? CJS_NOT_FOUND.exec(message)?.[1];
  const importer = esm?.[2] ?? error.requireStack?.[0];
  if (specifier === undefined || importer === undefined) return undefined;
  const verb = esm === null ? "requires" : "imports";
  if (/^(?:\.|\/|file:)/.test(specifier)) {
    const path = specifier.startsWith("file:")
      ? fileURLToPath(specifier)
      : resolve(dirname(importer), specifier);
    return {
      importer,
      says: `${importer} ${verb} ${specifier}, which is not there; check the path${nearestFile(path)}`,
    };
  }
  const name = packageName(specifier);
  const folder = packageFolder(importer);
  // A typo of a package that is there (`batn`): npm install would fetch another, or a squatter's.
  const meant = closestName(name, ["baton", ...dependencies(folder)]);
  const install = `npm install ${name} in ${folder}`;
  return {
    importer,
    says:
      meant === undefined
        ? `${importer} ${verb} the package ${name}, which is not installed: run ${install}`
        : `${importer} ${verb} the package ${name}, which is not installed: did you mean ${meant}? (if ${name} is another package, run ${install})`,
  };
}

/** The packages the package.json in `folder` depends on, of every kind; none when it is unreadable. */
function dependencies(folder: string): string[] {
  try {
    const json = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as Record<
      string,
      unknown
    >;
    return ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]
      .map((kind) => json[kind])
      .flatMap((listed) =>
        typeof listed === "object" && listed !== null ? Object.keys(listed) : [],
      );
  } catch {
    return [];
  }
}

/** The package a bare specifier names: `lodash` of `lodash/fp`, `@scope/pkg` of `@scope/pkg/x`. */
function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return parts.slice(0, specifier.startsWith("@") ? 2 : 1).join("/");
}

/** The folder of the package.json nearest above `file`, or the file's own folder. */
function packageFolder(file: string): string {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) return dirname(file);
  }
}

/**
 * The command that runs `file` alone, so that Node prints what it throws with its stack: a
 * TypeScript one through the tsx loader baton loads it with, by its absolute path, which works
 * wherever baton is installed (`npx tsx` did only where the project had tsx itself, not where
 * baton was installed from a folder or a tarball: tsx is baton's dependency).
 */
function runAlone(file: string): string {
  if (/\.[cm]?js$/.test(file)) return shellLine(["node", file]);
  return shellLine(["node", "--import", createRequire(import.meta.url).resolve("tsx"), file]);
}

/** `{ file, line, column }` of a `FILE:LINE:COLUMN` location (a file URL's path). */
function location(at: string): { file: string; line?: number; column?: number } {
  const [, file, line, column] = /^(.*?)(?::(\d+))?(?::(\d+))?$/.exec(at)!;
  return {
    file: file!.startsWith("file:") ? fileURLToPath(file!) : file!,
    ...(line !== undefined && { line: Number(line) }),
    ...(column !== undefined && { column: Number(column) }),
  };
}

/** The module and the local files it imports, for a syntax error to be looked for in. */
function localFiles(absolute: string): readonly string[] {
  try {
    return [...moduleFiles(absolute).keys()];
  } catch {
    return [absolute];
  }
}

function messageOf(error: unknown): string {
  return (error as Error | undefined)?.message ?? String(error);
}
