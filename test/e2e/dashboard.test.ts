/**
 * `baton run --ui` and `--ui-keep` as a user runs them: the command prints the dashboard's
 * address, closes it with the run by default (saying so), keeps serving the finished run with
 * `--ui-keep` until Ctrl-C, shows a rank job's group run by a worker process; `baton launch
 * --ui` the same for its group; and `baton viz`
 * prints a machine's diagram. Children (and ranks) still running when a test ends are killed
 * by pid.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { freePort } from "../../src/runtime/freePort.ts";
import type { DashboardState, GroupView } from "../../src/viz/dashboardModel.ts";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { cleanUpRanks, procs, stray } from "../fixtures/rankStrays.ts";
import { stderrMatches } from "../fixtures/stderrMatches.ts";

const GRAPH = "test/fixtures/counted.graph.ts";
const URL_LINE = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/)/;
const stores: string[] = [];
/** Workers of ranks seen on the dashboard, sockets opened and gates to open at the end. */
const workers: number[] = [];
const sockets: WebSocket[] = [];
const gates: string[] = [];

afterEach(async () => {
  for (const gate of gates.splice(0)) writeFileSync(gate, "");
  for (const ws of sockets.splice(0)) ws.terminate();
  await stopBatons();
  await cleanUpRanks();
  for (const pid of workers.splice(0)) {
    const info = procs.inspect(pid);
    if (info && info.state !== "zombie" && info.argv.includes("worker")) {
      procs.signal(pid, "SIGKILL");
    }
  }
});
afterAll(() => {
  for (const dir of stores.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function store(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-ui-store-"));
  stores.push(dir);
  return dir;
}

/** The first message the dashboard's socket sends: the snapshot. */
function snapshotOf(url: string): Promise<{ state: { finished: boolean; total: number } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}ws`);
    ws.once("message", (data) => {
      resolve(JSON.parse(String(data)));
      ws.terminate();
    });
    ws.once("error", reject);
  });
}

describe("baton run --ui", { timeout: 60_000 }, () => {
  it("prints the dashboard's address, closes it with the run and says so last, on stderr", async () => {
    const baton = startBaton([
      "run",
      GRAPH,
      "--in-process",
      "--workers",
      "2",
      "--ui",
      "--json",
      "--store",
      store(),
    ]);
    const result = await baton.exit;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(URL_LINE);
    expect(result.stderr).toMatch(
      /\ndashboard: closed with the run; --ui-keep keeps it open after the run\n$/,
    );
    expect(JSON.parse(result.stdout).ok).toBe(true);
  });

  it("keeps serving the finished run with --ui-keep until Ctrl-C", async () => {
    const baton = startBaton([
      "run",
      GRAPH,
      "--in-process",
      "--workers",
      "2",
      "--ui",
      "--ui-keep",
      "--store",
      store(),
    ]);
    await stderrMatches(baton.stderr, /shows the finished run/);
    const url = URL_LINE.exec(baton.stderr())![1]!;
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>baton dashboard</title>");
    const { state } = await snapshotOf(url);
    expect(state.finished).toBe(true);
    expect(state.total).toBeGreaterThan(0);

    baton.child.kill("SIGINT");
    const result = await baton.exit;
    expect(result.code).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
    expect(result.stderr).not.toContain("closed with the run");
  });
});

/**
 * The page's view of a dashboard over its socket: the snapshot, then every diff applied as
 * the page applies it (`src/viz/page/dashboard.js`); `until` waits for a condition on it.
 */
function follow(url: string): {
  until(what: string, ok: (s: DashboardState) => boolean): Promise<DashboardState>;
} {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}ws`);
  sockets.push(ws);
  let state: DashboardState | undefined;
  const waiting = new Set<() => void>();
  ws.on("message", (data) => {
    const message = JSON.parse(String(data));
    if (message.type === "snapshot") state = message.state;
    else if (state) {
      const diff = message.diff;
      Object.assign(state, { finished: diff.finished, ok: diff.ok, counts: diff.counts });
      if (diff.run !== undefined) state.run = diff.run;
      for (const [id, group] of Object.entries(diff.groups ?? {})) {
        state.groups[id] = group as GroupView;
      }
      Object.assign(state.charts, diff.charts);
    }
    for (const wake of waiting) wake();
  });
  return {
    until: (what, ok) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`the dashboard never showed ${what}: ${JSON.stringify(state?.groups)}`));
        }, 45_000);
        const check = () => {
          if (state === undefined || !ok(state)) return;
          clearTimeout(timer);
          waiting.delete(check);
          resolve(state);
        };
        waiting.add(check);
        check();
      }),
  };
}

describe("baton run --ui with a rank job", { timeout: 90_000 }, () => {
  it("shows the group and its ranks' phases as a worker process reports them, on their machines' charts", async () => {
    const dir = store();
    const gate = join(dir, "gate");
    gates.push(gate);
    const port = await freePort();
    const baton = startBaton(
      [
        "run",
        "test/fixtures/gatedRanks.graph.ts",
        "--workers",
        "1",
        "--ui",
        "--ui-port",
        String(port),
        "--ui-keep",
        "--store",
        store(),
      ],
      { env: { BATON_TEST_STATE_DIR: join(dir, "state"), BATON_TEST_GATE: gate } },
    );
    const url = (await stderrMatches(baton.stderr, URL_LINE))[1]!;
    expect(url.startsWith(`http://127.0.0.1:${port}/`)).toBe(true);
    const html = await (await fetch(url)).text();
    expect(html).toContain('id="chart"');
    const page = follow(url);
    const only = (s: DashboardState) => Object.values(s.groups)[0];
    /** Whether `machine`'s chart, as the page got it, has a box for `state` (what it highlights). */
    const charted = (s: DashboardState, machine: string, state: string) =>
      s.charts[machine]?.states.some((box) => box.id === `${machine}.${state}`) === true;
    const ready = only(
      await page.until("both ranks ready", (s) => {
        const group = only(s);
        return (
          group?.state === "running" && ["0", "1"].every((r) => group.ranks[r]?.phase === "ready")
        );
      }),
    )!;
    const pids = ["0", "1"].map((r) => ready.ranks[r]!.pid!);
    for (const pid of pids) stray(pid, ready.id);
    const live = await page.until("the group's and the rank's charts", (s) => "rank" in s.charts);
    expect(charted(live, "group", "running")).toBe(true);
    expect(charted(live, "rank", "ready")).toBe(true);
    expect(ready).toMatchObject({ worldSize: 2, job: expect.any(String) });
    // The group runs in the worker process, not in the process serving the dashboard.
    const launcher = procs.environ(pids[0]!)?.BATON_LAUNCHER_PID;
    expect(Number(launcher)).toBeGreaterThan(1);
    expect(launcher).not.toBe(String(baton.child.pid));
    workers.push(Number(launcher));

    writeFileSync(gate, "");
    const end = await page.until(
      "the group stopped",
      (s) => s.finished && only(s)?.state === "stopped",
    );
    expect(end.ok).toBe(true);
    expect(only(end)!.ranks).toEqual({
      "0": { phase: "exited", pid: pids[0], code: 0 },
      "1": { phase: "exited", pid: pids[1], code: 0 },
    });
    // The worker's teardown of the ranks, on the teardown machine's chart.
    expect(only(end)!.teardown).toBe("verified");
    expect(charted(end, "teardown", "verified")).toBe(true);
    expect(charted(end, "rank", "exited") && charted(end, "group", "stopped")).toBe(true);
    await stderrMatches(baton.stderr, /shows the finished run/);
    baton.child.kill("SIGINT");
    expect((await baton.exit).code).toBe(0);
  });
});

describe("baton launch --ui", { timeout: 90_000 }, () => {
  it("shows the group, its ranks and its teardown on their charts, and closes with the launch", async () => {
    const dir = store();
    const gate = join(dir, "gate");
    gates.push(gate);
    const port = await freePort();
    const baton = startBaton(
      [
        "launch",
        "--world",
        "2",
        "--state-dir",
        join(dir, "state"),
        "--ui",
        "--ui-port",
        String(port),
        "--",
        process.execPath,
        "test/fixtures/gatedRank.mjs",
      ],
      { env: { GATE_FILE: gate } },
    );
    const url = (await stderrMatches(baton.stderr, URL_LINE))[1]!;
    expect(url.startsWith(`http://127.0.0.1:${port}/`)).toBe(true);
    expect(await (await fetch(url)).text()).toContain('id="chart"');
    const page = follow(url);
    const only = (s: DashboardState) => Object.values(s.groups)[0];
    const ready = await page.until("both ranks ready, and the charts", (s) => {
      const group = only(s);
      return (
        group?.state === "running" &&
        ["0", "1"].every((r) => group.ranks[r]?.phase === "ready") &&
        "rank" in s.charts
      );
    });
    const group = only(ready)!;
    for (const rank of ["0", "1"]) stray(group.ranks[rank]!.pid!, group.id);
    // No job launched it: the page names the launch after its deployment.
    expect(group.job).toBeUndefined();
    expect(ready.run).toBe(group.id);
    expect(Object.keys(ready.charts).sort()).toEqual(["group", "rank"]);

    writeFileSync(gate, "");
    const end = await page.until(
      "the launch finished",
      (s) => s.finished && only(s)?.state === "stopped",
    );
    expect(end.ok).toBe(true);
    expect(only(end)!.teardown).toBe("verified");
    expect(end.charts.teardown?.states.some((s) => s.id === "teardown.verified")).toBe(true);
    const result = await baton.exit;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /\ndashboard: closed with the launch; --ui-keep keeps it open after the launch\n$/,
    );
    await expect(fetch(url)).rejects.toThrow();
  });

  it("keeps serving the ended launch with --ui-keep until Ctrl-C", async () => {
    const baton = startBaton([
      "launch",
      "--world",
      "2",
      "--state-dir",
      join(store(), "state"),
      "--ui",
      "--ui-keep",
      "--",
      "true",
    ]);
    await stderrMatches(baton.stderr, /shows the finished launch; Ctrl-C to exit\n/);
    const url = URL_LINE.exec(baton.stderr())![1]!;
    expect(baton.stderr()).toContain("baton launch: every rank exited 0");
    const page = follow(url);
    const end = await page.until("the ended group", (s) => s.finished);
    expect(end.ok).toBe(true);
    expect(Object.values(end.groups)[0]?.state).toBe("stopped");
    // The launch has ended, and its dashboard still answers.
    expect((await fetch(url)).status).toBe(200);
    expect(baton.child.exitCode).toBeNull();

    process.kill(baton.child.pid!, "SIGINT");
    const result = await baton.exit;
    expect(result.code).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
    expect(result.stderr).not.toContain("closed with the launch");
  });

  it("refuses --ui-port and --ui-keep without --ui, and a bad launch after --ui leaves no dashboard open", async () => {
    for (const flag of ["--ui-port=0", "--ui-keep"]) {
      const alone = await startBaton(["launch", "--world", "1", flag, "--", "true"]).exit;
      expect(alone.code).toBe(2);
      expect(alone.stderr).toBe(
        `baton launch: ${flag.split("=")[0]} goes with --ui, which starts the dashboard: add --ui, or leave ${flag.split("=")[0]} out [CONFIG]\n`,
      );
    }
    const state = join(store(), "state");
    const bad = [
      "launch",
      "--world",
      "1",
      "--ui",
      "--state-dir",
      state,
      "--name",
      "a/b",
      "--",
      "true",
    ];
    const refused = await startBaton(bad).exit;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/dashboard: http/);
  });
});

describe("baton viz", { timeout: 30_000 }, () => {
  it("prints a machine's Mermaid diagram", async () => {
    const result = await startBaton(["viz", "connection"]).exit;
    expect(result.code).toBe(0);
    expect(result.stdout.split("\n")[0]).toBe("stateDiagram-v2");
    expect(result.stdout).toContain("handshaking --> registered : HELLO");
  });
});
