import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), "../../src");

/** The modules a source file imports at run time (`import type` is erased, so not counted). */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found: string[] = [];
  for (const match of text.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+"([^"]+)"/gms)) {
    found.push(match[1]!);
  }
  return found;
}

/** Every package or builtin `entry` reaches through its relative imports, with the path to it. */
function reachedPackages(entry: string): Map<string, string[]> {
  const reached = new Map<string, string[]>();
  const seen = new Set<string>();
  const walk = (file: string, path: string[]) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of runtimeImports(file)) {
      if (spec.startsWith(".")) walk(resolve(dirname(file), spec), [...path, spec]);
      else if (!reached.has(spec)) reached.set(spec, [...path, spec]);
    }
  };
  walk(entry, [relative(SRC, entry)]);
  return reached;
}

// ARCHITECTURE "Rooms": the machines decide and the runtime acts (DESIGN §4), and `src/viz`
// turns machines and events into pictures. A module of either that reached `node:` (even
// `node:crypto` through a helper) could not run in a browser or a bundle of its own, and
// would be one import away from I/O.
describe.each(["machines", "viz"])("src/%s", (room) => {
  it.each(readdirSync(join(SRC, room)).filter((f) => f.endsWith(".ts")))(
    "%s reaches no Node builtin and no package but xstate",
    (file) => {
      const foreign = [...reachedPackages(join(SRC, room, file))]
        .filter(([name]) => name !== "xstate")
        .map(([, path]) => path.join(" → "));
      expect(foreign).toEqual([]);
    },
  );
});
