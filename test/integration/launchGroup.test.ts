/**
 * Rank groups on real processes: `launchGroup` with the Python example rank, the reaper, and
 * `baton launch` as a child process killed with SIGKILL. Every process a test starts is
 * stopped by its pid when the test ends, even on failure.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { RankGroupError } from "../../src/errors.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { readDeploymentStatuses } from "../../src/rank/deploymentStatus.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { OUTCOME_FORMAT, type Outcome } from "../../src/rank/outcomeFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files, Procs } from "../../src/runtime/ports.ts";
import { reapDeployments } from "../../src/runtime/reaper.ts";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { firstLine } from "../fixtures/firstLine.ts";
import { FAST_TEARDOWN, launch, stopLaunched } from "../fixtures/launchedGroups.ts";
import { alive, cleanUpRanks, procs, stray, tempDir, until } from "../fixtures/rankStrays.ts";

const PYTHON = "/usr/bin/python3";
const RANK_PY = join(ROOT, "examples/ranks/rank.py");
const ENV_RANK = join(ROOT, "test/fixtures/envRank.mjs");
const LAUNCHER_KILLED_AT_MANIFEST = join(ROOT, "test/fixtures/launcherKilledAtManifest.ts");
const files = nodeFiles();
const clock = nodeClock();

/** Children this file spawned itself: killed by pid while not yet reaped (so never reused). */
const children: { pid: number; reaped: boolean }[] = [];

function spawnChild(options: Parameters<Procs["spawn"]>[0]) {
  const handle = procs.spawn(options);
  const child = { pid: handle.pid, reaped: false };
  children.push(child);
  void handle.exited.then(() => {
    child.reaped = true;
  });
  return handle;
}

/** The reaper over the state dir `dir` with short teardown waits, on `table` (this machine's). */
function reapFast(dir: string, table: Procs = procs) {
  return reapDeployments({ stateDir: dir, procs: table, files, clock, teardown: FAST_TEARDOWN });
}

afterEach(async () => {
  await stopLaunched();
  stopBatons();
  for (const child of children.splice(0)) if (!child.reaped) procs.signal(child.pid, "SIGKILL");
  await cleanUpRanks();
});

/** The error of a launch of `name` in `dir` that the test expects refused as held. */
async function refusedLaunch(dir: string, name: string): Promise<RankGroupError> {
  const group = launch({ argv: [process.execPath, ENV_RANK], worldSize: 1, stateDir: dir, name });
  const error = (await group.wait().catch((e: unknown) => e)) as RankGroupError;
  expect(error.code).toBe("DEPLOYMENT_BLOCKED");
  return error;
}

/** Ranks 1 … run `failing`, the others `healthy`: rank-specific behaviour through $RANK. */
function byRank(failingRank: number, failing: string, healthy: string): string[] {
  return [
    "/bin/sh",
    "-c",
    `if [ "$RANK" = ${failingRank} ]; then exec ${failing}; else exec ${healthy}; fi`,
  ];
}

describe("launchGroup", () => {
  it("runs every rank to exit 0, with baton's env over the operator's over the spec's defaults", async () => {
    const group = launch({
      argv: [process.execPath, ENV_RANK],
      worldSize: 3,
      env: { FROM_SPEC: "spec", FROM_OPERATOR: "spec", RANK: "spec" },
      operatorEnv: { ...process.env, FROM_OPERATOR: "operator", RANK: "operator" },
    });
    const exit = await group.wait();
    expect(exit.status).toBe("succeeded");
    expect(exit.ranks.map((rank) => [rank.rank, rank.code, rank.signal])).toEqual([
      [0, 0, null],
      [1, 0, null],
      [2, 0, null],
    ]);
    const envs = group.logFiles.map((file) => JSON.parse(readFileSync(file, "utf8")));
    const ports = new Set(envs.map((env) => env.MASTER_PORT));
    expect(ports.size).toBe(1);
    envs.forEach((env, rank) => {
      expect(env).toMatchObject({
        RANK: String(rank),
        WORLD_SIZE: "3",
        LOCAL_RANK: String(rank),
        LOCAL_WORLD_SIZE: "3",
        GROUP_RANK: "0",
        GROUP_WORLD_SIZE: "1",
        MASTER_ADDR: "127.0.0.1",
        BATON_DEPLOYMENT: group.deployment,
        BATON_STATE_DIR: group.dir.slice(0, group.dir.lastIndexOf("/")),
        BATON_LAUNCHER_PID: String(process.pid),
        FROM_SPEC: "spec",
        FROM_OPERATOR: "operator",
      });
      expect(Number(env.MASTER_PORT)).toBeGreaterThan(0);
    });
    const paths = deploymentPaths(group.dir.slice(0, group.dir.lastIndexOf("/")), group.deployment);
    expect(existsSync(paths.manifest)).toBe(false);
    expect(existsSync(paths.lease)).toBe(false);
  });

  it("passes the barrier on the ranks' ready markers, and stop() tears them down, verified", async () => {
    const states = new Set<unknown>();
    const group = launch({
      argv: [PYTHON, RANK_PY, "--step-ms", "50"],
      worldSize: 2,
      inspect: (event) => {
        if (event.type === "@xstate.snapshot")
          states.add((event.snapshot as { value?: unknown }).value);
      },
    });
    await group.ready;
    // The inspector sees the group's machine and the ranks'.
    expect(states).toContain("running");
    expect(states).toContain("ready");
    const pids = group.pids();
    expect(pids).toHaveLength(2);
    const paths = deploymentPaths(group.dir.slice(0, group.dir.lastIndexOf("/")), group.deployment);
    const manifest = await readStateFile(files, MANIFEST_FORMAT, paths.manifest);
    expect(manifest?.ranks.map((rank) => [rank.pid, rank.pgid])).toEqual(
      pids.map((pid) => [pid, pid]),
    );
    expect(manifest?.launcher.pid).toBe(process.pid);
    const report = await group.stop();
    expect(report.verified).toBe(true);
    for (const pid of pids) expect(alive(pid)).toBe(false);
    expect(existsSync(paths.manifest)).toBe(false);
    const exit = await group.wait();
    expect(exit.status).toBe("stopped");
    expect(exit.ranks.every((rank) => rank.signal === "SIGTERM")).toBe(true);
  });

  it("a marker read still in flight when its rank exits is dropped, not sent to the stopped rank", async () => {
    // Marker reads take 300 ms, so one is always in flight when the rank exits.
    const slowMarkers = {
      ...files,
      read: async (path: string) => {
        const text = await files.read(path);
        if (path.endsWith(".marker.json")) await new Promise((done) => setTimeout(done, 300));
        return text;
      },
    };
    const warn = vi.spyOn(console, "warn");
    try {
      const group = launch({
        argv: [PYTHON, RANK_PY, "--steps", "3", "--step-ms", "100"],
        worldSize: 1,
        ports: { files: slowMarkers },
      });
      await group.ready;
      const exit = await group.wait();
      expect(exit.status).toBe("succeeded");
      await new Promise((done) => setTimeout(done, 400));
      const stopped = warn.mock.calls.filter((args) => String(args[0]).includes("stopped actor"));
      expect(stopped).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  it("one failing rank stops the others; the group fails with its exit code and log tail", async () => {
    const group = launch({
      argv: byRank(
        1,
        `${PYTHON} ${RANK_PY} --step-ms 50 --fail-at 3 --exit-code 7`,
        `${PYTHON} ${RANK_PY} --step-ms 50`,
      ),
      worldSize: 3,
    });
    const error = await group.wait().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RankGroupError);
    const failure = error as RankGroupError;
    expect(failure.code).toBe("RANK_FAILED");
    expect(failure.details.rank).toBe(1);
    expect(failure.details.exitCode).toBe(7);
    expect(failure.message).toContain("rank 1 exited with code 7");
    expect(failure.message).toContain("| rank 1: failing at step 3 with exit code 7");
    await until(() => group.pids().length === 0, "every rank reaped");
    // How it ended stays with the logs: each rank's exit as the launcher learned it.
    const outcome = await readStateFile(files, OUTCOME_FORMAT, join(group.dir, "outcome.json"));
    expect(outcome?.ended).toEqual({
      at: expect.any(Number),
      status: "failed",
      reason: "rank 1 exited with code 7",
    });
    expect(outcome?.ranks.map((rank) => [rank.rank, rank.exit?.code ?? rank.exit?.signal])).toEqual(
      [
        [0, "SIGTERM"],
        [1, 7],
        [2, "SIGTERM"],
      ],
    );
    for (const rank of outcome?.ranks ?? []) {
      expect(rank.exit?.at).toBeGreaterThanOrEqual(outcome?.startedAt ?? Number.POSITIVE_INFINITY);
      expect(rank.exit?.at).toBeLessThanOrEqual(outcome?.ended?.at ?? 0);
    }
  });

  it("records the exits of ranks that end together in a few writes of the outcome, not one each", async () => {
    const stateDir = tempDir();
    const outcomePath = deploymentPaths(stateDir, "many").outcome;
    let writes = 0;
    // A slow disk: each write of the outcome takes 100 ms.
    const slow: Files = {
      ...files,
      writeAtomic: async (path, data, mode) => {
        if (path === outcomePath) {
          writes++;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return files.writeAtomic(path, data, mode);
      },
    };
    const group = launch({
      argv: ["/bin/true"],
      worldSize: 20,
      stateDir,
      name: "many",
      ports: { files: slow },
    });
    expect((await group.wait()).status).toBe("succeeded");
    const outcome = await readStateFile(files, OUTCOME_FORMAT, outcomePath);
    expect(outcome?.ended?.status).toBe("succeeded");
    expect(outcome?.ranks.map((rank) => rank.exit?.code)).toEqual(Array(20).fill(0));
    // One write at the start, one with the end, and a few for the 20 exits between.
    expect(writes).toBeLessThan(10);
  });

  it("a launch that fails before starting a rank leaves no earlier launch's outcome of its name", async () => {
    const stateDir = tempDir();
    const paths = deploymentPaths(stateDir, "again");
    const earlier: Outcome = {
      deployment: "again",
      launcher: { pid: 4242, token: "earlier" },
      worldSize: 1,
      argv: ["true"],
      startedAt: Date.now() - 60_000,
      ranks: [{ rank: 0, host: "local", pid: 4243, exit: { at: Date.now() - 50_000, code: 0 } }],
      ended: { at: Date.now() - 50_000, status: "succeeded" },
    };
    await files.writeAtomic(paths.outcome, encodeStateFile(OUTCOME_FORMAT, earlier));
    // The manifest cannot be written (a full disk): the launch fails before any rank.
    const full: Files = {
      ...files,
      writeAtomic: async (path, data, mode) => {
        if (path === paths.manifest) throw new Error("ENOSPC: no space left on device");
        return files.writeAtomic(path, data, mode);
      },
    };
    const group = launch({
      argv: [PYTHON, RANK_PY],
      worldSize: 1,
      stateDir,
      name: "again",
      ports: { files: full },
    });
    const error = (await group.wait().catch((e: unknown) => e)) as RankGroupError;
    expect(error.code).toBe("LAUNCH_FAILED");
    expect(await files.read(paths.outcome)).toBeUndefined();
  });

  it("ranks that ignore TERM are killed with KILL, verified", async () => {
    const group = launch({
      argv: [PYTHON, RANK_PY, "--ignore-term", "--step-ms", "50"],
      worldSize: 2,
    });
    await group.ready;
    const pids = group.pids();
    const report = await group.stop();
    expect(report.steps.join("\n")).toMatch(/KILL/);
    for (const pid of pids) expect(alive(pid)).toBe(false);
    const exit = await group.wait();
    expect(exit.ranks.map((rank) => rank.signal)).toEqual(["SIGKILL", "SIGKILL"]);
  });

  describe("not contained, what emptied its environment", () => {
    /** A word for the test's processes' argv[0], so that clean-up finds them by pid alone. */
    const token = () => `baton-envless-${process.pid}-${Math.random().toString(36).slice(2)}`;
    /** SIGKILLs each pid still alive whose arguments carry `word`. */
    const killCarrying = (pids: number[], word: string) => {
      for (const pid of pids)
        if (alive(pid) && procs.inspect(pid)?.argv.includes(word)) procs.signal(pid, "SIGKILL");
    };

    it("stops a rank that exec'd its program with an empty environment, instead of waiting for it for ever", async () => {
      const word = token();
      const group = launch({
        argv: ["/usr/bin/env", "-i", "/bin/bash", "-c", `exec -a ${word} /bin/sleep 30`],
        worldSize: 1,
        contain: false,
      });
      let pid = 0;
      try {
        await until(() => {
          pid = group.pids()[0] ?? 0;
          return pid !== 0 && procs.inspect(pid)?.argv[0] === word;
        }, "the rank's exec");
        // It was a teardown verified over nothing (the rank "foreign"), then a wait for the
        // rank's exit that never came.
        const stopped = await Promise.race([
          group.stop(),
          new Promise<string>((resolve) => setTimeout(() => resolve("stop() hung"), 15_000)),
        ]);
        expect(stopped).toMatchObject({ verified: true, stopped: [pid] });
        expect(alive(pid)).toBe(false);
      } finally {
        killCarrying([pid], word);
      }
    }, 30_000);

    it("stops the helpers in a live rank's process group that emptied theirs, one ignoring TERM", async () => {
      const word = token();
      const helper = (trap: string) =>
        `/usr/bin/env -i /bin/bash -c "${trap}exec -a ${word} /bin/sleep 30" &`;
      const group = launch({
        argv: ["/bin/sh", "-c", `${helper("")} ${helper("trap '' TERM; ")} exec /bin/sleep 30`],
        worldSize: 1,
        contain: false,
      });
      let helpers: number[] = [];
      try {
        await until(() => {
          const rank = group.pids()[0];
          helpers = procs
            .list()
            .filter((info) => info.pgid === rank && info.argv[0] === word)
            .map((info) => info.pid);
          return helpers.length === 2 && procs.inspect(rank ?? 0)?.argv[0] === "/bin/sleep";
        }, "the rank and its two helpers");
        for (const pid of helpers) expect(procs.environ(pid)?.BATON_DEPLOYMENT).toBeUndefined();
        const report = await group.stop();
        expect(report.verified).toBe(true);
        // Before, both were foreign to the teardown (readable, nothing of the deployment):
        // the rank was signalled alone and they ran on.
        for (const pid of helpers) expect(alive(pid)).toBe(false);
        expect(report.steps.join("\n")).toMatch(/KILL to groups/);
      } finally {
        killCarrying(helpers, word);
      }
    }, 30_000);
  });

  it("fails the barrier when a rank never writes its ready marker, and stops the ranks", async () => {
    const group = launch({
      argv: ["/bin/sleep", "30"],
      worldSize: 2,
      timeouts: { watchMs: 50, loadTimeoutMs: 500 },
    });
    const pids = await (async () => {
      await until(() => group.pids().length === 2, "both ranks started");
      return group.pids();
    })();
    const error = (await group.ready.catch((e: unknown) => e)) as RankGroupError;
    expect(error.code).toBe("BARRIER_TIMEOUT");
    expect(error.message).toContain(
      "ranks 0, 1 did not write a ready marker within the load timeout (500 ms)",
    );
    await expect(group.wait()).rejects.toBe(error);
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  it("a barrier failed by a wrapper whose child writes the markers says so, and to exec the program", async () => {
    // `; true` keeps sh from exec-ing python: the markers carry python's pid, not the rank's.
    const group = launch({
      argv: ["/bin/sh", "-c", `${PYTHON} ${RANK_PY} --watch-ms 100; true`],
      worldSize: 2,
      timeouts: { watchMs: 50, loadTimeoutMs: 2_000 },
    });
    const error = (await group.ready.catch((e: unknown) => e)) as RankGroupError;
    expect(error.code).toBe("BARRIER_TIMEOUT");
    expect(error.message).toMatch(
      /ranks 0, 1 did not write a ready marker within the load timeout \(2000 ms\)\..* Ranks 0, 1 did write markers, but each names another pid than the process baton started for it \(rank 0's names pid \d+, not \d+\): .* must exec the program/,
    );
    await expect(group.wait()).rejects.toBe(error);
  });

  it("a barrier failed by a marker that is not a valid one says which field is wrong", async () => {
    // A rank written by hand, its marker without startedAt, heartbeatAt, active or epoch.
    const marker = `{"format":"baton.marker/1","deployment":"%s","rank":%s,"pid":%s,"phase":"ready"}`;
    const group = launch({
      argv: [
        "/bin/sh",
        "-c",
        `printf '${marker}\\n' "$BATON_DEPLOYMENT" "$RANK" $$ > "$BATON_STATE_DIR/$BATON_DEPLOYMENT/rank-$RANK.marker.json"; exec sleep 30`,
      ],
      worldSize: 1,
      timeouts: { watchMs: 50, loadTimeoutMs: 1_000 },
    });
    const error = (await group.ready.catch((e: unknown) => e)) as RankGroupError;
    expect(error.code).toBe("BARRIER_TIMEOUT");
    expect(error.message).toMatch(
      /rank 0 did not write a ready marker .* Rank 0's marker was not counted: \S*\/rank-0\.marker\.json is not a valid baton\.marker\/1 file: field "startedAt" must be/,
    );
    // The reason fits the sentence: the rank must write the format, not have its file removed.
    expect(error.message).toMatch(
      /; it is missing \(the format is documented in ARCHITECTURE\.md, "Rank-side files and library"\)\. Its log is /,
    );
    await expect(group.wait()).rejects.toBe(error);
  });

  it("a relaunch of a name quotes its failed rank's own lines, not the earlier launch's in the same log", async () => {
    const dir = tempDir();
    const run = (text: string, code: number) =>
      launch({
        argv: ["/bin/sh", "-c", `echo "${text}"; exit ${code}`],
        worldSize: 1,
        stateDir: dir,
        name: "again",
      }).wait();
    await run("first launch: all went well", 0);
    const error = (await run("second launch: it broke", 3).catch(
      (e: unknown) => e,
    )) as RankGroupError;
    expect(error.code).toBe("RANK_FAILED");
    expect(readFileSync(join(dir, "again", "rank-0.log"), "utf8")).toContain("all went well");
    // It quoted both, the first as if the failed rank had said it.
    expect(error.message).toMatch(/The last line of the log:\n {2}\| second launch: it broke$/);
  });

  it("a lease the launcher cannot renew fails the group with LEASE_LOST before the ranks stop on their own", async () => {
    let leaseWrites = "working";
    const watchdogStates: string[] = [];
    const failingLease: Files = {
      ...files,
      writeAtomic: (path, text) =>
        leaseWrites === "failing" && path.endsWith("/lease.json")
          ? Promise.reject(new Error(`ENOSPC: no space left on device, open '${path}'`))
          : files.writeAtomic(path, text),
    };
    const group = launch({
      argv: [PYTHON, RANK_PY, "--step-ms", "50"],
      worldSize: 2,
      // Renewed every second; given up 2.5 s after the last renewal, the ranks' limit is 3 s.
      timeouts: { watchMs: 50, leaseStaleMs: 3_000 },
      ports: { files: failingLease },
      inspect: (event) => {
        const machine = (event.actorRef as { logic?: { id?: string } }).logic?.id;
        if (event.type === "@xstate.snapshot" && machine === "watchdog")
          watchdogStates.push(String((event.snapshot as { value?: unknown }).value));
      },
    });
    await group.ready;
    const pids = group.pids();
    leaseWrites = "failing";
    const error = (await group.wait().catch((e: unknown) => e)) as RankGroupError;
    expect(error).toBeInstanceOf(RankGroupError);
    expect(error.code).toBe("LEASE_LOST");
    expect(error.message).toContain(
      `the launcher could not renew its lease ${join(group.dir, "lease.json")}: ENOSPC: no space left on device`,
    );
    expect(error.message).toContain("Check that the state dir takes writes");
    // The inspector saw the lease's watchdog through its stages.
    expect([...new Set(watchdogStates)]).toEqual(["healthy", "suspect", "reprobing", "lost"]);
    // The launcher stopped them (TERM), not their own watch of the lease.
    for (const pid of pids) expect(alive(pid)).toBe(false);
    const outcome = await readStateFile(files, OUTCOME_FORMAT, join(group.dir, "outcome.json"));
    expect(outcome?.ended?.status).toBe("failed");
    expect(outcome?.ranks.map((rank) => rank.exit?.signal)).toEqual(["SIGTERM", "SIGTERM"]);
  });

  it("a lease renewal that hangs (a stalled network file system) fails the group with LEASE_LOST, and wait() settles", async () => {
    let hanging = false;
    const hangingLease: Files = {
      ...files,
      writeAtomic: (path, text) =>
        hanging && path.endsWith("/lease.json")
          ? new Promise<void>(() => {})
          : files.writeAtomic(path, text),
    };
    const group = launch({
      // The ranks check the lease every 50 ms (the default is every second).
      argv: [PYTHON, RANK_PY, "--step-ms", "50", "--watch-ms", "50"],
      worldSize: 2,
      // Renewed every 2 s; a renewal in flight is overdue 4 s after the last that landed,
      // given up 1.2 s later; the ranks' limit is 6 s.
      timeouts: { watchMs: 50, leaseStaleMs: 6_000 },
      ports: { files: hangingLease },
    });
    await group.ready;
    const pids = group.pids();
    hanging = true;
    const error = (await group.wait().catch((e: unknown) => e)) as RankGroupError;
    expect(error).toBeInstanceOf(RankGroupError);
    expect(error.code).toBe("LEASE_LOST");
    expect(error.message).toMatch(
      /the launcher could not renew its lease .*lease\.json: a renewal has not returned in \d+ ms; no recovery within 1000 ms of aborting/,
    );
    for (const pid of pids) expect(alive(pid)).toBe(false);
    const outcome = await readStateFile(files, OUTCOME_FORMAT, join(group.dir, "outcome.json"));
    expect(outcome?.ended?.status).toBe("failed");
    // The launcher stopped them (TERM), not their own watch of the lease.
    expect(outcome?.ranks.map((rank) => rank.exit?.signal)).toEqual(["SIGTERM", "SIGTERM"]);
    // The teardown was verified: the control files are gone (the hung write never lands).
    expect(existsSync(join(group.dir, "manifest.json"))).toBe(false);
    expect(existsSync(join(group.dir, "lease.json"))).toBe(false);
  }, 30_000);

  it("a launch that cannot start its command fails with LAUNCH_FAILED", async () => {
    const group = launch({ argv: ["/nonexistent/rank-program"], worldSize: 2 });
    const error = (await group.wait().catch((e: unknown) => e)) as RankGroupError;
    expect(error.code).toBe("LAUNCH_FAILED");
    expect(error.message).toContain("/nonexistent/rank-program");
  });

  it("a failed launch whose teardown fails too raises the launch error, and stop() retries", async () => {
    let spawns = 0;
    let stuck = 0;
    const flaky: Procs = {
      ...procs,
      spawn(options) {
        spawns++;
        if (spawns === 2) throw new Error("no more processes (test)");
        const handle = procs.spawn(options);
        stuck = handle.pid;
        return handle;
      },
      signal: (pid, signal) => (pid === stuck ? "ok" : procs.signal(pid, signal)),
      signalGroup: (pgid, signal) => (pgid === stuck ? "ok" : procs.signalGroup(pgid, signal)),
    };
    const group = launch({ argv: ["/bin/sleep", "30"], worldSize: 2, ports: { procs: flaky } });
    const error = (await group.wait().catch((e: unknown) => e)) as RankGroupError;
    stray(stuck, group.deployment);
    expect(error.code).toBe("LAUNCH_FAILED");
    expect(error.message).toContain("no more processes (test)");
    expect(error.details.teardownError?.name).toBe("TeardownError");
    const paths = deploymentPaths(group.dir.slice(0, group.dir.lastIndexOf("/")), group.deployment);
    expect(existsSync(paths.manifest)).toBe(true);
    await expect(group.stop()).rejects.toMatchObject({ code: "TEARDOWN_UNVERIFIED" });
    expect(alive(stuck)).toBe(true);
    stuck = 0; // now the process can be signalled: the retry verifies
    const report = await group.stop();
    expect(report.verified).toBe(true);
    expect(existsSync(paths.manifest)).toBe(false);
    await expect(group.wait()).rejects.toBe(error);
  }, 30_000);

  it("abortAll waits for the ranks' own evidence; a rank that ignores cancels is reported", async () => {
    const group = launch({
      argv: [PYTHON, RANK_PY, "--hold", "2", "--step-ms", "50"],
      worldSize: 2,
    });
    await group.ready;
    const drained = await group.abortAll("test");
    expect(drained.drained).toBe(true);
    expect(drained.ranks.map((rank) => [rank.applied, rank.active])).toEqual([
      [true, 0],
      [true, 0],
    ]);

    const stubborn = launch({
      argv: [PYTHON, RANK_PY, "--hold", "2", "--ignore-cancel", "--step-ms", "50"],
      worldSize: 2,
      timeouts: { watchMs: 50, drainMs: 800 },
    });
    await stubborn.ready;
    const report = await stubborn.abortAll("test");
    expect(report.drained).toBe(false);
    expect(report.ranks.every((rank) => rank.applied && rank.active === 2)).toBe(true);
  });
});

describe("the reaper", () => {
  it("kills the ranks of a launcher killed with SIGKILL, at the next launch and by baton reap", async () => {
    for (const how of ["next launch", "baton reap"] as const) {
      const dir = tempDir();
      const launcher = startBaton([
        "launch",
        "--world",
        "2",
        "--state-dir",
        dir,
        "--name",
        "orphaned",
        "--",
        PYTHON,
        RANK_PY,
        "--ignore-term",
        "--watch-ms",
        "600000",
      ]);
      await until(
        () => launcher.stderr().includes("all 2 ranks ready"),
        "the ranks to be ready",
        30_000,
      );
      const paths = deploymentPaths(dir, "orphaned");
      const manifest = await readStateFile(files, MANIFEST_FORMAT, paths.manifest);
      const orphans = manifest?.ranks.map((rank) => rank.pid) ?? [];
      expect(orphans).toHaveLength(2);
      for (const pid of orphans) stray(pid, "orphaned");
      launcher.child.kill("SIGKILL");
      await launcher.exit;
      for (const pid of orphans) expect(alive(pid)).toBe(true);

      if (how === "next launch") {
        const next = launch({ argv: [process.execPath, ENV_RANK], worldSize: 1, stateDir: dir });
        await next.wait();
      } else {
        const reap = startBaton(["reap", "--state-dir", dir, "--grace-ms", "300"]);
        const result = await reap.exit;
        // It says which ranks still ran and were stopped.
        expect(result.stdout).toMatch(
          /^orphaned: reaped \(launcher pid \d+ is gone\); stopped ranks 0, 1 \(still running\); verified in \d+ ms\n/,
        );
        expect(result.code).toBe(0);
      }
      for (const pid of orphans) expect(alive(pid)).toBe(false);
      expect(existsSync(paths.manifest)).toBe(false);
      expect(existsSync(paths.lease)).toBe(false);
    }
  }, 60_000);

  it("stops, as ranks, the ranks of a launcher killed before its manifest recorded them, with their process groups", async () => {
    const dir = tempDir();
    const deployment = "unrecorded";
    // Each rank starts a helper in its process group with an empty environment, which only its
    // argument names as the deployment's: found through the rank's group, or not at all.
    const helper = `env -i ${process.execPath} -e 'setInterval(() => {}, 1 << 30)' ${deployment}`;
    const launcher = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        LAUNCHER_KILLED_AT_MANIFEST,
        dir,
        deployment,
        "2",
        "--",
        "/bin/sh",
        "-c",
        `${helper} & exec /bin/sleep 300`,
      ],
      { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
    );
    const child = { pid: launcher.pid as number, reaped: false };
    children.push(child);
    launcher.once("exit", () => {
      child.reaped = true;
    });
    const { ranks } = JSON.parse(await firstLine(launcher)) as { ranks: number[] };
    for (const pid of ranks) stray(pid, deployment);
    expect(ranks).toHaveLength(2);
    let helpers: number[] = [];
    await until(() => {
      helpers = procs
        .list()
        .filter((info) => ranks.includes(info.pgid) && !ranks.includes(info.pid))
        .filter((info) => info.argv.includes(deployment))
        .map((info) => info.pid);
      return (
        helpers.length === 2 && ranks.every((pid) => procs.inspect(pid)?.argv[0] === "/bin/sleep")
      );
    }, "each rank's helper");
    for (const pid of helpers) stray(pid, deployment);
    await until(() => child.reaped, "the launcher to die");
    const paths = deploymentPaths(dir, deployment);
    expect((await readStateFile(files, MANIFEST_FORMAT, paths.manifest))?.ranks).toEqual([]);
    // `baton status` lists them as its ranks, running, with no marker yet.
    const [status] = await readDeploymentStatuses({ files, procs, clock }, dir);
    expect(status?.state).toBe("orphaned");
    expect(
      status?.ranks.map(({ rank, pid, alive, phase }) => ({ rank, pid, alive, phase })),
    ).toEqual(ranks.map((pid, rank) => ({ rank, pid, alive: true, phase: "no marker" })));

    const report = await reapFast(dir);
    expect(report.reaped.map((entry) => entry.deployment)).toEqual([deployment]);
    // Named as the ranks it stopped, not as processes the ranks left running.
    expect(report.reaped[0]?.stopped).toEqual([0, 1]);
    expect(report.reaped[0]?.leftRunning).toEqual([]);
    for (const pid of [...ranks, ...helpers]) expect(alive(pid)).toBe(false);
    const outcome = await readStateFile(files, OUTCOME_FORMAT, paths.outcome);
    expect(outcome?.ranks.map(({ rank, pid, reaped }) => ({ rank, pid, reaped }))).toEqual(
      ranks.map((pid, rank) => ({ rank, pid, reaped: true })),
    );
  }, 60_000);

  it("a failed reap keeps the manifest and blocks launching that deployment until a reap succeeds", async () => {
    const dir = tempDir();
    const deployment = "stuck";
    const paths = deploymentPaths(dir, deployment);
    // An orphan of the deployment, and a manifest whose launcher is dead.
    const orphan = spawnChild({
      argv: ["/bin/sleep", "60"],
      env: { BATON_DEPLOYMENT: deployment },
      newGroup: true,
    });
    const deadLauncher = spawnChild({ argv: ["/bin/true"] });
    await deadLauncher.exited;
    await files.writeAtomic(
      paths.manifest,
      encodeStateFile(MANIFEST_FORMAT, {
        deployment,
        launcher: { pid: deadLauncher.pid, token: "t", host: (await import("node:os")).hostname() },
        ranks: [{ rank: 0, localRank: 0, host: "local", pid: orphan.pid, pgid: orphan.pid }],
        worldSize: 1,
        argv: ["/bin/sleep", "60"],
        startedAt: Date.now(),
      }),
    );
    // A process table in which the orphan cannot be killed (as in D state, or another user's).
    const unkillable: Procs = {
      ...procs,
      signal: (pid, signal) => (pid === orphan.pid ? "ok" : procs.signal(pid, signal)),
      signalGroup: (pgid, signal) => (pgid === orphan.pid ? "ok" : procs.signalGroup(pgid, signal)),
    };
    const failed = await reapFast(dir, unkillable);
    expect(failed.failed.map((entry) => entry.deployment)).toEqual([deployment]);
    expect(failed.failed[0]?.error.message).toContain(String(orphan.pid));
    expect(existsSync(paths.manifest)).toBe(true);

    const blocked = launch({
      argv: [process.execPath, ENV_RANK],
      worldSize: 1,
      stateDir: dir,
      name: deployment,
      ports: { procs: unkillable },
    });
    const error = (await blocked.wait().catch((e: unknown) => e)) as RankGroupError;
    expect(error.code).toBe("DEPLOYMENT_BLOCKED");
    expect(error.message).toMatch(
      new RegExp(`^deployment ${deployment}: it cannot be launched: its last reap failed: `),
    );
    expect(error.message).toContain("baton reap");
    // Survivors may yet die, and every launch reaps again first: a rank job's retry may work.
    expect(error.retryable).toBeUndefined();
    expect(blocked.pids()).toEqual([]);

    const reaped = await reapFast(dir);
    expect(reaped.reaped.map((entry) => entry.deployment)).toEqual([deployment]);
    expect(alive(orphan.pid)).toBe(false);
    const relaunched = launch({
      argv: [process.execPath, ENV_RANK],
      worldSize: 1,
      stateDir: dir,
      name: deployment,
    });
    expect((await relaunched.wait()).status).toBe("succeeded");
  }, 30_000);

  it("never signals a process group that a stranger has joined, only the members that carry the deployment", async () => {
    const dir = tempDir();
    const deployment = "reused";
    // A stranger leads the group; one member of the group carries the deployment.
    const stranger = spawnChild({
      argv: [
        "/bin/sh",
        "-c",
        `BATON_DEPLOYMENT=${deployment} BATON_STATE_DIR='${dir}' /bin/sleep 60 & exec /bin/sleep 60`,
      ],
      newGroup: true,
    });
    let member = 0;
    await until(() => {
      member =
        procs.list().find((info) => info.pgid === stranger.pid && info.pid !== stranger.pid)?.pid ??
        0;
      // The leader has exec'd: its argv no longer names the deployment; and so has the member,
      // whose environment has the deployment only from its exec on (a scan before it, under
      // load, found a copy of the shell without it, and the member was rightly left alone).
      return (
        member !== 0 &&
        procs.inspect(stranger.pid)?.argv[0] === "/bin/sleep" &&
        procs.environ(member)?.BATON_DEPLOYMENT === deployment
      );
    }, "the group's second member");
    stray(member, deployment);
    const deadLauncher = spawnChild({ argv: ["/bin/true"] });
    await deadLauncher.exited;
    await files.writeAtomic(
      deploymentPaths(dir, deployment).manifest,
      encodeStateFile(MANIFEST_FORMAT, {
        deployment,
        launcher: { pid: deadLauncher.pid, token: "t", host: (await import("node:os")).hostname() },
        ranks: [{ rank: 0, localRank: 0, host: "local", pid: 999_999, pgid: stranger.pid }],
        worldSize: 1,
        argv: ["x"],
        startedAt: Date.now(),
      }),
    );
    const report = await reapFast(dir);
    expect(report.reaped.map((entry) => entry.deployment)).toEqual([deployment]);
    expect(alive(member)).toBe(false);
    expect(alive(stranger.pid)).toBe(true);
    procs.signal(stranger.pid, "SIGKILL");
    await stranger.exited;
  }, 30_000);

  it("refuses a second launch of a name whose launcher is alive", async () => {
    const dir = tempDir();
    const first = launch({
      argv: [PYTHON, RANK_PY, "--step-ms", "50"],
      worldSize: 1,
      stateDir: dir,
      name: "taken",
    });
    await first.ready;
    const error = await refusedLaunch(dir, "taken");
    expect(error.message).toContain(`live launcher (pid ${process.pid})`);
    expect(first.pids()).toHaveLength(1);
  });

  it("of two launches of one name at the same moment, starts one and blocks the other", async () => {
    const dir = tempDir();
    const spec = { argv: [process.execPath, ENV_RANK], worldSize: 2, stateDir: dir, name: "twin" };
    const twins = [launch(spec), launch(spec)];
    const outcomes = await Promise.allSettled(twins.map((group) => group.wait()));
    const started = outcomes.findIndex((outcome) => outcome.status === "fulfilled");
    expect(started).not.toBe(-1);
    expect(outcomes[started]).toMatchObject({ value: { status: "succeeded" } });
    const blocked = outcomes[1 - started] as PromiseRejectedResult;
    expect(blocked.reason).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
    expect((blocked.reason as RankGroupError).message).toBe(
      `deployment twin: it cannot be launched: another launcher (pid ${process.pid} on ${hostname()}) claimed it a moment ago and is starting its ranks; stop that one first or pick another --name.`,
    );
    expect(twins[1 - started]!.pids()).toEqual([]);
    // The ranks that ran are the started group's: two logs, one per rank, not four.
    expect(twins[started]!.logFiles.map((file) => existsSync(file))).toEqual([true, true]);
  });

  it("takes over the lease of a launcher that died before it wrote its manifest", async () => {
    const dir = tempDir();
    const paths = deploymentPaths(dir, "left");
    const lease = {
      deployment: "left",
      pid: await deadPid(),
      token: "gone",
      // This machine's: its pid is evidence here (another machine's is judged by age alone).
      host: hostname(),
      renewedAt: Date.now(),
      staleAfterMs: 30_000,
    };
    await files.writeAtomic(paths.lease, encodeStateFile(LEASE_FORMAT, lease));
    const group = launch({
      argv: [process.execPath, ENV_RANK],
      worldSize: 1,
      stateDir: dir,
      name: "left",
    });
    expect((await group.wait()).status).toBe("succeeded");
    // The lease was this launcher's while it ran, and went with its verified teardown.
    expect(existsSync(paths.lease)).toBe(false);
  });

  it("refuses a name whose lease is damaged (empty), saying it cannot be read and when it is taken over", async () => {
    const dir = tempDir();
    const paths = deploymentPaths(dir, "torn");
    // A lease appears whole: an empty one was damaged, not being written.
    await files.mkdirp(paths.dir);
    expect(await files.createExclusive(paths.lease, "")).toBe(true);
    const error = await refusedLaunch(dir, "torn");
    expect(error.message).toContain(
      `its lease ${paths.lease} cannot be read (a lease is written whole, so it was damaged, edited by hand, or cut short by a power loss as it was made), and is taken over once untouched for 30.0 s; remove it if no launcher of that name is running`,
    );
  });

  it("leaves a deployment alone while its launcher is alive and its lease fresh", async () => {
    const group = launch({ argv: [PYTHON, RANK_PY, "--step-ms", "50"], worldSize: 1 });
    await group.ready;
    // Node's own ports by default, as a library user calls it.
    const report = await reapDeployments({
      stateDir: group.dir.slice(0, group.dir.lastIndexOf("/")),
    });
    expect(report.live).toEqual([{ deployment: group.deployment, pid: process.pid }]);
    expect(group.pids()).toHaveLength(1);
  });
});
