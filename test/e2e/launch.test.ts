/**
 * `baton launch` and `baton reap` as a user runs them: child processes of bin/baton.js, their
 * exit codes and output, and the ranks they leave (none). Every process a test starts is
 * stopped by its pid when the test ends, even on failure.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import type { RankStatus } from "../../src/rank/deploymentStatus.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { MARKER_FORMAT } from "../../src/rank/markerFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import { ownCgroupDir } from "../../src/runtime/cgroupContainment.ts";
import { KEEP_ENDED_DEPLOYMENTS } from "../../src/runtime/deploymentLogs.ts";
import { startBaton, startOwnBaton, stopBatons } from "../fixtures/batonCli.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { endedDeployments } from "../fixtures/endedDeployments.ts";
import { alive, cleanUpRanks, procs, stray, tempDir, until } from "../fixtures/rankStrays.ts";
import { ranksReady } from "../fixtures/ranksReady.ts";
import { readManifest } from "../fixtures/readManifest.ts";

afterEach(async () => {
  stopBatons();
  await cleanUpRanks();
});

const RANK = ["/usr/bin/python3", "examples/ranks/rank.py"];

/** `baton launch` of one rank running `command` in `stateDir`, awaited to its exit. */
const launchOneIn = (
  stateDir: string,
  command: readonly string[],
  options?: Parameters<typeof startBaton>[1],
) =>
  startBaton(["launch", "--world", "1", "--state-dir", stateDir, "--", ...command], options).exit;

/** `baton launch` of one rank running `true` in `stateDir`, awaited to its exit. */
const launchTrueIn = (stateDir: string, options?: Parameters<typeof startBaton>[1]) =>
  launchOneIn(stateDir, ["true"], options);

/**
 * Launches a deployment named "orphaned" of 2 ranks in `dir` that ignore TERM and do not
 * watch their launcher, then kills the launcher with SIGKILL: only a reap ends them. Returns
 * their pids (stopped by pid when the test ends).
 */
async function orphansIgnoringTerm(dir: string): Promise<number[]> {
  const orphaned = startBaton([
    "launch",
    "--world",
    "2",
    "--state-dir",
    dir,
    "--name",
    "orphaned",
    "--",
    "/bin/sh",
    "-c",
    "trap '' TERM; while :; do sleep 1; done",
  ]);
  let pids: number[] = [];
  await until(async () => {
    pids = (await readManifest(dir, "orphaned"))?.ranks.map((rank) => rank.pid) ?? [];
    return pids.length === 2;
  }, "the orphans' pids in their manifest");
  for (const pid of pids) stray(pid, "orphaned");
  orphaned.child.kill("SIGKILL");
  await orphaned.exit;
  return pids;
}

describe("baton launch", () => {
  it("exits 0 when every rank does, and says where the logs are", async () => {
    const dir = tempDir();
    const result = await startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      dir,
      "--",
      ...RANK,
      // Ready for about half a second: several reads of the launcher's watch (100 ms).
      "--steps",
      "5",
      "--step-ms",
      "100",
    ]).exit;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/deployment dep-[a-z0-9]{12}: 2 ranks of .*rank\.py/);
    expect(result.stderr).toContain(`logs in ${dir}/dep-`);
    expect(result.stderr).toContain("all 2 ranks ready");
    const [deployment] = readdirSync(dir);
    expect(readdirSync(join(dir, deployment ?? "")).sort()).toEqual([
      "outcome.json",
      "rank-0.log",
      "rank-1.log",
    ]);
  }, 60_000);

  it("writes its log lines on a piped stderr as on a terminal, not as JSON among its own lines", async () => {
    const dir = tempDir();
    const result = await startBaton([
      "launch",
      "--log-level",
      "info",
      "--world",
      "1",
      "--state-dir",
      dir,
      "--",
      "true",
    ]).exit;
    expect(result.code).toBe(0);
    // One line, its fields after it; the rank's pid is shown: a field named `pid` is left out
    // as the logger's own.
    expect(result.stderr).toMatch(
      /^\[[\d:.]+\] INFO: rank exited \{"deployment":"dep-[^\n]*"rankPid":\d+[^\n]*\}$/m,
    );
    expect(result.stderr).toContain("baton launch: every rank exited 0\n");
    expect(result.stderr).not.toContain('"level"');
  }, 60_000);

  it("shows the ranks' command as it is typed in a shell, a word with spaces in quotes", async () => {
    const result = await launchOneIn(tempDir(), ["/bin/sh", "-c", "sleep 0; exit 0"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /deployment dep-[a-z0-9]{12}: 1 rank of \/bin\/sh -c 'sleep 0; exit 0'; logs in /,
    );
  }, 60_000);

  it("does not call ranks ready that exited 0 without a ready marker", async () => {
    const result = await startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      tempDir(),
      "--",
      "/bin/true",
    ]).exit;
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("ranks 0, 1 exited 0 before the launcher saw a ready marker");
    expect(result.stderr).not.toContain("ready\n");
    expect(result.stderr).toContain("every rank exited 0");
  }, 60_000);

  it("says which processes the ranks left running when every rank exited 0, and stops them", async () => {
    const dir = tempDir();
    const result = await startBaton(
      [
        "launch",
        "--world",
        "1",
        "--state-dir",
        dir,
        "--",
        "/bin/sh",
        "-c",
        // A helper the rank started and forgot, in a session of its own. The rank exits once
        // the helper is in it (it writes its pid after setsid) and is sleep: exited before
        // setsid, it left a child still in the rank's process group, which the launcher's
        // stop of that group took with it; before the exec, the launcher named the helper
        // /bin/sh (the fresh-clone CI saw each once).
        `setsid /bin/sh -c 'echo $$ > "$0"; exec sleep 30' "$HELPER_IN_SESSION" </dev/null >/dev/null 2>&1 & until [ -s "$HELPER_IN_SESSION" ] && [ "$(cat /proc/$(cat "$HELPER_IN_SESSION")/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done; exit 0`,
      ],
      { env: { HELPER_IN_SESSION: join(dir, "helper-in-session") } },
    ).exit;
    expect(result.code).toBe(0);
    const left =
      /every rank exited 0; baton stopped 1 process they left running: pid (\d+) \(sleep\) of rank 0, which had left its process group\n/.exec(
        result.stderr,
      );
    expect(left, result.stderr).not.toBeNull();
    expect(alive(Number(left?.[1]))).toBe(false);
  }, 30_000);

  it("names a process a rank left running in its own process group when every rank exited 0, and stops it", async () => {
    const dir = tempDir();
    const pidFile = join(dir, "helper.pid");
    // Should the launcher leave it, the helper is stopped by its pid when the test ends.
    onTestFinished(async () => {
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8")) : 0;
      if (pid > 0) stray(pid, "forgot");
      await cleanUpRanks();
    });
    const result = await startBaton(
      [
        "launch",
        "--world",
        "1",
        "--state-dir",
        dir,
        "--name",
        "forgot",
        "--",
        "/bin/sh",
        "-c",
        // A helper the rank started and forgot, still in the rank's process group.
        'sleep 30 & echo $! > "$HELPER_PID"; exit 0',
      ],
      { env: { HELPER_PID: pidFile } },
    ).exit;
    expect(result.code).toBe(0);
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(result.stderr).toContain(
      `every rank exited 0; baton stopped 1 process they left running: pid ${pid} (sleep) of rank 0\n`,
    );
    expect(alive(pid)).toBe(false);
    const outcome = JSON.parse(readFileSync(join(dir, "forgot", "outcome.json"), "utf8"));
    expect(outcome.ended.leftRunning).toEqual([
      { pid, rank: 0, program: "sleep", outsideGroup: false },
    ]);
  }, 30_000);

  it("once its group ended, removes the logs of deployments that ended over a week ago beyond the newest 20, not the failed one's", async () => {
    const dir = tempDir();
    const old = endedDeployments(dir, KEEP_ENDED_DEPLOYMENTS, 30, Date.now());
    const result = await launchOneIn(dir, [
      "/bin/sh",
      "-c",
      "echo the failing rank says why; exit 3",
    ]);
    expect(result.code).toBe(3);
    const failed = /deployment (dep-[a-z0-9]{12})/.exec(result.stderr)?.[1] ?? "";
    expect(readFileSync(join(dir, failed, "rank-0.log"), "utf8")).toContain(
      "the failing rank says why",
    );
    expect(readdirSync(dir).sort()).toEqual(
      [...old.slice(1).map((folder) => folder.slice(dir.length + 1)), failed].sort(),
    );
  }, 60_000);

  it("keeps the logs of ended deployments as --keep-ended-logs or BATON_KEEP_ENDED_LOGS says, and refuses one that is not a retention", async () => {
    const dir = tempDir();
    // Four deployments that ended three days ago: by default they would all stay a week.
    endedDeployments(dir, 4, 3, Date.now());
    const launch = (flags: string[], env: Record<string, string> = {}) =>
      startBaton(["launch", "--world", "1", "--state-dir", dir, ...flags, "--", "/bin/true"], {
        env,
      }).exit;
    const deploymentOf = (stderr: string) => /deployment (dep-[a-z0-9]{12})/.exec(stderr)?.[1];

    const kept = await launch([], { BATON_KEEP_ENDED_LOGS: "1,12h" });
    expect(kept.code).toBe(0);
    expect(readdirSync(dir)).toEqual([deploymentOf(kept.stderr)]);

    const refused = await launch(["--keep-ended-logs", "20,7"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'baton launch: --keep-ended-logs must be COUNT[,AGE] (keep the logs of the newest COUNT ended deployments, 1 to 10000, and of any that ended within AGE, such as 7d or 12h, or 0; default 20,7d) or forever (keep them all), not "20,7" [CONFIG]\n',
    );
    const badEnv = await launch([], { BATON_KEEP_ENDED_LOGS: "lots" });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toMatch(/^baton launch: BATON_KEEP_ENDED_LOGS must be COUNT\[,AGE\]/);
    expect(readdirSync(dir)).toHaveLength(1);

    // The flag wins over the variable.
    const forever = await launch(["--keep-ended-logs", "forever"], {
      BATON_KEEP_ENDED_LOGS: "1,0",
    });
    expect(forever.code).toBe(0);
    expect(readdirSync(dir)).toHaveLength(2);
  }, 60_000);

  it("exits 1 when its teardown cannot be verified, and baton reap finishes it", async () => {
    const dir = tempDir();
    const loopPidFile = join(dir, "loop.pid");
    // Four loops outside the deployment (no BATON_DEPLOYMENT, a session of their own, no
    // cgroup), each restarting a process carrying the deployment whenever it dies: no
    // teardown can prove it gone. (One loop lost the race under load: the check came between
    // its process's death and the restart, and the teardown was verified.) The loops' shell
    // writes its pid once it is in its session, and the rank waits for that, well within its
    // time limit: a child not yet out of the rank's process group went with it when the
    // time limit stopped that group (the fresh-clone CI saw it once).
    const rank = [
      "/bin/sh",
      "-c",
      'env -u BATON_DEPLOYMENT setsid /bin/sh -c "for i in 1 2 3 4; do while :; do BATON_DEPLOYMENT=$BATON_DEPLOYMENT sleep 300; done & done; echo \\$\\$ > \\"$LOOP_PID_FILE\\"; wait" </dev/null >/dev/null 2>&1 & while [ ! -s "$LOOP_PID_FILE" ]; do sleep 0.01; done; sleep 300',
    ];
    const launch = startBaton(
      [
        "launch",
        "--world",
        "1",
        "--state-dir",
        dir,
        "--time-limit-ms",
        "2000",
        "--grace-ms",
        "100",
        "--no-contain",
        "--",
        ...rank,
      ],
      { env: { LOOP_PID_FILE: loopPidFile } },
    );
    let loop: number | undefined;
    // The loops and their processes: the process group the session's leader heads.
    const stopLoop = () => {
      if (loop !== undefined && alive(loop)) process.kill(-loop, "SIGKILL");
    };
    try {
      await until(
        () => existsSync(loopPidFile) && readFileSync(loopPidFile, "utf8").endsWith("\n"),
        "the loop's pid",
      );
      loop = Number(readFileSync(loopPidFile, "utf8"));
      const result = await launch.exit;
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /is not verified: \d+ \(\w+(-\w+)?\)(, \d+ \(\w+(-\w+)?\))* still alive/,
      );
      expect(result.stderr).toContain(
        `the manifest is kept: run \`baton reap --state-dir ${dir}\` to try the teardown again`,
      );
      stopLoop();
      const reaped = await startBaton(["reap", "--state-dir", dir]).exit;
      expect(reaped.code).toBe(0);
      // The loop's pid file beside the deployment is not one: passed over.
      // The report on stdout, as baton status's table; nothing on stderr.
      expect(reaped.stdout).toMatch(
        /^dep-[a-z0-9]{12}: reaped \(launcher pid \d+ is gone\); verified in \d+ ms\n$/,
      );
      expect(reaped.stderr).toBe("");
    } finally {
      stopLoop();
      // The loop's last child, if the reap did not get to it: by pid, found by this test's
      // state dir in its environment.
      for (const info of procs.list()) {
        if (procs.environ(info.pid)?.BATON_STATE_DIR === dir && alive(info.pid)) {
          process.kill(info.pid, "SIGKILL");
        }
      }
    }
  }, 60_000);

  it("exits 127 for a command that is not there and 126 for one that cannot be executed, as a shell does, pointing at no logs", async () => {
    const dir = tempDir();
    for (const [command, code, why] of [
      ["no-such-train-program", 127, "no program no-such-train-program on PATH"],
      [dir, 126, `${dir} is a directory, not a program`],
    ] as const) {
      const result = await startBaton(["launch", "--world", "2", "--state-dir", dir, "--", command])
        .exit;
      expect(result.code).toBe(code);
      // No rank started, so no "logs in DIR/rank-*.log" line: its one line is the failure.
      expect(result.stderr).toMatch(/^baton launch: deployment dep-[a-z0-9]{12}: rank 0 of 2 /);
      expect(result.stderr).toContain(
        `rank 0 of 2 could not be started: cannot start "${command}": ${why}`,
      );
      expect(result.stderr.split("\n")).toHaveLength(2);
    }
  }, 60_000);

  it("names the state dir, not the command, when the state dir cannot be written", async () => {
    // sysfs refuses mkdir even to root (EPERM; EACCES to another user): not an immutable /sys.
    const result = await startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      "/sys/baton-state",
      "--",
      "true",
    ]).exit;
    expect(result.code).toBe(1);
    // No "logs in /sys/baton-state/…": the state dir refused the deployment, so it has none.
    expect(result.stderr.split("\n")).toHaveLength(2);
    expect(result.stderr).toMatch(
      /^baton launch: deployment dep-[a-z0-9]{12}: the state dir \/sys\/baton-state cannot hold deployment dep-[a-z0-9]{12} \(cannot mkdir \/sys\/baton-state: (operation not permitted|permission denied): \/sys is in sysfs, which holds the kernel's own files: no one, root included, makes a file or folder there\); give the state dir \(--state-dir, or stateDir\) another directory, one you can write to\. No rank was started\. \[LAUNCH_FAILED\]\n$/,
    );
  }, 60_000);

  it.skipIf(ownCgroupDir() === undefined || process.getuid?.() !== 0)(
    "leaves none of the folders it made in a state dir that cannot hold the deployment (in a cgroup file system, each one a cgroup)",
    async () => {
      // Root makes folders there (cgroups), but no file: the lease is refused after them.
      const parent = join(ownCgroupDir()!, `e2e-state-${process.pid}`);
      mkdirSync(parent);
      onTestFinished(() => {
        // rmdir takes only an empty cgroup, deepest first: none holds a process.
        const below = (dir: string): string[] =>
          readdirSync(dir, { withFileTypes: true })
            .filter((entry) => entry.isDirectory())
            .flatMap((entry) => [...below(join(dir, entry.name)), join(dir, entry.name)]);
        for (const dir of [...below(parent), parent]) rmdirSync(dir);
      });
      const stateDir = join(parent, "run");
      const result = await launchTrueIn(stateDir);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(`the state dir ${stateDir} cannot hold deployment dep-`);
      expect(readdirSync(parent, { withFileTypes: true }).filter((e) => e.isDirectory())).toEqual(
        [],
      );
    },
    60_000,
  );

  it("names a symbolic link to nothing on the state dir's way, and a file system that makes no folders", async () => {
    const link = join(tempDir(), "scratch");
    const target = join(tempDir(), "not-mounted");
    symlinkSync(target, link);
    for (const [stateDir, why, advice] of [
      [
        join(link, "state"),
        `${link} is a symbolic link to ${target}, which does not exist (a disk not mounted?)`,
        `make ${target}, or give the state dir (--state-dir, or stateDir) another directory`,
      ],
      [
        "/proc/self/baton-state/ranks",
        "cannot mkdir /proc/self/baton-state: no such file or directory, though the folder above it is there (a file system that makes no folders, such as /proc?)",
        "give the state dir (--state-dir, or stateDir) another directory, on a disk you can write to",
      ],
    ] as const) {
      const result = await launchTrueIn(stateDir);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`the state dir ${stateDir} cannot hold deployment dep-`);
      expect(result.stderr).toContain(
        ` (${why}); ${advice}. No rank was started. [LAUNCH_FAILED]\n`,
      );
    }
  }, 60_000);

  it("exits with the failing rank's code and quotes its log", async () => {
    const result = await startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      tempDir(),
      "--",
      ...RANK,
      "--step-ms",
      "20",
      "--fail-at",
      "2",
      "--exit-code",
      "5",
    ]).exit;
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/rank \d exited with code 5/);
    expect(result.stderr).toContain("failing at step 2 with exit code 5");
    expect(result.stderr).toContain("[RANK_FAILED]");
  }, 60_000);

  it("on Ctrl-C while it stops the others after a rank failed, KILLs at once and still exits with that rank's code and log", async () => {
    const dir = tempDir();
    // Rank 1 fails at once; rank 0 ignores TERM, so its grace (a minute) is all that is left.
    const launcher = startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      dir,
      "--name",
      "failing",
      "--grace-ms",
      "60000",
      "--",
      "/bin/sh",
      "-c",
      `trap '' TERM; [ "$RANK" = 1 ] && { echo "rank 1 gives up"; exit 3; }; while :; do sleep 0.1; done`,
    ]);
    await until(
      () => launcher.stderr().includes("rank 1 exited with code 3: stopping the other rank"),
      "the line that says the other rank is being stopped",
    );
    const pids = (await readManifest(dir, "failing"))?.ranks.map((rank) => rank.pid) ?? [];
    for (const pid of pids) stray(pid, "failing");
    launcher.child.kill("SIGINT");
    const result = await launcher.exit;
    // It used to wait the grace out and then exit 130 with no word of the failed rank.
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(
      "SIGINT: no more grace, SIGKILL to what is left of failing (a teardown is verified before baton exits)",
    );
    expect(result.stderr).toContain("[RANK_FAILED]");
    expect(result.stderr).toContain("rank 1 gives up");
    for (const pid of pids) expect(alive(pid)).toBe(false);
  }, 30_000);

  /** What the first signal's line says the ranks get: before, it said nothing of the grace. */
  const SECOND_CTRL_C = "(SIGTERM, then SIGKILL after 300 ms, or at once on a second Ctrl-C)";
  it.each([
    {
      how: "Ctrl-C",
      flags: [],
      signal: "SIGINT" as const,
      code: 130,
      says: `SIGINT: stopping every rank of stopped ${SECOND_CTRL_C}`,
    },
    // The terminal closed: Node's default ended the launcher at once and left every rank.
    {
      how: "A hang-up",
      flags: [],
      signal: "SIGHUP" as const,
      code: 129,
      says: `SIGHUP: stopping every rank of stopped ${SECOND_CTRL_C}`,
    },
    {
      how: "--time-limit-ms",
      flags: ["--time-limit-ms", "4000"],
      signal: undefined,
      code: 124,
      // No signal came: the first Ctrl-C is the one that cuts the grace short.
      says: "time limit of 4000 ms reached: stopping every rank of stopped (SIGTERM, then SIGKILL after 300 ms, or at once on Ctrl-C)",
    },
  ])(
    "$how stops every rank, verified, even ranks that ignore TERM, and exits $code",
    async ({ flags, signal, code, says }) => {
      const dir = tempDir();
      const launcher = startBaton([
        "launch",
        "--world",
        "2",
        "--state-dir",
        dir,
        "--name",
        "stopped",
        "--grace-ms",
        "300",
        ...flags,
        "--",
        ...RANK,
        "--ignore-term",
        "--step-ms",
        "20",
      ]);
      await ranksReady(launcher, 2);
      const manifest = await readManifest(dir, "stopped");
      const pids = manifest?.ranks.map((rank) => rank.pid) ?? [];
      expect(pids).toHaveLength(2);
      for (const pid of pids) stray(pid, "stopped");
      if (signal) launcher.child.kill(signal);
      const result = await launcher.exit;
      expect(result.code).toBe(code);
      expect(result.stderr).toContain(says);
      expect(result.stderr).toContain("stopped; every rank is gone");
      for (const pid of pids) expect(alive(pid)).toBe(false);
      expect(readdirSync(join(dir, "stopped")).sort()).toEqual([
        "outcome.json",
        "rank-0.log",
        "rank-1.log",
      ]);
    },
    60_000,
  );

  it("on Ctrl-C while it reaps another launch's orphans, finishes that reap, with SIGKILL at once on a second Ctrl-C, and starts no rank", async () => {
    const dir = tempDir();
    const pids = await orphansIgnoringTerm(dir);
    const launcher = startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      dir,
      "--name",
      "next",
      // Ten minutes: only the second Ctrl-C ends the reap within the test's time.
      "--grace-ms",
      "600000",
      "--",
      ...RANK,
    ]);
    // The orphans ignore TERM: the reap waits for the grace, then KILLs them.
    await until(
      () => launcher.stderr().includes("reaping orphaned deployment orphaned"),
      "the reap of the orphans",
    );
    expect(launcher.stderr()).toContain(
      "stopping its ranks 0, 1, which still run (TERM, then KILL after the grace)",
    );
    launcher.child.kill("SIGINT");
    await until(
      () => launcher.stderr().includes("SIGINT: no rank of next was started"),
      "the first SIGINT's line",
    );
    // The second Ctrl-C used to find baton done but for the reap, and kill it before the KILL;
    // then it only said "still stopping" while the grace ran out.
    launcher.child.kill("SIGINT");
    const result = await launcher.exit;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain(
      "SIGINT: no more grace, SIGKILL to what is left of the orphans being reaped",
    );
    expect(result.stderr).toContain("stopped before any rank started");
    for (const pid of pids) expect(alive(pid)).toBe(false);
    expect(existsSync(join(dir, "orphaned", "manifest.json"))).toBe(false);
    expect(existsSync(join(dir, "next", "rank-0.log"))).toBe(false);
  }, 60_000);

  it("leaves baton status how the group ended: each rank's exit code, when, and the logs", async () => {
    const dir = tempDir();
    // Rank 1 fails at its second step; rank 0 runs until the group stops it.
    const rank = RANK.join(" ");
    const failing = [
      "/bin/sh",
      "-c",
      `if [ "$RANK" = 1 ]; then exec ${rank} --step-ms 20 --fail-at 2 --exit-code 5; else exec ${rank} --steps 100000 --step-ms 20; fi`,
    ];
    const result = await startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      dir,
      "--name",
      "failing",
      "--",
      ...failing,
    ]).exit;
    expect(result.code).toBe(5);
    const json = await startBaton(["status", "--state-dir", dir, "--json"]).exit;
    const [dep] = JSON.parse(json.stdout).deployments;
    expect(dep).toMatchObject({
      deployment: "failing",
      state: "ended",
      reason: "failed: rank 1 exited with code 5",
      worldSize: 2,
      argv: failing,
      ended: { status: "failed", reason: "rank 1 exited with code 5" },
    });
    expect(dep.ended.ranForMs).toBeGreaterThan(0);
    expect(
      dep.ranks.map((rank: RankStatus) => [
        rank.rank,
        rank.phase,
        rank.exit?.code,
        rank.exit?.signal,
        rank.log,
      ]),
    ).toEqual([
      [0, "exited", null, "SIGTERM", join(dir, "failing", "rank-0.log")],
      [1, "exited", 5, null, join(dir, "failing", "rank-1.log")],
    ]);
    const table = await startBaton(["status", "--state-dir", dir]).exit;
    const lines = table.stdout.split("\n");
    expect(lines[0]).toMatch(
      /^failing {2}ended \(failed: rank 1 exited with code 5\) {2}world 2 {2}ran \d+(\.\d)? (ms|s), ended \d+(\.\d)? (ms|s) ago$/,
    );
    expect(lines[1]).toMatch(/^ {2}RANK +PID +PHASE +EXIT +EXITED$/);
    expect(lines[2]).toMatch(/^ {2}0 +\d+ +exited +SIGTERM +\d+(\.\d)? (ms|s) ago$/);
    expect(lines[3]).toMatch(/^ {2}1 +\d+ +exited +code 5 +\d+(\.\d)? (ms|s) ago$/);
    expect(lines[4]).toBe(`  logs: ${dir}/failing/rank-*.log`);
  }, 60_000);

  it("leaves baton status, after a launcher killed with SIGKILL, orphaned and then reaped", async () => {
    const dir = tempDir();
    const launcher = startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      dir,
      "--name",
      "killed",
      "--",
      ...RANK,
      "--step-ms",
      "20",
    ]);
    await ranksReady(launcher, 2);
    const manifest = await readManifest(dir, "killed");
    for (const rank of manifest?.ranks ?? []) stray(rank.pid, "killed");
    const killedAt = Date.now();
    launcher.child.kill("SIGKILL");
    await launcher.exit;
    const orphaned = await startBaton(["status", "--state-dir", dir, "--json"]).exit;
    const orphan = JSON.parse(orphaned.stdout).deployments[0];
    expect(orphan).toMatchObject({
      state: "orphaned",
      reason: `launcher pid ${manifest?.launcher.pid} is gone`,
      ended: null,
    });
    // Seen last by what it wrote (its lease, its manifest), before it was killed.
    expect(orphan.launcherLastSeen.at).toBeGreaterThanOrEqual(manifest!.startedAt);
    expect(orphan.launcherLastSeen.at).toBeLessThanOrEqual(killedAt);
    expect(orphan.launcherLastSeen.agoMs).toBeGreaterThanOrEqual(
      orphan.ageMs - (killedAt - manifest!.startedAt),
    );
    // The table says since when nobody saw the launcher, rather than counting it up, and what to do.
    const orphanTable = await startBaton(["status", "--state-dir", dir]).exit;
    expect(orphanTable.stdout.split("\n")[0]).toMatch(
      new RegExp(
        `^killed {2}orphaned \\(launcher pid ${manifest?.launcher.pid} is gone\\) {2}launcher ${manifest?.launcher.pid} \\(gone, last seen \\d+(\\.\\d)? (ms|s) ago\\) {2}world 2 {2}launched \\d+(\\.\\d)? (ms|s) ago( |$)`,
      ),
    );
    expect(orphanTable.stdout).not.toMatch(/ up \d| lease renewed/);
    // (Its ranks may have seen their launcher gone already: then nothing is left to stop.)
    expect(orphanTable.stdout).toMatch(
      new RegExp(
        `\\n  \`baton reap --state-dir ${dir}\` (stops its ranks \\(verified\\) and clears its control files|clears its control files \\(nothing of it runs any more\\))\\n`,
      ),
    );
    // The ranks see their launcher gone and exit on their own, before the reap.
    for (const rank of manifest?.ranks ?? []) {
      await until(() => !alive(rank.pid), `rank pid ${rank.pid} to exit`);
    }
    // Then there is nothing left to stop: the reap only clears files.
    const goneTable = await startBaton(["status", "--state-dir", dir]).exit;
    expect(goneTable.stdout).toContain(
      `\n  \`baton reap --state-dir ${dir}\` clears its control files (nothing of it runs any more)\n`,
    );
    const reap = await startBaton(["reap", "--state-dir", dir, "--json"]).exit;
    expect(reap.code).toBe(0);
    // The ranks had exited on their own: the reap stopped none.
    expect(JSON.parse(reap.stdout).reaped).toMatchObject([
      { deployment: "killed", stoppedRanks: [] },
    ]);
    const json = await startBaton(["status", "--state-dir", dir, "--json"]).exit;
    const [dep] = JSON.parse(json.stdout).deployments;
    expect(dep).toMatchObject({
      state: "ended",
      reason: `reaped: launcher pid ${manifest?.launcher.pid} is gone`,
      ended: { status: "reaped" },
      worldSize: 2,
      launcherLastSeen: null,
    });
    // Nobody learned how the ranks exited (their launcher was gone), nor did the reap stop them.
    expect(dep.ranks.map((rank: RankStatus) => [rank.pid, rank.phase, rank.exit])).toEqual(
      manifest?.ranks.map((rank) => [rank.pid, "gone", null]),
    );
    const table = await startBaton(["status", "--state-dir", dir]).exit;
    expect(table.stdout).toContain(
      "  (EXIT -: its launcher died before that rank exited, so nobody recorded how; its log may say)\n",
    );
    expect(table.stdout).toContain(`  logs: ${dir}/killed/rank-*.log\n`);
  }, 60_000);

  it("gives every rank the --master-port asked for", async () => {
    const dir = tempDir();
    const result = await startBaton([
      "launch",
      "--world",
      "2",
      "--master-port",
      "29611",
      "--state-dir",
      dir,
      "--name",
      "fixed-port",
      "--",
      "/bin/sh",
      "-c",
      'echo "rank $RANK port $MASTER_PORT"',
    ]).exit;
    expect(result.code).toBe(0);
    const logs = ["rank-0.log", "rank-1.log"].map((log) =>
      readFileSync(join(dir, "fixed-port", log), "utf8").trim(),
    );
    expect(logs).toEqual(["rank 0 port 29611", "rank 1 port 29611"]);
  }, 60_000);
});

/**
 * Quick refusals, each its own `baton` process and nothing else: side by side, since test
 * files run one at a time and one process at a time left CI's second core idle.
 */
describe.concurrent("baton launch's refusals of bad usage", () => {
  it.for<[string[], string]>([
    [
      ["--", "true"],
      "baton launch: no number of ranks: give --world N, the number of ranks to start",
    ],
    [
      ["--world", "", "--", "true"],
      '--world must be a whole number of ranks from 1 to 65536, not ""',
    ],
    [
      ["--world", "1e1", "--", "true"],
      '--world must be a whole number of ranks from 1 to 65536, not "1e1"',
    ],
    [
      ["--world", " 2", "--", "true"],
      '--world must be a whole number of ranks from 1 to 65536, not " 2"',
    ],
    [
      ["--world=0x2", "--", "true"],
      '--world must be a whole number of ranks from 1 to 65536, not "0x2"',
    ],
    [["--world", "2"], "baton launch: no command to run: give it after --"],
    // A typo for 10 would fill the launcher's memory before it started a rank.
    [
      ["--world", "100000000", "--", "true"],
      '--world must be a whole number of ranks from 1 to 65536, not "100000000"',
    ],
    [
      ["--hosts", "local*999999,local", "--", "true"],
      "--hosts places 1000000 ranks; a launch starts at most 65536",
    ],
    // The host's own mistake first: a count fixed to match would still be refused for it.
    [
      ["--world", "2", "--hosts", "gpu-2", "--", "true"],
      'baton launch: host "gpu-2" is not valid: it is neither `local` nor an ssh:// URL',
    ],
    [
      ["--world", "2", "true", "--verbose"],
      "unknown flag --verbose; if it is the command's own, put the command after -- (baton launch --world 2 -- cmd --its-flags) (baton launch --help lists its flags)",
    ],
    [
      ["--wrold", "2", "--", "true"],
      "baton launch: unknown flag --wrold; did you mean --world? If it is the command's own, put the command after -- (baton launch --world 2 -- cmd --its-flags) (baton launch --help lists its flags) [CONFIG]\n",
    ],
    [
      ["--world", "--", "true"],
      "baton launch: --world needs a value (baton launch --help lists its flags) [CONFIG]\n",
    ],
    [
      ["--world", "2", "--master-port", "70000", "--", "true"],
      '--master-port must be a TCP port from 1 to 65535, not "70000"',
    ],
    [
      ["--world", "1", "--time-limit-ms", "30 days", "--", "true"],
      '--time-limit-ms must be a whole number of milliseconds ≥ 1, not "30 days"',
    ],
    // A negative number gets the flag's own message, not parseArgs' about a leading dash.
    // An unset variable, as in --state-dir "$DIR", is not the working directory.
    [
      ["--world", "1", "--state-dir", "", "--", "true"],
      "--state-dir is empty: give it a value, or leave it out (baton launch --help says what it takes)",
    ],
    // ssh would fail on it only once a remote rank is reached, after the local ones started.
    [
      ["--world", "1", "--ssh-config", "/nonexistent/ssh_config", "--", "true"],
      "--ssh-config /nonexistent/ssh_config does not exist: give the path of an ssh_config file",
    ],
    [
      ["--world", "-2", "--", "true"],
      '--world must be a whole number of ranks from 1 to 65536, not "-2"',
    ],
    [
      ["--world", "1", "--grace-ms", "-5", "--", "true"],
      '--grace-ms must be a whole number of milliseconds ≥ 1, not "-5"',
    ],
  ])(
    "refuses %j with exit code 2: %s",
    { timeout: 60_000 },
    async ([args, message], { expect, onTestFinished }) => {
      const result = await startOwnBaton(onTestFinished, ["launch", ...args]).exit;
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
    },
  );
});

describe("baton reap", () => {
  it("reports an empty state dir and exits 0", async () => {
    const result = await startBaton(["reap", "--state-dir", tempDir(), "--json"]).exit;
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ reaped: [], live: [], failed: [], waiting: [] });
    // --help names every key --json prints (it left out `waiting`).
    const help = (await startBaton(["reap", "--help"]).exit).stdout.replace(/\s+/g, " ");
    const keys = Object.keys(report).join(", ");
    expect(help).toContain(`{ ${keys} }`);
  }, 60_000);

  it("names what the ranks of a dead launcher left running and it stopped, and records it for baton status", async () => {
    const dir = tempDir();
    const inGroup = join(dir, "in-group.pid");
    const outside = join(dir, "outside.pid");
    const go = join(dir, "go");
    // Should the reap miss them, the helpers are stopped by their pids when the test ends.
    onTestFinished(async () => {
      for (const file of [inGroup, outside]) {
        const pid = existsSync(file) ? Number(readFileSync(file, "utf8")) : 0;
        if (pid > 0) stray(pid, "leaky");
      }
      await cleanUpRanks();
    });
    const launch = startBaton(
      [
        "launch",
        "--world",
        "1",
        "--state-dir",
        dir,
        "--name",
        "leaky",
        "--",
        "/bin/sh",
        "-c",
        // Two helpers it forgets, one in its process group and one that leaves it. The rank
        // exits after its launcher is gone.
        'sleep 300 & echo $! > "$IN_GROUP"; setsid sleep 301 & echo $! > "$OUTSIDE"; while [ ! -e "$GO" ]; do sleep 0.05; done',
      ],
      { env: { IN_GROUP: inGroup, OUTSIDE: outside, GO: go } },
    );
    let rankPid = 0;
    await until(async () => {
      rankPid = (await readManifest(dir, "leaky"))?.ranks[0]?.pid ?? 0;
      return rankPid > 0 && existsSync(inGroup) && existsSync(outside);
    }, "the rank and its helpers");
    stray(rankPid, "leaky");
    const helper = Number(readFileSync(inGroup, "utf8"));
    const escaped = Number(readFileSync(outside, "utf8"));
    launch.child.kill("SIGKILL");
    await launch.exit;
    writeFileSync(go, "");
    await until(() => !alive(rankPid), "the rank to exit");
    const reap = await startBaton(["reap", "--state-dir", dir, "--log-level", "info"]).exit;
    expect(reap.code).toBe(0);
    // Its log, on a piped stderr, as on a terminal: a line an event, its fields after it.
    expect(reap.stderr).toMatch(
      /^\[[\d:.]+\] INFO: reaping an orphaned deployment \{"deployment":"leaky",/m,
    );
    expect(reap.stderr).not.toContain('"level"');
    const said = `baton stopped 2 processes they left running: pid ${helper} (sleep) of rank 0; pid ${escaped} (sleep) of rank 0, which had left its process group`;
    expect(reap.stdout).toMatch(
      /^leaky: reaped \(launcher pid \d+ is gone\); verified in \d+ ms; /,
    );
    expect(reap.stdout).toContain(`; ${said}\n`);
    expect(alive(helper)).toBe(false);
    expect(alive(escaped)).toBe(false);
    // baton status says the same from the outcome record, and --json names each.
    expect((await startBaton(["status", "--state-dir", dir]).exit).stdout).toContain(
      `\n  ${said}\n`,
    );
    const status = JSON.parse(
      (await startBaton(["status", "--state-dir", dir, "--json"]).exit).stdout,
    );
    expect(status.deployments[0].ended).toMatchObject({
      status: "reaped",
      leftRunning: [
        { pid: helper, rank: 0, program: "sleep", outsideGroup: false },
        { pid: escaped, rank: 0, program: "sleep", outsideGroup: true },
      ],
    });
  }, 60_000);

  it("reaps a deployment whose folder, left empty, cannot be removed, saying which, why and what to do, and exits 0", async () => {
    const dir = tempDir();
    // The deployment's folder is a symbolic link (its rmdir fails, as root too) to a folder
    // holding the stale lease of a launcher that died before it wrote its manifest.
    const target = tempDir();
    const folder = join(dir, "linked");
    symlinkSync(target, folder);
    writeFileSync(
      join(folder, "lease.json"),
      encodeStateFile(LEASE_FORMAT, {
        deployment: "linked",
        pid: await deadPid(),
        token: "t",
        renewedAt: Date.now() - 60_000,
        staleAfterMs: 30_000,
      }),
    );
    const result = await startBaton(["reap", "--state-dir", dir]).exit;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^linked: reaped \(no manifest, and the lease of launcher pid \d+/,
    );
    expect(result.stdout).toContain(
      `\nlinked: the empty folder ${folder} of the ended deployment was not removed (not a directory (ENOTDIR)); nothing needs it any more: once what refused it is fixed`,
    );
    expect(readdirSync(target)).toEqual([]);
  }, 60_000);

  it("on Ctrl-C sends SIGKILL at once to orphans in their grace, and still verifies the reap", async () => {
    const dir = tempDir();
    const pids = await orphansIgnoringTerm(dir);
    // Ten minutes of grace: only the Ctrl-C ends the reap within the test's time. Before,
    // Ctrl-C ended baton reap at once, the orphans still running.
    const reap = startBaton(["reap", "--state-dir", dir, "--grace-ms", "600000"]);
    await until(
      () => reap.stderr().includes("reaping orphaned deployment orphaned"),
      "the reap of the orphans",
    );
    reap.child.kill("SIGINT");
    const result = await reap.exit;
    expect(result.stderr).toContain("SIGINT: no more grace, SIGKILL to the orphans still running");
    expect(result.stdout).toMatch(
      /^orphaned: reaped \(launcher pid \d+ is gone\); stopped ranks 0, 1/,
    );
    expect(result.code).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);
    expect(existsSync(join(dir, "orphaned", "manifest.json"))).toBe(false);
  }, 60_000);

  it("never signals a program that took a dead rank's pid, even one whose arguments name the deployment", async () => {
    const dir = tempDir();
    const deployment = "dep-reusedpid01";
    const paths = deploymentPaths(dir, deployment);
    mkdirSync(paths.dir);
    writeFileSync(paths.log(0), "rank 0: ready\n");
    // The operator's `tail -f` of the log, in a group of its own, at the pid the manifest and
    // the marker recorded for rank 0 a minute ago: the pid was reused (here, by construction).
    const tail = procs.spawn({ argv: ["tail", "-f", paths.log(0)], newGroup: true });
    try {
      const now = Date.now();
      writeFileSync(
        paths.manifest,
        encodeStateFile(MANIFEST_FORMAT, {
          deployment,
          launcher: { pid: await deadPid(), token: "tok", host: hostname() },
          ranks: [{ rank: 0, localRank: 0, host: "local", pid: tail.pid, pgid: tail.pid }],
          worldSize: 1,
          argv: ["python3", "train.py"],
          startedAt: now - 60_000,
        }),
      );
      writeFileSync(
        paths.marker(0),
        encodeStateFile(MARKER_FORMAT, {
          deployment,
          rank: 0,
          pid: tail.pid,
          phase: "ready",
          startedAt: now - 60_000,
          heartbeatAt: now - 50_000,
          active: 0,
          epoch: 0,
        }),
      );
      const status = await startBaton(["status", "--state-dir", dir, "--json"]).exit;
      expect(JSON.parse(status.stdout).deployments[0].ranks[0]).toMatchObject({
        pid: tail.pid,
        alive: false,
        phase: "reused",
      });
      const reaped = await startBaton(["reap", "--state-dir", dir, "--grace-ms", "200"]).exit;
      expect(reaped.stdout).toMatch(/reaped \(launcher pid \d+ is gone\); verified/);
      expect(reaped.code).toBe(0);
      expect(alive(tail.pid)).toBe(true);
    } finally {
      procs.signal(tail.pid, "SIGKILL");
      await tail.exited;
    }
  }, 60_000);

  it("without Slurm's commands on the PATH, reaps the rank groups, keeps a dead run's batch script and exits 0; with them, cancels its allocations", async () => {
    const dir = tempDir();
    const bin = tempDir("baton-reap-path-");
    const dead = await deadPid();
    // A `baton run --slurm` killed on this host: its secret and its pool's batch script.
    const run = `run-aa11-${dead}@${hostname().replace(/[^A-Za-z0-9._-]/g, "_")}`;
    const script = join(dir, `${run}.baton-0000dead.sbatch`);
    writeFileSync(join(dir, `${run}.secret`), "x", { mode: 0o600 });
    writeFileSync(script, "#!/bin/sh\n", { mode: 0o700 });
    // And a deployment whose launcher died.
    const paths = deploymentPaths(dir, "train");
    mkdirSync(paths.dir);
    writeFileSync(
      paths.manifest,
      encodeStateFile(MANIFEST_FORMAT, {
        deployment: "train",
        launcher: { pid: dead, token: "tok", host: hostname() },
        ranks: [],
        worldSize: 1,
        argv: ["python3", "train.py"],
        startedAt: Date.now() - 60_000,
      }),
    );

    const without = await startBaton(["reap", "--state-dir", dir], { env: { PATH: bin } }).exit;
    // It exited 1, as for a failure, which no reap on this machine could have done better.
    expect(without.code).toBe(0);
    const lines = without.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^train: reaped \(launcher pid \d+ is gone\)/);
    expect(lines[1]).toBe(
      `Slurm pool baton-0000dead of dead run ${run}: allocations not looked for, as Slurm's commands (squeue, scancel) are not on this machine's PATH; any still queued end by themselves once they start (their workers cannot reach the dead run); to cancel them sooner, run \`scancel -n baton-0000dead\` where Slurm is, or baton reap on this host with Slurm's commands on the PATH (the batch script naming the pool stays for it: ${script})`,
    );
    expect(lines).toHaveLength(2);
    expect(existsSync(paths.manifest)).toBe(false);
    expect(readdirSync(dir).filter((name) => name.startsWith("run-"))).toEqual([
      `${run}.baton-0000dead.sbatch`,
    ]);

    // Slurm's commands on the PATH (stand-ins: one allocation of the pool still running).
    const cancelled = join(bin, "cancelled");
    writeFileSync(join(bin, "squeue"), "#!/bin/sh\necho '4242|RUNNING|None'\n", { mode: 0o755 });
    writeFileSync(join(bin, "scancel"), `#!/bin/sh\necho "$@" >> ${cancelled}\n`, {
      mode: 0o755,
    });
    const withSlurm = await startBaton(["reap", "--state-dir", dir], { env: { PATH: bin } }).exit;
    expect(withSlurm.code).toBe(0);
    expect(withSlurm.stdout).toBe(
      `Slurm pool baton-0000dead of dead run ${run}: cancelled its allocation 4242\n`,
    );
    expect(readFileSync(cancelled, "utf8")).toBe("4242\n");
    expect(existsSync(script)).toBe(false);
  }, 60_000);
});
