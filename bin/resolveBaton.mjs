// A module hook of the `baton` command: a user's graph or job module that imports "baton"
// gets the baton this command runs (its TypeScript sources, through tsx), not the package's
// compiled dist/, so that the command and the user's modules share one copy of every class
// (`instanceof BatonError` holds for an error a job module throws).
const SOURCES = new URL("../src/index.ts", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "baton") return nextResolve(SOURCES, context);
  return nextResolve(specifier, context);
}
