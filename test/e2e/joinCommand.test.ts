/**
 * The `baton worker` command that `baton run --workers 0` prints, used as a user on another
 * machine would: pasted into a shell in another directory, then the coordinator killed and
 * started again. Every process is stopped by its pid when the test ends.
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { batonCommand } from "../../src/cli/batonCommand.ts";
import { freePort } from "../../src/runtime/freePort.ts";
import { type BatonProcess, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { stderrMatches } from "../fixtures/stderrMatches.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { within } from "../fixtures/within.ts";

afterEach(() => {
  stopBatons();
});

/** The words of a command line made of bare words and single-quoted ones, as a shell reads them. */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map(
    ([, quoted, bare]) => quoted?.replaceAll("'\\''", "'") ?? bare!,
  );
}

/**
 * The `baton worker` command a run printed, as the arguments after its baton: `baton`, or
 * bin/baton.js's path where the shell's `baton` is not this one (`batonCommand`).
 */
async function joinCommand(run: BatonProcess): Promise<string[]> {
  const [line] = await stderrMatches(run.stderr, /^ {2}(?:baton|'[^']+') worker .*$/m);
  expect(line.trim().startsWith(`${batonCommand()} worker `)).toBe(true);
  return shellWords(line.trim()).slice(1);
}

/** Resolves once the workers have finished two jobs (the first one's result is stored by then). */
function firstJobsDone(calls: string): Promise<void> {
  return within(
    (async () => {
      while (readdirSync(calls).length < 2) await new Promise((r) => setTimeout(r, 50));
    })(),
    40_000,
    "the first jobs",
  );
}

describe("the join command baton run --workers 0 prints", () => {
  it("joins from another directory; when the coordinator is killed its worker exits 3 saying to start it again, and the next run's command resumes the work", async () => {
    const dir = tempDir();
    const elsewhere = join(dir, "elsewhere");
    const calls = join(dir, "calls");
    mkdirSync(elsewhere);
    mkdirSync(calls);
    const env = { BATON_TEST_JOBS: "4", BATON_TEST_DELAY_MS: "1000", BATON_TEST_CALLS: calls };
    const coordinator = () =>
      startBaton(
        ["run", "test/fixtures/counted.graph.ts", "--workers", "0", "--store", join(dir, "store")],
        { env },
      );
    const worker = (args: string[]) => startBaton(args, { cwd: elsewhere, env });

    const first = coordinator();
    const firstJoin = await joinCommand(first);
    const far = worker(firstJoin);
    // Once the worker has finished two jobs, the coordinator's host dies.
    await firstJobsDone(calls);
    first.child.kill("SIGKILL");
    const farExit = await within(far.exit, 10_000, "the worker's exit after its coordinator died");
    expect(farExit.code).toBe(3);
    expect(farExit.stderr).toMatch(
      /^baton worker: connection to the coordinator at ws:\/\/127\.0\.0\.1:\d+ closed with code 1006 .*; start the worker again once the coordinator is reachable, or give it --retry-for DURATION to have it try by itself \(a run started again keeps its address and secret only when baton run is given --listen HOST:PORT and --secret-file FILE\)$/m,
    );

    const second = coordinator();
    const secondJoin = await joinCommand(second);
    expect(secondJoin).not.toEqual(firstJoin);
    // The old command names a secret file the new run removed, as a run ends or starts.
    const stale = await worker(firstJoin).exit;
    expect(stale.code).toBe(2);
    expect(stale.stderr).toMatch(
      /secret file .* does not exist; .* a command printed by an earlier run no longer joins: use the one the current run printed/,
    );
    const again = worker(secondJoin);
    const { code, stderr } = await within(second.exit, 60_000, "the second run");
    expect(code).toBe(0);
    expect(stderr).toMatch(/\d+ results? reused from the store/);
    expect((await again.exit).code).toBe(0);
    // Jobs completed before the kill were not computed again.
    expect(readdirSync(calls).filter((c) => c.startsWith("leaf-")).length).toBeLessThan(8);
  }, 120_000);

  it("with --listen and --secret-file kept, a worker started first with --retry-for joins the run, outlives the coordinator's SIGKILL and joins the run started again", async () => {
    const dir = tempDir();
    const calls = join(dir, "calls");
    mkdirSync(calls);
    const env = { BATON_TEST_JOBS: "6", BATON_TEST_DELAY_MS: "700", BATON_TEST_CALLS: calls };
    const address = `127.0.0.1:${await freePort()}`;
    const secretFile = join(dir, "kept", "cluster.secret");
    const coordinator = () =>
      startBaton(
        [
          "run",
          "test/fixtures/counted.graph.ts",
          "--workers",
          "0",
          "--listen",
          address,
          "--secret-file",
          secretFile,
          "--store",
          join(dir, "store"),
        ],
        { env },
      );

    // The first run makes the secret file; the worker, started before it, waits for it.
    const first = coordinator();
    const join1 = await joinCommand(first);
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(first.stderr()).toContain("(add --retry-for DURATION, such as 1h, and a worker waits");
    const worker = startBaton([...join1, "--retry-for", "1m"], { env });
    await firstJobsDone(calls);
    first.child.kill("SIGKILL");
    await stderrMatches(
      worker.stderr,
      /^baton worker: connection to the coordinator at ws:\/\/127\.0\.0\.1:\d+ closed with code 1006 .*; trying again for up to 1m \(--retry-for\)$/m,
    );
    const kept = readFileSync(secretFile, "utf8");

    const second = coordinator();
    expect(await joinCommand(second)).toEqual(join1);
    await stderrMatches(
      worker.stderr,
      // Another run at the same address: not "again", which would say it is the run it left.
      /^baton worker: joined run \S+ at ws:\/\/127\.0\.0\.1:\d+, a new run there \(it had joined run \S+\)$/m,
    );
    const { code, stderr } = await within(second.exit, 60_000, "the second run");
    expect(code).toBe(0);
    expect(stderr).toMatch(/\d+ results? reused from the store/);
    const workerExit = await within(worker.exit, 10_000, "the worker's exit");
    expect(workerExit.code).toBe(0);
    expect(workerExit.stderr).toMatch(
      /stopped this worker \(the run is finished\) after (\d+) jobs finished here$/m,
    );
    // Its count covers both runs: the jobs before the kill and the rest.
    const [, ran] = /after (\d+) jobs finished here/.exec(workerExit.stderr)!;
    expect(Number(ran)).toBe(readdirSync(calls).length);
    // The run kept the file and what it holds, for the next run and its workers.
    expect(readFileSync(secretFile, "utf8")).toBe(kept);
    expect(`${workerExit.stderr}${stderr}`).not.toContain(kept.trim());
    expect(readdirSync(calls).filter((c) => c.startsWith("leaf-")).length).toBeLessThan(12);
  }, 120_000);
});
