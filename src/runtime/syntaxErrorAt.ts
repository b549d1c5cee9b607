import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** A syntax error in one of a module's files: where it is, what is wrong, and the line's text. */
export interface SyntaxErrorSite {
  /** The file's absolute path. */
  readonly file: string;
  /** From 1. */
  readonly line: number;
  /** From 1, where it is known. */
  readonly column: number | undefined;
  /** What is wrong there, without the location. */
  readonly message: string;
  /** The text of that line, or `undefined` when the file can no longer be read. */
  readonly text: string | undefined;
}

/** tsx's (esbuild's) error for a TypeScript or JSON file: `FILE:LINE:COLUMN: ERROR: WHAT`, column from 0. */
const TRANSFORM_FAILED = /^Transform failed with \d+ errors?:\n(.+?):(\d+):(\d+): ERROR: (.*)/;
/**
 * What Node prints first of a JavaScript syntax error: `FILE:LINE` (a path, or an ES module's
 * URL), the line, and a caret under the spot (none at the end of the input).
 */
const NODE_LOCATION = /^(.+?):(\d+)\n.*\n(?:( *)\^)?/;
/** tsx's lexer's error for a JavaScript file it scanned: `Parse error FILE:LINE:COLUMN`. */
const LEXER_FAILED = /^Parse error (.+\.[cm]?js):\d+:\d+$/;
/** `require` of a JSON file that does not parse: `FILE: WHAT in JSON at position N`. */
const JSON_POSITION = /^(.+?\.json): (.*?) in JSON at position (\d+)/;

/**
 * Where the syntax error `error` is that loading a module threw, in the module or a file it
 * imports. tsx says where for a TypeScript (or JSON) file (its lexer's error for a JavaScript
 * one names the file only, which `node --check` then reads), a CommonJS module's stack begins
 * with it, and a JSON file `require`d says at which character; an ES module's error says it
 * nowhere (its stack holds Node's frames only), so `node --check` reads the JavaScript files
 * among `files()` (the module and the local files it imports) again, in turn, until one
 * fails. `undefined` for another error, or one no file is found for.
 *
 * @example
 * ```ts
 * syntaxErrorAt(error, () => ["/home/me/graph.mjs", "/home/me/helpers.js"]);
 * // { file: "/home/me/helpers.js", line: 4, column: 3, message: "Unexpected identifier 'b'", text: "  b: 2," }
 * ```
 */
export function syntaxErrorAt(
  error: unknown,
  files: () => readonly string[],
): SyntaxErrorSite | undefined {
  if (!(error instanceof Error)) return undefined;
  const transform = TRANSFORM_FAILED.exec(error.message);
  if (transform !== null) {
    const [, file, line, column, message] = transform;
    return site(file!, Number(line), Number(column) + 1, message!);
  }
  // tsx scans a JavaScript module for its imports before Node loads it, and its lexer's
  // error gives the file but no true place ("Parse error /home/me/graph.mjs:1:1" for a
  // missing parenthesis on line 3): Node's check of that file says what and where.
  const lexed = LEXER_FAILED.exec(error.message);
  if (lexed !== null) return checkedSite(lexed[1]!, undefined);
  if (!(error instanceof SyntaxError)) return undefined;
  const json = JSON_POSITION.exec(error.message);
  if (json !== null) return jsonSite(json[1]!, json[2]!, Number(json[3]));
  const stated = nodeSite(error.stack ?? "", error.message);
  if (stated !== undefined) return stated;
  for (const file of files().filter((f) => /\.[cm]?js$/.test(f))) {
    const found = checkedSite(file, error.message);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Where `node --check` finds the syntax error in the JavaScript `file`: the one it says is
 * `expected` (the import's own complaint), or, without one, any it says.
 */
function checkedSite(file: string, expected: string | undefined): SyntaxErrorSite | undefined {
  // Node 20's check of a `.js` file outside an ES module package passes one with ES module
  // syntax and an error (it reads it as CommonJS, which fails, then as an ES module, which
  // it does not report), so such a file is checked as an ES module too.
  const asModule = file.endsWith(".js") ? [["--experimental-default-type=module"]] : [];
  for (const flags of [[], ...asModule]) {
    const checked = spawnSync(process.execPath, [...flags, "--check", file], {
      encoding: "utf8",
      timeout: 10_000,
    });
    // The same complaint as the import's: a file that is not valid only as what it is not
    // loaded as (CommonJS that an ES module may not be) is no answer.
    const complaint = /^SyntaxError: (.*)$/m.exec(checked.stderr ?? "")?.[1];
    const found =
      complaint !== undefined && (expected === undefined || complaint === expected)
        ? nodeSite(checked.stderr, complaint)
        : undefined;
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The site Node's printed location at the start of `printed` names, if it begins with one. */
function nodeSite(printed: string, message: string): SyntaxErrorSite | undefined {
  const located = NODE_LOCATION.exec(printed);
  if (located === null) return undefined;
  const [, file, line, indent] = located;
  const path = file!.startsWith("file:") ? fileURLToPath(file!) : file!;
  return site(path, Number(line), indent === undefined ? undefined : indent.length + 1, message);
}

/** The site of the character at `position` of the JSON file `file`. */
function jsonSite(file: string, message: string, position: number): SyntaxErrorSite {
  const before = readText(file)?.slice(0, position).split("\n");
  if (before === undefined) return site(file, 1, undefined, message);
  return site(file, before.length, before.at(-1)!.length + 1, message);
}

function site(
  file: string,
  line: number,
  column: number | undefined,
  message: string,
): SyntaxErrorSite {
  return { file, line, column, message, text: readText(file)?.split("\n")[line - 1] };
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
