/**
 * The example ranks — examples/ranks/rank.mjs on baton's Node rank library, and
 * examples/ranks/rank.py on Python's standard library — as real processes, with the rank
 * environment set by hand in a temp state dir and a stand-in "launcher" process the test
 * starts and kills. Every process a test starts is SIGKILLed by pid in afterEach.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { MARKER_FORMAT, type Marker } from "../../src/rank/markerFormat.ts";
import { parseStateFile } from "../../src/rank/stateFile.ts";
import { cancelFile } from "../../src/runtime/cancelFile.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcExit, ProcHandle } from "../../src/runtime/ports.ts";
import { within } from "../fixtures/within.ts";

const EXAMPLES = fileURLToPath(new URL("../../examples/ranks/", import.meta.url));
const DEP = "dep-itest0000000";
const procs = nodeProcs();
const files = nodeFiles();

const started = new Set<ProcHandle>();
const tempDirs: string[] = [];
const timers: NodeJS.Timeout[] = [];

afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  const left = [...started];
  started.clear();
  for (const handle of left) procs.signal(handle.pid, "SIGKILL");
  await Promise.all(left.map((handle) => handle.exited));
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

function spawn(argv: [string, ...string[]], env?: Record<string, string>, logFile?: string) {
  const handle = procs.spawn({ argv, env, logFile });
  started.add(handle);
  void handle.exited.then(() => started.delete(handle));
  return handle;
}

const RANKS = {
  node: (args: string[]): [string, ...string[]] => [
    process.execPath,
    join(EXAMPLES, "rank.mjs"),
    ...args,
  ],
  python: (args: string[]): [string, ...string[]] => [
    "/usr/bin/python3",
    join(EXAMPLES, "rank.py"),
    ...args,
  ],
};

describe.each(Object.entries(RANKS))("the %s example rank", (_, command) => {
  /** A state dir, a stand-in launcher, and one rank (rank 1 of 2) started against them. */
  async function launch(
    args: string[],
    options: { leaseStaleMs?: number; prepare?: (stateDir: string) => Promise<void> } = {},
  ) {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-rank-it-"));
    tempDirs.push(stateDir);
    const paths = deploymentPaths(stateDir, DEP);
    await files.mkdirp(paths.dir);
    await options.prepare?.(stateDir);
    const launcher = spawn(["sleep", "120"]);
    const log = join(stateDir, "rank-1.out");
    const rank = spawn(
      command(["--watch-ms", "100", ...args]),
      {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        RANK: "1",
        WORLD_SIZE: "2",
        LOCAL_RANK: "1",
        LOCAL_WORLD_SIZE: "2",
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: "29500",
        BATON_DEPLOYMENT: DEP,
        BATON_STATE_DIR: stateDir,
        BATON_LAUNCHER_PID: String(launcher.pid),
        BATON_MARKER_HEARTBEAT_MS: "200",
        BATON_LEASE_STALE_MS: String(options.leaseStaleMs ?? 60_000),
      },
      log,
    );
    const marker = async (): Promise<Marker | undefined> => {
      const text = await files.read(paths.marker(1));
      return text === undefined ? undefined : parseStateFile(MARKER_FORMAT, text, paths.marker(1));
    };
    const output = async () => (await files.read(log)) ?? "";
    const exit = (what: string): Promise<ProcExit> =>
      within(rank.exited, 15_000, `${what}: the rank's exit (log: see ${log})`);
    return { stateDir, paths, launcher, rank, marker, output, exit };
  }

  it("writes its marker, becomes ready and heartbeats", async () => {
    const r = await launch(["--load-ms", "300"]);
    await vi.waitFor(async () => expect((await r.marker())?.phase).toBe("loading"), {
      timeout: 15_000,
      interval: 20,
    });
    const ready = await vi.waitFor(
      async () => {
        const marker = await r.marker();
        expect(marker?.phase).toBe("ready");
        return marker as Marker;
      },
      { timeout: 15_000, interval: 20 },
    );
    expect(ready).toMatchObject({ deployment: DEP, rank: 1, pid: r.rank.pid, active: 0, epoch: 0 });
    await vi.waitFor(
      async () => expect((await r.marker())?.heartbeatAt).toBeGreaterThan(ready.heartbeatAt),
      { timeout: 5_000, interval: 50 },
    );
    expect((await stat(r.paths.marker(1))).mode & 0o777).toBe(0o600);
  });

  it("applies a cancel epoch once and acks it with its active count", async () => {
    const r = await launch(["--hold", "3", "--step-ms", "20"]);
    await vi.waitFor(async () => expect((await r.marker())?.phase).toBe("ready"), {
      timeout: 15_000,
      interval: 20,
    });
    expect((await r.marker())?.active).toBe(3);
    const cancels = cancelFile({
      files,
      clock: nodeClock(),
      stateDir: r.stateDir,
      deployment: DEP,
    });
    const { epoch } = await cancels.write({ scope: "requests", ids: ["r1-2"], reason: "test" });
    await vi.waitFor(
      async () => expect((await cancels.evidence(epoch, [1]))[0]?.applied).toBe(true),
      { timeout: 10_000, interval: 20 },
    );
    const ack = JSON.parse(await readFile(r.paths.ack(1), "utf8"));
    expect(ack).toMatchObject({
      format: "baton.ack/1",
      deployment: DEP,
      rank: 1,
      epoch,
      active: 2,
    });
    // Many more steps later, the epoch has still been applied exactly once.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await r.output()).match(/applied cancel epoch/g)).toHaveLength(1);
    expect(await r.marker()).toMatchObject({ epoch, active: 2 });
    const [evidence] = await cancels.evidence(epoch, [1]);
    expect(evidence).toMatchObject({ applied: true, active: 2, phase: "ready" });
  });

  it("takes a cancel file present at start as a watermark and ignores another deployment's", async () => {
    let watermark = 0;
    const r = await launch(["--hold", "1", "--step-ms", "20"], {
      async prepare(stateDir) {
        const cancels = cancelFile({ files, clock: nodeClock(), stateDir, deployment: DEP });
        watermark = (await cancels.write({ scope: "all", reason: "before the rank" })).epoch;
      },
    });
    await vi.waitFor(
      async () => expect(await r.marker()).toMatchObject({ phase: "ready", epoch: watermark }),
      { timeout: 15_000, interval: 20 },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await r.marker()).toMatchObject({ active: 1, epoch: watermark });
    // Another deployment's file, even with a larger epoch, is ignored.
    await files.writeAtomic(
      r.paths.cancel,
      JSON.stringify({
        format: "baton.cancel/1",
        deployment: "dep-someoneelse0",
        epoch: watermark + 10,
        scope: "all",
        ids: [],
        reason: "not ours",
      }),
    );
    await vi.waitFor(async () => expect(await r.output()).toMatch(/dep-someoneelse0/), {
      timeout: 5_000,
      interval: 20,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await r.marker()).toMatchObject({ active: 1, epoch: watermark });
    expect(await r.output()).not.toMatch(/applied cancel epoch/);
    expect(await files.read(r.paths.ack(1))).toBeUndefined();
  });

  it("exits when its launcher dies", async () => {
    const r = await launch([]);
    await vi.waitFor(async () => expect((await r.marker())?.phase).toBe("ready"), {
      timeout: 15_000,
      interval: 20,
    });
    procs.signal(r.launcher.pid, "SIGKILL");
    const exit = await r.exit("after the launcher was killed");
    expect(exit.code).toBe(1);
    expect(await r.output()).toMatch(new RegExp(`launcher pid ${r.launcher.pid} is gone`));
    expect((await r.marker())?.phase).toBe("exiting");
  });

  it("exits when the lease goes stale, not while it is renewed", async () => {
    const r = await launch([], { leaseStaleMs: 60_000 });
    const writeLease = () =>
      files.writeAtomic(
        r.paths.lease,
        JSON.stringify({
          format: "baton.lease/1",
          deployment: DEP,
          pid: r.launcher.pid,
          token: "t",
          renewedAt: Date.now(),
          staleAfterMs: 2_000,
        }),
      );
    await writeLease();
    timers.push(setInterval(() => void writeLease(), 200));
    await vi.waitFor(async () => expect((await r.marker())?.phase).toBe("ready"), {
      timeout: 15_000,
      interval: 20,
    });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(started.has(r.rank)).toBe(true);
    clearInterval(timers.pop());
    const exit = await r.exit("after the lease stopped being renewed");
    expect(exit.code).toBe(1);
    expect(await r.output()).toMatch(/lease was last renewed \d+ ms ago \(stale after 2000 ms\)/);
  });

  it("warns about a heartbeat it cannot write and keeps running, leaving no temp file behind", async () => {
    const r = await launch(["--step-ms", "20"]);
    await vi.waitFor(async () => expect((await r.marker())?.phase).toBe("ready"), {
      timeout: 15_000,
      interval: 20,
    });
    const beat = (await r.marker())?.heartbeatAt ?? 0;
    // A directory where the marker goes: every rename over it fails, as root too.
    await vi.waitFor(
      async () => {
        await rm(r.paths.marker(1), { force: true });
        await mkdir(r.paths.marker(1));
      },
      { timeout: 5_000, interval: 5 },
    );
    await vi.waitFor(async () => expect(await r.output()).toMatch(/cannot write the marker/), {
      timeout: 10_000,
      interval: 50,
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(started.has(r.rank)).toBe(true);
    expect((await readdir(r.paths.dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
    await rm(r.paths.marker(1), { recursive: true });
    await vi.waitFor(async () => expect((await r.marker())?.heartbeatAt).toBeGreaterThan(beat), {
      timeout: 5_000,
      interval: 50,
    });
    expect((await r.marker())?.phase).toBe("ready");
  });

  it("exits with the requested code at --fail-at", async () => {
    const r = await launch(["--fail-at", "2", "--exit-code", "7", "--step-ms", "10"]);
    expect((await r.exit("failing at step 2")).code).toBe(7);
    expect(await r.output()).toMatch(/failing at step 2/);
  });
});
