/**
 * `npm run bench -- NAME` runs bench/NAME.ts. Each benchmark prints what it measures and,
 * as its last line, one JSON object with its figures. It runs under the V8 flags the `baton`
 * command sets (bin/v8Flags.mjs), as baton runs its engine; `npm run bench -- NAME
 * --node-defaults` runs it under Node's own, as a library embedded without them runs.
 */
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { BATON_V8_FLAGS, setBatonV8Flags } from "../bin/v8Flags.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const names = readdirSync(here)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts")
  .map((f) => f.slice(0, -3));
const [name, ...options] = process.argv.slice(2);
const unknown = options.filter((option) => option !== "--node-defaults");
if (!name || !names.includes(name) || unknown.length > 0) {
  console.error(
    `usage: npm run bench -- NAME [--node-defaults], where NAME is one of: ${names.join(", ")}`,
  );
  process.exit(2);
}
const nodeDefaults = options.includes("--node-defaults");
if (!nodeDefaults) setBatonV8Flags();
console.log(
  `V8 flags: ${nodeDefaults ? "Node's defaults (--node-defaults)" : `the baton command's (${BATON_V8_FLAGS.join(" ")})`}`,
);
await import(`./${name}.ts`);
