/**
 * What `import … from "baton"` loads. A program that embeds baton and runs its jobs in
 * process never serves or reaches a worker over the network, a dashboard or an inspector,
 * so it does not load `ws` (13 modules and Node's http, https, tls and zlib behind them,
 * about a fifth of the import's time): wsNet, DashboardServer.start and connectInspector load
 * it on their first call. Before, the entry loaded it with everything else.
 *
 * The cases run in one fresh Node process (through tsx, on src/), which prints the `ws` files
 * in Node's module cache (where every CommonJS module it loads stays) after each step.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";

const ENTRY = join(ROOT, "src/index.ts");

/** Runs `steps` after importing the entry as `baton`; `loaded(step)` prints what ws has loaded. */
async function afterImport(steps: string): Promise<Record<string, string[]>> {
  const program = `
import { createRequire } from "node:module";
const cache = createRequire(import.meta.url).cache;
const seen = {};
const loaded = (step) => {
  seen[step] = Object.keys(cache).filter((path) => /node_modules\\/ws\\//.test(path));
};
const baton = await import(${JSON.stringify(ENTRY)});
loaded("import");
${steps}
console.log(JSON.stringify(seen));`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", program],
    { cwd: ROOT, timeout: 60_000 },
  );
  return JSON.parse(stdout) as Record<string, string[]>;
}

describe('import … from "baton"', () => {
  let seen: Record<string, string[]>;
  beforeAll(async () => {
    seen = await afterImport(`
const engine = baton.createEngine({ jobs: { double: (n) => n * 2 } });
const result = await engine.run([baton.job("double", 21)]);
if (!result.ok) throw new Error("the in-process run failed");
loaded("in-process run");
try {
  void baton.wsNet().connect("no port here");
  loaded("connect returned");
} catch (error) {
  if (!(error instanceof baton.ConfigError)) throw error;
  loaded("connect threw");
}
const listener = await baton.wsNet().listen("127.0.0.1:0");
loaded("listen");
await listener.close();`);
  }, 60_000);

  it("does not load ws until a network Net, a dashboard or an inspector is first used", () => {
    expect(seen.import).toEqual([]);
    expect(seen["in-process run"]).toEqual([]);
    expect(seen.listen).toContainEqual(
      expect.stringMatching(/node_modules\/ws\/lib\/websocket-server\.js$/),
    );
  });

  it("still refuses a bad address at once, before ws loads, when connecting", () => {
    expect(seen["connect threw"]).toEqual([]);
    expect(seen["connect returned"]).toBeUndefined();
  });
});
