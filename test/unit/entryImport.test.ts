/**
 * What `import … from "baton"` loads. A program that embeds baton and runs its jobs in
 * process never serves or reaches a worker over the network, a dashboard or an inspector,
 * so it does not load `ws` (13 modules and Node's http, https, tls and zlib behind them,
 * about a fifth of the import's time): wsNet, DashboardServer.start and connectInspector load
 * it on their first call. Before, the entry loaded it with everything else. Nor does it load
 * the simulator (`simulate` and what `simulateSeeds` runs its seeds with, 27 of baton's
 * modules): both load it on their first call (`simulateSeeds` at its first `next()`), and
 * refuse bad arguments as the simulator does, `simulateSeeds` still at the call. Before, the
 * entry loaded it, and so did every worker, `baton run` and handler thread whose module of
 * yours imports baton.
 *
 * The cases run in one fresh Node process (through tsx, on src/), which prints, after each
 * step, the `ws` files in Node's module cache (where every CommonJS module it loads stays) and
 * the modules of baton's src/ it has evaluated (a loader hook marks each as it loads).
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";

const ENTRY = join(ROOT, "src/index.ts");

/** The modules of the entry points that load on first use, which the bare import must not evaluate. */
const ON_FIRST_CALL = ["src/sim/simulate.ts", "src/sim/inSeedOrder.ts"];

/**
 * A loader hook that makes each module of baton's src/ add its path to `globalThis.evaluated`
 * as it is evaluated (a line in front of its code, on the line of its first).
 */
const MARK_EVALUATED = `
export async function load(url, context, next) {
  const loaded = await next(url, context);
  if (!url.startsWith(${JSON.stringify(pathToFileURL(join(ROOT, "src")).href)}) || loaded.format !== "module") return loaded;
  const code = typeof loaded.source === "string" ? loaded.source : new TextDecoder().decode(loaded.source);
  return { ...loaded, source: "globalThis.evaluated.add(import.meta.url);" + code };
}`;

/**
 * Runs `steps` after importing the entry as `baton`; `loaded(step)` prints what ws has loaded,
 * and `evaluated(step)` which of `ON_FIRST_CALL` have been evaluated.
 */
async function afterImport(steps: string): Promise<Record<string, string[]>> {
  const program = `
import { createRequire, register } from "node:module";
globalThis.evaluated = new Set();
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(MARK_EVALUATED)}`)});
const cache = createRequire(import.meta.url).cache;
const seen = {};
const loaded = (step) => {
  seen[step] = Object.keys(cache).filter((path) => /node_modules\\/ws\\//.test(path));
};
const onFirstCall = ${JSON.stringify(ON_FIRST_CALL.map((path) => pathToFileURL(join(ROOT, path)).href))};
const evaluated = (step) => {
  seen[step] = onFirstCall.filter((url) => globalThis.evaluated.has(url));
};
const baton = await import(${JSON.stringify(ENTRY)});
evaluated("evaluated at import");
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
await listener.close();
evaluated("evaluated after the run and the network");
const refusal = (error) => (error instanceof baton.ConfigError ? error.message : String(error));
try {
  void baton.simulateSeeds(5, 1);
  seen["simulateSeeds returned"] = [];
} catch (error) {
  seen["simulateSeeds threw"] = [refusal(error)];
}
evaluated("evaluated after simulateSeeds threw");
const unknown = { seed: 1, jobz: 3 };
seen["simulate refused"] = [await baton.simulate(unknown).then(() => "resolved", refusal)];
const simulator = await import(${JSON.stringify(pathToFileURL(join(ROOT, ON_FIRST_CALL[0]!)).href)});
seen["simulator refused"] = [await simulator.simulate(unknown).then(() => "resolved", refusal)];
seen.simulate = [String((await baton.simulate({ seed: 1, jobs: 3 })).ok)];
evaluated("evaluated after simulate");
seen.simulateSeeds = [];
for await (const result of baton.simulateSeeds(1, 2, { jobs: 3 }, { threads: 1 })) {
  seen.simulateSeeds.push(\`\${result.seed} \${result.ok}\`);
}
evaluated("evaluated after simulateSeeds");`);
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

  it("does not evaluate the simulator until simulate or simulateSeeds first runs a seed", () => {
    const [simulator, seedRunner] = ON_FIRST_CALL.map(
      (path) => pathToFileURL(join(ROOT, path)).href,
    );
    expect(seen["evaluated at import"]).toEqual([]);
    expect(seen["evaluated after the run and the network"]).toEqual([]);
    expect(seen["evaluated after simulateSeeds threw"]).toEqual([]);
    expect(seen["evaluated after simulate"]).toEqual([simulator]);
    expect(seen["evaluated after simulateSeeds"]).toEqual([simulator, seedRunner]);
    expect(seen.simulate).toEqual(["true"]);
    expect(seen.simulateSeeds).toEqual(["1 true", "2 true"]);
  });

  it("refuses bad arguments on the first call as the simulator does: simulateSeeds at the call", () => {
    expect(seen["simulateSeeds returned"]).toBeUndefined();
    expect(seen["simulateSeeds threw"]).toEqual([
      "simulateSeeds: first (5) is after last (1); give the lower seed first",
    ]);
    expect(seen["simulate refused"]![0]).toMatch(/^simulate: unknown option jobz/);
    expect(seen["simulate refused"]).toEqual(seen["simulator refused"]);
  });
});
