/**
 * Every package that baton's own code imports (src/ and bin/) is a dependency, not a
 * devDependency: an install without devDependencies (`npm ci --omit=dev`, as on a cluster's
 * nodes) must still run the `baton` command and the library. fast-check once was a
 * devDependency while the simulation's shrinking imported it, and that install could not
 * even print `baton --help`. The one exception is an optional peer dependency (the user
 * installs it for the feature that needs it, `@statelyai/inspect` for `connectInspector`):
 * only `import type` may name it statically, so that baton loads without it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";

/** The files below `dir` whose names end with one of `endings`. */
function filesBelow(dir: string, endings: string[]): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && endings.some((ending) => entry.name.endsWith(ending)))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** The package a bare import specifier names: `pino`, `tsx/esm/api` → `tsx`, `@a/b/c` → `@a/b`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** Bare specifiers imported by code (not by comments) in `file`, and whether statically. */
function importsOf(file: string): { specifier: string; static: boolean }[] {
  const code = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
    .join("\n");
  // A package's name starts with a letter, a digit or `@`: a specifier starting with `$` is a
  // template's placeholder in a message, and one starting with `,` the text after a string
  // that ends in `import` (`["node", "--import", loader]`), not a package.
  const found = [
    ...code.matchAll(/(import type [^;]*?)?(?:from|import)\s*(\(?)\s*"([\w@][^"]*)"/g),
  ];
  return found
    .map((m) => ({ specifier: m[3]!, static: m[1] === undefined && m[2] === "" }))
    .filter(({ specifier }) => !specifier.startsWith("node:"));
}

describe("runtime dependencies", () => {
  it("lists every package that src/ and bin/ import under dependencies, or as an optional peer they import only when used", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      name: string;
      dependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const files = [
      ...filesBelow(join(ROOT, "src"), [".ts"]),
      ...filesBelow(join(ROOT, "bin"), [".js", ".mjs"]),
    ];
    const missing = new Set<string>();
    let imported = 0;
    for (const file of files) {
      for (const { specifier, static: loaded } of importsOf(file)) {
        const name = packageOf(specifier);
        if (name === pkg.name || builtinModules.includes(name)) continue;
        imported++;
        const optionalPeer = pkg.peerDependenciesMeta[name]?.optional === true;
        if (optionalPeer && loaded)
          missing.add(
            `${name} (an optional peer that ${file.slice(ROOT.length)} imports statically)`,
          );
        else if (!optionalPeer && !(name in pkg.dependencies))
          missing.add(`${name} (imported by ${file.slice(ROOT.length)})`);
      }
    }
    expect(imported).toBeGreaterThan(20);
    expect([...missing]).toEqual([]);
  });
});
