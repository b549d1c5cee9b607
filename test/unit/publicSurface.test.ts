/**
 * What a user of `import … from "baton"` can name and pass.
 *
 * Every type of baton's that a public export's signature reaches (its parameters and return,
 * the properties of an exported interface, the members of an exported union, a few levels
 * deep) is exported too, so a user can write `let inspector: InspectorStream` or implement
 * `Procs` with `SpawnOptions` instead of `ReturnType<typeof connectInspector>`. Until this
 * test, more than 30 were not (the inspector's options and stream, the process-table ports,
 * the options of wsNet, cancelFile, remoteProcs and more). The exported machines' own
 * contexts and inputs stay theirs.
 *
 * Every optional property of what a user passes (the parameters of an exported function,
 * constructor, or method of what one returns, and the objects inside them) takes `undefined`
 * (`x?: T | undefined`), so a project compiled with `exactOptionalPropertyTypes` can write
 * `createEngine({ jobs, store: maybeStore })`. Until this test, none did.
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
  RunEvents: "the Run's event map; each event's own type is exported",
  NotRankLaunchKey: "the LaunchSpec keys RankLaunch leaves to baton; an editor shows them expanded",
  OnlyDefinitionKeys:
    "a helper defineJobs refuses a kind's unknown keys with; an editor shows it expanded",
};

/** How many levels below an export the walk for unexported types goes. */
const NAMED_DEPTH = 3;

/** Generic types of the language whose type arguments a user passes or is given as they are. */
const CONTAINERS = new Set([
  "Array",
  "ReadonlyArray",
  "Promise",
  "PromiseLike",
  "Map",
  "ReadonlyMap",
  "Set",
  "ReadonlySet",
  "Record",
  "Readonly",
  "Partial",
  "Iterable",
  "AsyncIterable",
]);

/** How many levels below an export the walk for optional options goes. */
const PASSED_DEPTH = 12;

const src = join(ROOT, "src");
const program = ts.createProgram(
  [join(src, "index.ts")],
  ts.parseJsonConfigFileContent(
    ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile).config,
    ts.sys,
    ROOT,
  ).options,
);
const checker = program.getTypeChecker();
const isBatons = (node: ts.Node | undefined) =>
  node?.getSourceFile().fileName.startsWith(src) === true;

/** What a member belongs to: its interface, class or type, or the property whose type literal holds it. */
function owner(member: ts.Node): string {
  const parent = member.parent;
  if (ts.isInterfaceDeclaration(parent) || ts.isClassDeclaration(parent)) {
    return parent.name?.text ?? "class";
  }
  if (ts.isTypeAliasDeclaration(parent.parent)) return parent.parent.name.text;
  const holder = ts.findAncestor(
    parent.parent,
    (node) => ts.isPropertySignature(node) || ts.isParameter(node) || ts.isMethodSignature(node),
  );
  return holder ? `${owner(holder)}.${holder.name?.getText() ?? ""}` : "{…}";
}

/** The public exports, by their own symbol (not the index's alias). */
function publicExports(): Map<ts.Symbol, string> {
  const index = program.getSourceFile(join(src, "index.ts"))!;
  const exported = new Map<ts.Symbol, string>();
  for (const symbol of checker.getExportsOfModule(checker.getSymbolAtLocation(index)!)) {
    exported.set(
      symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol,
      symbol.name,
    );
  }
  return exported;
}

/** One step of the walk: the type, the export it was reached from, and whether a user passes it. */
type Visitor = (type: ts.Type, from: string, passed: boolean) => void;
/** What the walk does at each property of baton's own types, object literal and mapped types. */
type PropertyVisitor = (
  property: ts.Symbol,
  declaration: ts.Declaration,
  container: ts.Type,
  passed: boolean,
) => void;

/** The `{ [K in …]?: … }` a type is made by (`Partial<T>`, `Pick<T, K>`), if it is one. */
function mappedNode(type: ts.Type): ts.MappedTypeNode | undefined {
  const declaration = type.getSymbol()?.declarations?.[0];
  return declaration && ts.isMappedTypeNode(declaration) ? declaration : undefined;
}

/**
 * Walks the types the public exports reach, down to `depth` levels: unions, type arguments,
 * signatures' parameters and returns, and the members of baton's types. A value `passed` is
 * one a user gives: a parameter of what baton gives, and what is inside it. For `"named"`,
 * from the exported types and values, each type once; for `"passed"`, from the exported
 * values, each type once as given and once as passed, and not into the parameters of a
 * callback a user gives (baton passes those).
 */
function walk(
  depth: number,
  mode: "named" | "passed",
  onType: Visitor,
  onProperty: PropertyVisitor = () => {},
): void {
  const visited = new Set<string>();
  const ids = new Map<ts.Type, number>();
  const visit = (type: ts.Type, from: string, level: number, passed: boolean): void => {
    if (!ids.has(type)) ids.set(type, ids.size);
    const key = mode === "named" ? `${ids.get(type)}` : `${ids.get(type)} ${passed}`;
    if (visited.has(key) || level > depth) return;
    visited.add(key);
    onType(type, from, passed);
    const next = (inner: ts.Type, into = passed) => visit(inner, from, level + 1, into);
    if (type.isUnionOrIntersection()) for (const member of type.types) next(member);
    const generic = (symbol: ts.Symbol | undefined) =>
      mode === "named" || isBatons(symbol?.declarations?.[0]) || CONTAINERS.has(symbol?.name ?? "");
    if (generic(type.aliasSymbol))
      for (const argument of type.aliasTypeArguments ?? []) next(argument);
    if (type.flags & ts.TypeFlags.Object) {
      const reference = type as ts.TypeReference;
      if (
        reference.objectFlags & ts.ObjectFlags.Reference &&
        generic(reference.target.getSymbol())
      ) {
        for (const argument of checker.getTypeArguments(reference)) next(argument);
      }
    }
    for (const signature of [...type.getCallSignatures(), ...type.getConstructSignatures()]) {
      for (const parameter of signature.getParameters()) {
        next(checker.getTypeOfSymbol(parameter), mode === "named" || !passed);
      }
      next(signature.getReturnType());
    }
    // The members of baton's own types and of object literal types, not of Node's or xstate's,
    // and for what a user passes, of mapped types (a `Partial<T>` of baton's T).
    const symbol = type.aliasSymbol ?? type.getSymbol();
    if (
      isBatons(symbol?.declarations?.[0]) ||
      symbol?.name === "__type" ||
      symbol?.name === "__object" ||
      (mode === "passed" && mappedNode(type) !== undefined)
    ) {
      for (const property of type.getProperties()) {
        const declaration = property.valueDeclaration ?? property.declarations?.[0];
        const hidden = ts.ModifierFlags.Private | ts.ModifierFlags.Protected;
        if (!declaration || ts.getCombinedModifierFlags(declaration) & hidden) continue;
        onProperty(property, declaration, type, passed);
        next(checker.getTypeOfSymbol(property));
      }
    }
  };
  for (const [symbol, name] of publicExports()) {
    if (/Machine$|^machineCatalog$/.test(name)) continue;
    const declared = ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class;
    if (mode === "named" && symbol.flags & declared) {
      visit(checker.getDeclaredTypeOfSymbol(symbol), name, 0, false);
    }
    if (symbol.flags & ts.SymbolFlags.Value) visit(checker.getTypeOfSymbol(symbol), name, 0, false);
  }
}

/**
 * Types that a public export's declaration names (an option's type, a parameter's, a result's;
 * not a base interface, whose members are the export's own) but baton does not export, each with the exports that name it. Private
 * class members and function bodies do not count.
 */
function namedButUnexported(): Map<string, Set<string>> {
  const resolve = (symbol: ts.Symbol) =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const exported = new Set(publicExports().keys());
  const named = new Map<string, Set<string>>();
  const visit = (node: ts.Node, owner: string): void => {
    if (ts.isHeritageClause(node)) return;
    const member = ts.isClassElement(node) ? ts.getCombinedModifierFlags(node) : 0;
    if (member & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) return;
    if (ts.isClassElement(node) && node.name !== undefined && ts.isPrivateIdentifier(node.name))
      return;
    if (ts.isTypeReferenceNode(node)) {
      const symbol = checker.getSymbolAtLocation(node.typeName);
      const target = symbol && resolve(symbol);
      const file = target?.declarations?.[0]?.getSourceFile().fileName;
      if (
        target &&
        file?.startsWith(src) &&
        !(target.flags & ts.SymbolFlags.TypeParameter) &&
        !exported.has(target)
      ) {
        named.set(target.name, (named.get(target.name) ?? new Set()).add(owner));
      }
    }
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      for (const parameter of node.parameters) visit(parameter, owner);
      if (node.type) visit(node.type, owner);
      return;
    }
    if (ts.isVariableDeclaration(node)) {
      if (node.type) visit(node.type, owner);
      return;
    }
    ts.forEachChild(node, (child) => visit(child, owner));
  };
  for (const symbol of exported) {
    for (const declaration of symbol.declarations ?? []) {
      if (declaration.getSourceFile().fileName.startsWith(src)) visit(declaration, symbol.name);
    }
  }
  return named;
}

/** Unexported types of baton's reached from the public exports: "Name (file)" → exports reaching it. */
function unexportedTypes(): Map<string, Set<string>> {
  const exported = publicExports();
  const named = ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class;
  const found = new Map<string, Set<string>>();
  walk(NAMED_DEPTH, "named", (type, from) => {
    const symbol = type.aliasSymbol ?? type.getSymbol();
    const declaration = symbol?.declarations?.[0];
    if (symbol && isBatons(declaration) && symbol.flags & named && !exported.has(symbol)) {
      const key = `${symbol.name} (${declaration!.getSourceFile().fileName.slice(ROOT.length)})`;
      found.set(key, (found.get(key) ?? new Set()).add(from));
    }
  });
  return found;
}

/** Whether a declared type takes `undefined` (as a member of a union, or being `any` or `unknown`). */
function takesUndefined(node: ts.TypeNode): boolean {
  const type = checker.getTypeFromTypeNode(node);
  const open = ts.TypeFlags.Undefined | ts.TypeFlags.Any | ts.TypeFlags.Unknown;
  return Boolean(type.flags & open) || (type.isUnion() && type.types.some((t) => t.flags & open));
}

/**
 * Optional properties of baton's a user passes that refuse `undefined`: "file Owner.name", or
 * "Mapped<T> name" for a mapped type that makes T's properties optional (`Partial<T>`, which
 * under exactOptionalPropertyTypes refuses `undefined` for each).
 */
function optionalsRefusingUndefined(): string[] {
  const found = new Set<string>();
  walk(
    PASSED_DEPTH,
    "passed",
    () => {},
    (property, declaration, container, passed) => {
      if (!passed || !(property.flags & ts.SymbolFlags.Optional) || !isBatons(declaration)) return;
      const mapped = mappedNode(container);
      const madeOptional =
        mapped?.questionToken !== undefined &&
        mapped.questionToken.kind !== ts.SyntaxKind.MinusToken;
      if (madeOptional) {
        if (mapped.type === undefined || !takesUndefined(mapped.type)) {
          found.add(`${checker.typeToString(container)} ${property.name}`);
        }
        return;
      }
      // A property of a union of object types is optional where a member declares it so
      // (`error?: undefined` beside `error: JobError`): that declaration is the one to check.
      const optional = (property.declarations ?? [declaration]).filter(
        (each) => !ts.isPropertySignature(each) || each.questionToken !== undefined,
      );
      for (const each of optional) {
        const node = (each as ts.PropertySignature).type;
        if (node === undefined || !takesUndefined(node)) {
          const file = each.getSourceFile().fileName.slice(ROOT.length);
          found.add(`${file} ${owner(each)}.${property.name}`);
        }
      }
    },
  );
  return [...found].sort();
}

describe("baton's public surface", () => {
  it("exports every type of baton's that a public export's signature names, but its internal helpers", () => {
    // Two walks: the types the exports' signatures reach (semantic, a few levels deep), and
    // the types their declarations name in their text (an option's, a parameter's, at any depth).
    const names = new Set([
      ...[...unexportedTypes().keys()].map((key) => key.split(" ")[0]!),
      ...namedButUnexported().keys(),
    ]);
    expect([...names].sort()).toEqual(Object.keys(INTERNAL).sort());
  });

  it("takes undefined for every optional property of what a user passes, as under exactOptionalPropertyTypes", () => {
    expect(optionalsRefusingUndefined()).toEqual([]);
  });
});
