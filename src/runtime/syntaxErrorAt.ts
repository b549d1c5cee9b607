import { spawnSync } from "node:child_process";

/** The `FILE:LINE` line Node puts first in what it prints of a syntax error. */
const LOCATION = /^(.+:\d+)\n/;

/**
 * Where the syntax error `error` that loading the JavaScript module `file` threw is (`FILE:LINE`):
 * a CommonJS module's error says it first in its stack, an ES module's nowhere (its stack
 * holds Node's frames only, and `whereThrown` named baton's own), so `node --check` reads
 * the module again for it. `undefined` for another error, a TypeScript module (tsx's message
 * says where), or an error in a module `file` imports (`file` itself then checks clean).
 *
 * @example
 * ```ts
 * syntaxErrorAt(error, "/home/me/graph.mjs"); // "/home/me/graph.mjs:2"
 * ```
 */
export function syntaxErrorAt(error: unknown, file: string): string | undefined {
  if (!(error instanceof SyntaxError)) return undefined;
  const stated = LOCATION.exec(error.stack ?? "")?.[1];
  if (stated !== undefined || !/\.[cm]?js$/.test(file)) return stated;
  const checked = spawnSync(process.execPath, ["--check", file], {
    encoding: "utf8",
    timeout: 10_000,
  });
  return LOCATION.exec(checked.stderr ?? "")?.[1];
}
