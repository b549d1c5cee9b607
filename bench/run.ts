/**
 * `npm run bench -- NAME` runs bench/NAME.ts. Each benchmark prints what it measures and,
 * as its last line, one JSON object with its figures.
 */
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const names = readdirSync(here)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts")
  .map((f) => f.slice(0, -3));
const name = process.argv[2];
if (!name || !names.includes(name)) {
  console.error(`usage: npm run bench -- NAME, where NAME is one of: ${names.join(", ")}`);
  process.exit(2);
}
await import(`./${name}.ts`);
