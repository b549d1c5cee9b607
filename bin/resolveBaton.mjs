// A module hook: a user's graph, job or simulation module that imports "baton" gets the baton
// that loads it, not another copy, so that baton and the user's modules share one copy of
// every class (`instanceof BatonError` holds for an error a job module throws).
// From the sources that is src/index.ts, through tsx. From the compiled dist/ (`compiled`) it
// is dist/index.js, and a module of baton's own sources (`import … from "../src/index.ts"`,
// as baton's test fixtures do) is its compiled twin in dist/: the `baton` command runs dist/ only
// when it is compiled from the src/ beside it (bin/distCurrent.mjs), and loading the sources
// beside it would make a second copy of every class.
const ROOT = new URL("../", import.meta.url).href;
const SOURCES = `${ROOT}src/`;
const DIST = `${ROOT}dist/`;

let compiled = false;

export function initialize(data) {
  compiled = data?.compiled === true;
}

export async function resolve(specifier, context, nextResolve) {
  if (!compiled) {
    return nextResolve(specifier === "baton" ? `${SOURCES}index.ts` : specifier, context);
  }
  if (specifier === "baton") return { url: `${DIST}index.js`, shortCircuit: true };
  const resolved = await nextResolve(specifier, context);
  if (resolved.url.startsWith(SOURCES) && resolved.url.endsWith(".ts")) {
    return { url: `${DIST}${resolved.url.slice(SOURCES.length, -3)}.js`, shortCircuit: true };
  }
  return resolved;
}
