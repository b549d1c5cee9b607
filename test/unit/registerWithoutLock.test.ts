import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { registerWithoutLock } from "../../src/cli/registerWithoutLock.ts";
import { readGraphLocks } from "../../src/runtime/graphLock.ts";

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder with a graph module in it. */
function graphDir(): { dir: string; graphPath: string } {
  const dir = mkdtempSync(join(tmpdir(), "baton-register-"));
  dirs.push(dir);
  const graphPath = join(dir, "g.graph.ts");
  writeFileSync(graphPath, "export default [];\n");
  return { dir, graphPath };
}

/** A logger that keeps its warnings. */
function keptWarnings() {
  const warnings: string[] = [];
  return { warnings, logger: { warn: (_: object, message: string) => warnings.push(message) } };
}

describe("registerWithoutLock", () => {
  it("registers a run without lock beside its run files (0600), lists it with its flag, and removes it on release; runs of one graph side by side", async () => {
    const { dir, graphPath } = graphDir();
    const runDir = join(dir, ".baton", "run");
    const { warnings, logger } = keptWarnings();
    const logs = join(dir, ".baton", "logs", "x");
    const first = await registerWithoutLock("--no-store", { graphPath, dir: runDir, logs, logger });
    const second = await registerWithoutLock("--store-read-only", {
      graphPath,
      dir: runDir,
      store: join(dir, "reused"),
      logger,
    });
    expect(warnings).toEqual([]);
    expect(first!.path).not.toBe(second!.path);
    expect(statSync(first!.path).mode & 0o777).toBe(0o600);
    const { runs } = await readGraphLocks(runDir);
    expect(runs.map((run) => [run.withoutLock, run.store, run.logs, run.gone]).sort()).toEqual([
      ["--no-store", undefined, logs, undefined],
      ["--store-read-only", join(dir, "reused"), undefined, undefined],
    ]);
    await first!.note({ address: "ws://127.0.0.1:7000" }, { now: true });
    expect(JSON.parse(readFileSync(first!.path, "utf8")).address).toBe("ws://127.0.0.1:7000");
    await first!.release();
    await second!.release();
    expect(readdirSync(runDir)).toEqual([]);
  });

  it("warns, and the run goes on unlisted, when its registration cannot be made", async () => {
    const { dir, graphPath } = graphDir();
    const { warnings, logger } = keptWarnings();
    // A file where the run/ folder belongs.
    writeFileSync(join(dir, "run"), "");
    const record = await registerWithoutLock("--no-store", {
      graphPath,
      dir: join(dir, "run"),
      logger,
    });
    expect(record).toBeUndefined();
    expect(warnings).toEqual([
      "could not register this run (--no-store takes no graph lock) for baton status, which will not list it",
    ]);
  });
});
