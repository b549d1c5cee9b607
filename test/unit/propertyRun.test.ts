/**
 * The replay command a failed property prints (test/fixtures/propertyRun.ts): pasted in a
 * shell in any folder, it runs the failing test file in the repository with the failure's
 * seed, path and replay path. It used to name the file relative to the root
 * (`npx vitest run test/property/…`), which only ran from the root.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";
import { replayReport } from "../fixtures/propertyRun.ts";

const dir = mkdtempSync(join(tmpdir(), "baton-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A failing model run, so that the report carries a commands' `replayPath` too. */
function failedRun(): fc.RunDetails<[Iterable<fc.Command<object, object>>]> {
  class Step implements fc.Command<object, object> {
    constructor(readonly n: number) {}
    check = () => true;
    run = () => {
      if (this.n > 2) throw new Error(`step ${this.n} fails`);
    };
    toString = () => `step(${this.n})`;
  }
  const steps = fc.integer({ min: 0, max: 5 }).map((n) => new Step(n));
  return fc.check(
    fc.property(fc.commands([steps]), (commands) =>
      fc.modelRun(() => ({ model: {}, real: {} }), commands),
    ),
    { seed: 42 },
  );
}

describe("replayReport", () => {
  it("prints a command that runs the test file from the repository's root, pasted in any folder", () => {
    const details = failedRun();
    expect(details.failed).toBe(true);
    const report = replayReport(details, import.meta.url, "a test's $HOME `name`");
    const command = report.split("\nReplay: ")[1]!;
    // A stand-in npx records where it runs, its arguments and the replay variables.
    const bin = mkdtempSync(join(dir, "bin-"));
    const record = join(dir, "npx.json");
    writeFileSync(
      join(bin, "npx"),
      `#!${process.execPath}\nrequire("node:fs").writeFileSync(${JSON.stringify(record)}, JSON.stringify({ cwd: process.cwd(), args: process.argv.slice(2), env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("BATON_PROPERTY_"))) }));\n`,
    );
    chmodSync(join(bin, "npx"), 0o755);
    const elsewhere = mkdtempSync(join(dir, "elsewhere-"));
    const shell = spawnSync("/bin/sh", ["-c", command], {
      cwd: elsewhere,
      env: { PATH: `${bin}:${process.env.PATH}` },
      encoding: "utf8",
    });
    expect(shell.stderr).toBe("");
    expect(shell.status).toBe(0);
    const { cwd, args, env } = JSON.parse(readFileSync(record, "utf8")) as {
      cwd: string;
      args: string[];
      env: Record<string, string>;
    };
    expect(cwd).toBe(resolve(ROOT));
    expect(args).toEqual([
      "vitest",
      "run",
      "test/unit/propertyRun.test.ts",
      "-t",
      "a test's $HOME `name`",
    ]);
    expect(existsSync(join(cwd, args[2]!))).toBe(true);
    const replayPath = /replayPath="([^"]*)"/.exec(report)?.[1];
    expect(replayPath).toBeTruthy();
    expect(env).toEqual({
      BATON_PROPERTY_SEED: String(details.seed),
      BATON_PROPERTY_PATH: details.counterexamplePath,
      BATON_PROPERTY_REPLAY_PATH: replayPath,
    });
  });
});
