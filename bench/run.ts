/**
 * `npm run bench -- NAME` runs bench/NAME.ts. Each benchmark prints what it measures and,
 * as its last line, one JSON object with its figures. It runs under the V8 flags the `baton`
 * command sets (bin/v8Flags.mjs), as baton runs its engine; `npm run bench -- NAME
 * --node-defaults` runs it under Node's own, as a library embedded without them runs. It
 * measures the compiled baton (dist/) when dist/ is compiled from the src/ beside it, as the
 * `baton` command and `import "baton"` run it: each `../src/….ts` a bench imports is its
 * compiled twin (bin/resolveBaton.mjs); else, and with `--sources`, the TypeScript sources
 * through tsx, whose transform names every closure it makes (a call a closure).
 */
import { readdirSync } from "node:fs";
import { register } from "node:module";
import { fileURLToPath } from "node:url";
import { distIsCurrent } from "../bin/distCurrent.mjs";
import { BATON_V8_FLAGS, setBatonV8Flags } from "../bin/v8Flags.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const names = readdirSync(here)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts")
  .map((f) => f.slice(0, -3));
const [name, ...options] = process.argv.slice(2);
const unknown = options.filter((option) => option !== "--node-defaults" && option !== "--sources");
if (!name || !names.includes(name) || unknown.length > 0) {
  console.error(
    `usage: npm run bench -- NAME [--node-defaults] [--sources], where NAME is one of: ${names.join(", ")}`,
  );
  process.exit(2);
}
const nodeDefaults = options.includes("--node-defaults");
if (!nodeDefaults) setBatonV8Flags();
console.log(
  `V8 flags: ${nodeDefaults ? "Node's defaults (--node-defaults)" : `the baton command's (${BATON_V8_FLAGS.join(" ")})`}`,
);
const compiled = !options.includes("--sources") && distIsCurrent();
if (compiled) register("../bin/resolveBaton.mjs", import.meta.url, { data: { compiled } });
console.log(
  compiled
    ? "baton: compiled (dist/)"
    : `baton: the sources through tsx (${options.includes("--sources") ? "--sources" : "dist/ is not current: npm run build"})`,
);
await import(`./${name}.ts`);
