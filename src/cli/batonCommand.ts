import { realpathSync } from "node:fs";
import { delimiter, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { shellQuote } from "../runtime/shellQuote.ts";

/** This baton's command, bin/baton.js (from src/cli and dist/cli alike). */
const BATON_BIN = fileURLToPath(new URL("../../bin/baton.js", import.meta.url));

/** Where `npm exec` (npx) and `npm run` put a project's commands on the PATH they give. */
const NPM_BIN = `${sep}node_modules${sep}.bin`;

/**
 * How a person runs this baton from a shell, for a command line baton prints to be pasted
 * into another terminal: `baton` when the first `baton` on that shell's PATH is this one (an
 * install with `npm install -g`, a clone's `npm link`), else the absolute path of its
 * bin/baton.js. A project's own install, run as `npx baton` (as README's Writing a graph
 * does), is on the PATH only of the commands npm runs: the `node_modules/.bin` folders npm
 * puts there (`npm_command` says npm ran this one) are not the user's own, and a `baton
 * worker` printed bare was "command not found" in the terminal it was pasted into.
 *
 * @example
 * ```ts
 * batonCommand({ PATH: "/usr/local/bin:/usr/bin" }); // "baton" after npm install -g baton, else "'/home/me/app/node_modules/baton/bin/baton.js'"
 * ```
 */
export function batonCommand(env: NodeJS.ProcessEnv = process.env): string {
  const ours = realPath(BATON_BIN);
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir === "" || (env.npm_command !== undefined && dir.endsWith(NPM_BIN))) continue;
    const found = realPath(join(dir, "baton"));
    if (found === undefined) continue;
    return found === ours ? "baton" : shellQuote(BATON_BIN);
  }
  return shellQuote(BATON_BIN);
}

/** `path` with every symbolic link resolved, or undefined when there is nothing there. */
function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
