/**
 * What a user of `import … from "baton"` can name: every type of baton's that a public
 * export's signature reaches (its parameters and return, the properties of an exported
 * interface, the members of an exported union, a few levels deep) is exported too, so a user
 * can write `let inspector: InspectorStream` or implement `Procs` with `SpawnOptions`
 * instead of `ReturnType<typeof connectInspector>`. Until this test, more than 30 were not
 * (the inspector's options and stream, the process-table ports, the options of wsNet,
 * cancelFile, remoteProcs and more). The exported machines' own contexts and inputs stay
 * theirs.
 */
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";

/** baton's types a signature reaches that stay unexported, and why. */
const INTERNAL: Record<string, string> = {
  InputArgs: "a helper JobBuilder computes a job's arguments with; an editor shows it expanded",
  InputOf: "a helper JobBuilder computes a job's input with; an editor shows it expanded",
  OutputOf: "a helper JobBuilder computes a job's value with; an editor shows it expanded",
  ResultStore: "an open store, which baton's command passes as `store`; a user gives a directory",
};

/** How many levels below an export the walk goes (an export's property's type's property). */
const DEPTH = 3;

/** Unexported types of baton's reached from the public exports: "Name (file)" → exports reaching it. */
function unexportedTypes(): Map<string, Set<string>> {
  const options = ts.parseJsonConfigFileContent(
    ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile).config,
    ts.sys,
    ROOT,
  ).options;
  const index = join(ROOT, "src", "index.ts");
  const src = join(ROOT, "src");
  const program = ts.createProgram([index], options);
  const checker = program.getTypeChecker();
  const exported = new Map<ts.Symbol, string>();
  for (const symbol of checker.getExportsOfModule(
    checker.getSymbolAtLocation(program.getSourceFile(index)!)!,
  )) {
    exported.set(
      symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol,
      symbol.name,
    );
  }
  const named = ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class;
  const found = new Map<string, Set<string>>();
  const visited = new Set<ts.Type>();
  const isBatons = (symbol: ts.Symbol | undefined) =>
    symbol?.declarations?.[0]?.getSourceFile().fileName.startsWith(src) === true;
  const visit = (type: ts.Type, from: string, depth: number): void => {
    if (visited.has(type) || depth > DEPTH) return;
    visited.add(type);
    const symbol = type.aliasSymbol ?? type.getSymbol();
    if (symbol && isBatons(symbol) && symbol.flags & named && !exported.has(symbol)) {
      const file = symbol.declarations![0]!.getSourceFile().fileName.slice(ROOT.length);
      const key = `${symbol.name} (${file})`;
      found.set(key, (found.get(key) ?? new Set()).add(from));
    }
    const next = (inner: ts.Type) => visit(inner, from, depth + 1);
    if (type.isUnionOrIntersection()) type.types.forEach(next);
    type.aliasTypeArguments?.forEach(next);
    if (type.flags & ts.TypeFlags.Object) {
      const reference = type as ts.TypeReference;
      if (reference.objectFlags & ts.ObjectFlags.Reference) {
        checker.getTypeArguments(reference).forEach(next);
      }
    }
    for (const signature of [...type.getCallSignatures(), ...type.getConstructSignatures()]) {
      for (const parameter of signature.getParameters()) next(checker.getTypeOfSymbol(parameter));
      next(signature.getReturnType());
    }
    // The members of baton's own types and of object literal types, not of Node's or xstate's.
    if (isBatons(symbol) || symbol?.name === "__type" || symbol?.name === "__object") {
      for (const property of type.getProperties()) {
        const declaration = property.valueDeclaration ?? property.declarations?.[0];
        const hidden = ts.ModifierFlags.Private | ts.ModifierFlags.Protected;
        if (declaration && ts.getCombinedModifierFlags(declaration) & hidden) continue;
        next(checker.getTypeOfSymbol(property));
      }
    }
  };
  for (const [symbol, name] of exported) {
    if (/Machine$|^machineCatalog$/.test(name)) continue;
    if (
      symbol.flags &
      (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class)
    ) {
      visit(checker.getDeclaredTypeOfSymbol(symbol), name, 0);
    }
    if (symbol.flags & ts.SymbolFlags.Value) visit(checker.getTypeOfSymbol(symbol), name, 0);
  }
  return found;
}

describe("baton's public surface", () => {
  it("exports every type of baton's that a public export's signature names, but its internal helpers", () => {
    const found = unexportedTypes();
    const names = [...found.keys()].map((key) => key.split(" ")[0]!);
    expect(names.sort()).toEqual(Object.keys(INTERNAL).sort());
  });
});
