// npm's `prepare` step (run by `npm ci` and `npm install` here, and when npm installs baton
// from git): builds dist/, the package's compiled entry, with `npm run build`. An install
// without devDependencies (`npm ci --omit=dev`) has no TypeScript compiler; the `baton`
// command does not need dist/ (it runs the sources through tsx), so the step then says what
// is missing and lets the install finish instead of failing it.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";

try {
  createRequire(import.meta.url).resolve("typescript");
} catch {
  console.warn(
    "baton: TypeScript is not installed (devDependencies omitted), so dist/ was not built: " +
      'the baton command works, but `import "baton"` from JavaScript needs `npm install && npm run build`',
  );
  process.exit(0);
}
const build = spawnSync("npm", ["run", "build"], { stdio: "inherit" });
process.exit(build.status ?? 1);
