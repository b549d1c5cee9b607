/**
 * The dashboard in a real headless Chromium (Debian's, driven by playwright-core): the page
 * follows a live run (in-process workers, a graph held open by the test until it has
 * looked), its counts match the run's result at the end, selecting an actor draws its
 * state chart with the current state highlighted, a rank job's group shows its ranks'
 * phases as they change, a page baton stops serving says why, and a wrong or missing token
 * gets no data. Screenshots go to
 * test-artifacts/. Rank processes still running when a test ends are killed by pid.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page, type Response } from "playwright-core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AnyStateNode } from "xstate";
import { recordSimulation } from "../../src/cli/simDashboard.ts";
import { createEngine, job } from "../../src/index.ts";
import { machineCatalog } from "../../src/machines/catalog.ts";
import { connectionMachine } from "../../src/machines/connection.ts";
import { CLOSE_REASON, DashboardServer } from "../../src/runtime/dashboardServer.ts";
import { defineJobs } from "../../src/runtime/jobModule.ts";
import { simulate } from "../../src/sim/simulate.ts";
import { chartLayout } from "../../src/viz/chartLayout.ts";
import { replayTo } from "../../src/viz/dashboardModel.ts";
import { stateChart } from "../../src/viz/stateChart.ts";
import { cleanUpRanks, stray, tempDir } from "../fixtures/rankStrays.ts";
import { startTcpProxy, type TcpProxy } from "../fixtures/tcpProxy.ts";

/** The states of a machine below `node`, at every depth: one chart box each. */
function stateCount(node: AnyStateNode): number {
  return Object.values(node.states).reduce((count, child) => count + 1 + stateCount(child), 0);
}

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const ARTIFACTS = new URL("../../test-artifacts/", import.meta.url);
const GATED_RANK = new URL("../fixtures/gatedRank.mjs", import.meta.url).pathname;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** 12 fetches → 4 parses → 1 report, one parse failing (its report is skipped), and a gate. */
function graph() {
  const fetches = Array.from({ length: 12 }, (_, i) => job("fetch", i));
  const parses = [0, 1, 2, 3].map((p) =>
    job("parse", p, { after: fetches.filter((_, i) => i % 4 === p), retries: 0 }),
  );
  const report = job("report", null, { after: parses });
  const gate = job("gate", null);
  return [...fetches, ...parses, report, gate];
}

/**
 * The texts of `machine`'s drawn chart wider than the room its layout kept for them (a
 * state's name inside its box or its title's place, a label in the place kept free for it),
 * as measured by the browser's font (its length, ending where its box ends: Chromium's box
 * of a text starts a pixel before it), with half a pixel of slack.
 */
async function outsideRooms(page: Page, machine: string): Promise<string[]> {
  await page.waitForFunction(
    (m) => document.querySelector("#chart")?.getAttribute("data-machine") === m,
    machine,
  );
  const layout = chartLayout(stateChart(machineCatalog[machine as keyof typeof machineCatalog]));
  const rooms = [
    ...layout.states.map((s) =>
      s.type === "compound" || s.type === "parallel"
        ? { what: s.key, from: s.x + 8, to: s.x + 8 + s.room }
        : { what: s.key, from: s.x + s.w / 2 - s.room / 2, to: s.x + s.w / 2 + s.room / 2 },
    ),
    ...layout.edges.map((e) => {
      const from = e.anchor === "middle" ? e.labelX - e.room / 2 : e.labelX;
      return { what: e.text, from, to: from + e.room };
    }),
  ];
  return page.evaluate((rooms) => {
    const texts = [
      ...document.querySelectorAll("#chart g.state text"),
      ...document.querySelectorAll("#chart text.edge-label"),
    ] as SVGTextElement[];
    if (texts.length !== rooms.length) return [`${texts.length} texts for ${rooms.length} rooms`];
    return rooms.flatMap((room, i) => {
      const box = texts[i]!.getBBox();
      const to = box.x + box.width;
      const from = to - texts[i]!.getComputedTextLength();
      const inside = from >= room.from - 0.5 && to <= room.to + 0.5;
      const drawn = `"${texts[i]!.firstChild?.textContent}" at ${from.toFixed(1)} to ${to.toFixed(1)}`;
      return inside ? [] : [`${drawn}, room ${room.from.toFixed(1)} to ${room.to.toFixed(1)}`];
    });
  }, rooms);
}

/** The states the chart highlights, once it has drawn some. */
async function activeStates(page: Page): Promise<string[]> {
  await page.waitForSelector("#chart g.state.active");
  return page.$$eval("#chart g.state.active", (gs) =>
    gs.map((g) => g.getAttribute("data-state") ?? ""),
  );
}

async function text(page: Page, selector: string): Promise<string> {
  return (await page.textContent(selector)) ?? "";
}

describe("dashboard in Chromium", { timeout: 60_000 }, () => {
  /** One Chromium for the file, started by the first test that opens a page. */
  let browser: Browser | undefined;
  /** The pages a test opened, each in a browser context of its own, closed after it. */
  const pages: Page[] = [];
  let server: DashboardServer | undefined;
  const proxies: TcpProxy[] = [];
  afterEach(async () => {
    for (const page of pages.splice(0)) await page.close();
    await server?.close();
    for (const proxy of proxies.splice(0)) await proxy.close();
    server = undefined;
    await cleanUpRanks();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /**
   * A page in a fresh browser context (no cookies, cache or storage of another test's), of
   * the file's one Chromium: starting Chromium for each test cost a second or more each.
   */
  async function newPage(options?: Parameters<Browser["newPage"]>[0]): Promise<Page> {
    browser ??= await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
    const page = await browser.newPage(options);
    pages.push(page);
    return page;
  }

  /** A page of `dashboard` through a TCP proxy the test can cut (`proxy.reset()`). */
  async function pageThroughProxy(
    dashboard: DashboardServer,
  ): Promise<{ page: Page; proxy: TcpProxy }> {
    const proxy = await startTcpProxy({
      host: "127.0.0.1",
      port: Number(new URL(dashboard.url).port),
    });
    proxies.push(proxy);
    const page = await newPage();
    const through = new URL(dashboard.url);
    through.port = new URL(proxy.address).port;
    await page.goto(through.href);
    return { page, proxy };
  }

  it("follows a live run, matches its result, and charts the selected actor", async () => {
    let open!: () => void;
    const gateOpen = new Promise<void>((resolve) => {
      open = resolve;
    });
    server = await DashboardServer.start();
    const engine = createEngine({
      jobs: {
        fetch: async (n: number) => {
          await sleep(20 + n * 5);
          return n;
        },
        parse: (p: number) => {
          if (p === 3) throw new Error("parse 3 fails");
          return p;
        },
        report: () => "done",
        gate: () => gateOpen,
      },
      workers: 3,
      inspect: server.inspect,
    });
    const run = engine.run(graph());
    server.watch(run);
    const page = await newPage({ viewport: { width: 1280, height: 1100 } });
    const response = await page.goto(server.url);
    expect(response?.status()).toBe(200);

    // Live: the gate job holds the run open until the page has been looked at.
    await page.waitForFunction(() => document.querySelector("#status")?.textContent === "running");
    await page.waitForFunction(() => document.querySelectorAll("#graph circle").length === 18);
    expect(await text(page, "#total")).toBe("18");
    await page.waitForFunction(
      () => document.querySelector("#outcome-completed")?.textContent === "15",
    );
    expect(await text(page, "#count-running")).toBe("1");
    // The worker holding the gate says what it runs: the job's kind, then its id.
    const busy = page.locator("#actors tr", { hasText: "registered.busy" });
    expect(await busy.locator("td").last().textContent()).toMatch(/^gate [0-9a-f]{16}$/);
    await page.click('#actors tr[data-actor="coordinator"]');
    await page.waitForSelector('#chart g.state.active[data-state="coordinator.running"]');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({
      path: new URL("dashboard-live.png", ARTIFACTS).pathname,
      fullPage: true,
    });

    open();
    const result = await run;
    await page.waitForFunction(
      () => document.querySelector("#status")?.getAttribute("data-finished") === "true",
    );
    expect(result.counts).toMatchObject({ completed: 16, failed: 1, skipped: 1 });
    for (const outcome of ["completed", "failed", "skipped", "cancelled", "cached"] as const) {
      expect(await text(page, `#outcome-${outcome}`), outcome).toBe(String(result.counts[outcome]));
    }
    expect(await text(page, "#status")).toBe("finished: not ok");

    // The coordinator is done; a worker's connection is closed: each chart shows it.
    await page.waitForSelector('#chart g.state.active[data-state="coordinator.done"]');
    expect(await page.locator("#chart g.state.active").count()).toBe(1);
    const worker = page.locator('#actors tr[data-actor^="connection:"]').first();
    // A worker's row names its connection as the coordinator knows it, beside the worker.
    const conn = (await worker.getAttribute("data-actor"))!.slice("connection:".length);
    expect(await worker.locator("td").first().textContent()).toMatch(
      new RegExp(`^inproc-\\d \\(connection ${conn}\\)$`),
    );
    await worker.click();
    await page.waitForSelector('#chart g.state.active[data-state="connection.closed"]');
    expect(await page.locator("#chart g.state.active").count()).toBe(1);
    expect(await page.locator("#chart g.state").count()).toBe(stateCount(connectionMachine.root));
    expect(await text(page, "#chart-title")).toMatch(/\(connection\): closed$/);
    await page.screenshot({ path: new URL("dashboard.png", ARTIFACTS).pathname, fullPage: true });
  });

  it("shows a rank job's group and its ranks' phases as they change", async () => {
    const dir = tempDir("baton-dashboard-ranks-");
    const gate = join(dir, "gate");
    server = await DashboardServer.start();
    const jobs = defineJobs({
      train: {
        ranks: () => ({
          argv: [process.execPath, GATED_RANK],
          env: { GATE_FILE: gate },
          stateDir: dir,
          timeouts: { watchMs: 50 },
          teardown: { termGraceMs: 500 },
        }),
      },
    });
    const train = job("train", null, { ranks: 2 });
    const run = createEngine({ jobs, workers: 1, inspect: server.inspect }).run([train]);
    // However the test ends, the ranks are let go (and killed by pid in afterEach).
    const finished = run.then(
      (result) => result,
      (error: unknown) => error,
    );
    try {
      server.watch(run);
      const page = await newPage({ viewport: { width: 1280, height: 1100 } });
      await page.goto(server.url);

      // The gated ranks stay ready until the test opens the gate.
      const group = page.locator("#groups .group");
      for (const rank of [0, 1]) {
        await page.waitForSelector(
          `#groups .group[data-state="running"] .rank[data-rank="${rank}"][data-phase="ready"]`,
        );
      }
      const deployment = (await group.getAttribute("data-group")) ?? "";
      expect(deployment).toMatch(/^dep-[a-z0-9]{12}$/);
      const pids = await group
        .locator(".rank")
        .evaluateAll((spans) => spans.map((span) => Number(span.getAttribute("data-pid"))));
      for (const pid of pids) {
        expect(pid).toBeGreaterThan(1);
        stray(pid, deployment);
      }
      const title = await text(page, "#groups .group-title");
      expect(title).toMatch(new RegExp(`^${deployment} \\(job [\\w-]+\\): running, 2 ranks$`));
      // The group's chart, then rank 1's, each with its state highlighted.
      await page.click("#groups .group-title");
      expect(await activeStates(page)).toEqual(["group.running"]);
      expect(await text(page, "#chart-title")).toBe(`${deployment} (group): running`);
      await page.click('#groups .rank[data-rank="1"]');
      expect(await activeStates(page)).toEqual(["rank.ready"]);
      expect(await text(page, "#chart-title")).toBe(`rank 1 of ${deployment} (rank): ready`);
      expect(await page.$$eval("#handlers li", (items) => items.length)).toBeGreaterThan(0);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({
        path: new URL("dashboard-ranks-live.png", ARTIFACTS).pathname,
        fullPage: true,
      });

      writeFileSync(gate, "");
      const result = await run;
      expect(result.ok).toBe(true);
      const outcome = result.get(train);
      expect((outcome.value as { deployment: string }).deployment).toBe(deployment);
      expect(title).toContain(`(job ${outcome.id})`);
      await page.waitForFunction(
        () => document.querySelector("#status")?.getAttribute("data-finished") === "true",
      );
      await page.waitForSelector('#groups .group[data-state="stopped"]');
      expect(
        await group.locator(".rank").evaluateAll((spans) => spans.map((span) => span.textContent)),
      ).toEqual(pids.map((pid, rank) => `${rank}: exited (code 0) · pid ${pid}`));
      // The selected rank's chart followed it, without another click.
      expect(await activeStates(page)).toEqual(["rank.exited"]);
      // Its teardown, verified, on the teardown machine's chart.
      await page.click('#groups .teardown[data-teardown="verified"]');
      expect(await activeStates(page)).toEqual(["teardown.verified"]);
      await (await page.$("#chart-panel"))!.screenshot({
        path: new URL("dashboard-chart-teardown.png", ARTIFACTS).pathname,
      });
      await page.screenshot({
        path: new URL("dashboard-ranks.png", ARTIFACTS).pathname,
        fullPage: true,
      });
    } finally {
      writeFileSync(gate, "");
      await finished;
    }
  });

  it("replays a simulation step by step with a time slider", async () => {
    const { result, trace } = await recordSimulation(3, (hooks) =>
      simulate({ seed: 3, jobs: 30, workers: 3, ...hooks }),
    );
    expect(result.ok).toBe(true);
    server = await DashboardServer.start({ replay: trace });
    const page = await newPage({ viewport: { width: 1280, height: 1100 } });
    await page.goto(server.url);
    await page.waitForSelector("#replay:not([hidden])");
    const position = () => text(page, "#replay-position");
    await page.waitForFunction(() =>
      /^event 0 of /.test(document.querySelector("#replay-position")?.textContent ?? ""),
    );
    // Before its first event the run has not started: the page does not say it runs.
    expect(await text(page, "#status")).toBe("not started yet");

    await page.click("#last");
    await page.waitForFunction(
      (n) => document.querySelector("#replay-position")?.textContent?.startsWith(`event ${n} of`),
      trace.length,
    );
    expect(await text(page, "#outcome-completed")).toBe(String(result.counts!.completed));
    expect(result.ok).toBe(true);
    // The run may end not ok (its drawn faults failed jobs) while the seed passed: it says both.
    expect(await text(page, "#status")).toMatch(/^finished: (not )?ok · no invariant broken$/);
    // The seed's simulated rank groups are on the page too, as their last phases.
    const groups = Object.values(replayTo(trace, trace.length).snapshot().groups);
    expect(groups.length).toBeGreaterThan(0);
    for (const group of groups) expect(await text(page, "#groups")).toContain(group.id);

    const middle = Math.floor(trace.length / 2);
    await page.locator("#slider").fill(String(middle));
    await page.waitForFunction(
      (n) => document.querySelector("#replay-position")?.textContent?.startsWith(`event ${n} of`),
      middle,
    );
    const expected = replayTo(trace, middle).snapshot();
    expect(await text(page, "#outcome-completed")).toBe(String(expected.outcomes.completed));
    expect(await text(page, "#count-running")).toBe(String(expected.counts.running));

    await page.click("#forward");
    await page.waitForFunction(
      (n) => document.querySelector("#replay-position")?.textContent?.startsWith(`event ${n} of`),
      middle + 1,
    );
    expect(await position()).toContain(`t = ${trace[middle]!.at} ms`);
    await page.screenshot({
      path: new URL("dashboard-replay.png", ARTIFACTS).pathname,
      fullPage: true,
    });
  });

  it("shows a failed simulation's broken invariant from the step it broke on", async () => {
    const { result, trace } = await recordSimulation(2, (hooks) =>
      simulate({ seed: 2, jobs: 20, workers: 4, plantedBugs: ["release-lease-twice"], ...hooks }),
    );
    expect(result.violation?.invariant).toBe(1);
    server = await DashboardServer.start({ replay: trace });
    const page = await newPage({ viewport: { width: 1280, height: 1100 } });
    await page.goto(server.url);
    await page.waitForSelector("#to-violation:not([hidden])");
    expect(await page.isVisible("#violation")).toBe(false);
    // The step buttons and the slider stay where they are whatever the step's line says (the
    // broken invariant's is long), so that a user clicking ▶ again hits ▶ again.
    const controls = () =>
      page.$$eval(["#first", "#back", "#slider", "#forward", "#last"].join(","), (els) =>
        els.map((el) => {
          const box = el.getBoundingClientRect();
          return [box.x, box.y, box.width].map(Math.round);
        }),
      );
    const atStart = await controls();
    await page.click("#to-violation");
    await page.waitForSelector("#violation:not([hidden])");
    expect(await controls()).toEqual(atStart);
    expect(await text(page, "#violation")).toBe(
      `at t = ${result.virtualMs} ms: ${result.violation!.message}`,
    );
    expect(await text(page, "#status")).toBe("FAIL invariant 1");
    expect(await text(page, "#replay-position")).toContain("invariant 1 (");
    // The jobs and the workers its message names are marked, so a user sees which dot it means.
    const ringed = await page.$$eval("#graph circle.named", (dots) =>
      dots.map((dot) => dot.querySelector("title")?.textContent ?? ""),
    );
    expect(ringed.length).toBeGreaterThan(0);
    for (const title of ringed) {
      // Each named by kind and input, as the trace's grants name it, and by id.
      const [, kind, id] = /^(\w+) \{"i":\d+,.* \(([0-9a-f]{16})\): /.exec(title)!;
      expect(["a", "b"]).toContain(kind);
      expect(trace.some((t) => t.event.type === "job" && t.event.id === id)).toBe(true);
      expect(result.violation!.message).toContain(`job ${id}`);
      expect(title).toContain("(named by the broken invariant)");
    }
    const rows = await page.$$eval("#actors tr.named td:first-child", (cells) =>
      cells.map((cell) => cell.textContent ?? ""),
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(result.violation!.message).toContain(/^\S+ \(connection (\S+?)[,)]/.exec(row)![1]!);
    }
    await page.click("#back");
    await page.waitForSelector("#violation", { state: "hidden" });
    expect(await page.$$("#graph circle.named")).toHaveLength(0);
    await page.screenshot({
      path: new URL("dashboard-violation.png", ARTIFACTS).pathname,
      fullPage: true,
    });
  });

  it("runs the throughput chart on to the run's latest event while a long job finishes nothing", async () => {
    server = await DashboardServer.start();
    server.push(0, { type: "run.started", run: "long" });
    const jobs = ["quick", "long"].map((id) => ({
      id,
      kind: id,
      deps: [],
      state: "ready" as const,
    }));
    server.push(0, { type: "graph", jobs });
    server.push(1_500, { type: "job", id: "quick", kind: "quick", state: "completed" });
    server.push(2_000, { type: "job", id: "long", kind: "long", state: "running" });
    // 45 s on, the long job still runs: only its connection's pings keep coming.
    server.push(45_200, { type: "job", id: "long", kind: "long", state: "running" });
    const page = await newPage();
    await page.goto(server.url);
    await page.waitForFunction(() => document.querySelector("#throughput text") !== null);
    const labels = await page.$$eval("#throughput text", (nodes) =>
      nodes.map((n) => n.textContent),
    );
    expect(labels).toEqual(["peak 1/s", "0", "45.2 s"]);
    expect(await text(page, "#throughput-caption")).toBe("jobs finished per second");
    // The peak's bar (the quick job's second) stands under its label, not over it.
    const [label, bars] = await page.evaluate(() => {
      const svg = document.querySelector("#throughput") as SVGSVGElement;
      const box = (svg.querySelector("text") as SVGTextElement).getBBox();
      const tops = [...svg.querySelectorAll("rect.bar")]
        .filter((r) => Number(r.getAttribute("height")) > 0)
        .map((r) => Number(r.getAttribute("y")));
      return [box.y + box.height, tops];
    });
    expect(bars.length).toBe(1);
    for (const top of bars) expect(top).toBeGreaterThanOrEqual(label);
  });

  it("reconnects when its connection is cut while baton still serves it, and catches up", async () => {
    server = await DashboardServer.start();
    server.push(0, { type: "run.started", run: "cut" });
    server.push(0, {
      type: "graph",
      jobs: ["a", "b"].map((id) => ({ id, kind: "k", deps: [], state: "ready" as const })),
    });
    const { page, proxy } = await pageThroughProxy(server);
    await page.waitForFunction(() => document.querySelector("#status")?.textContent === "running");
    proxy.reset();
    await page.waitForFunction(() =>
      document.querySelector("#status")?.textContent?.startsWith("disconnected"),
    );
    // What happened while it was cut off reaches it once it is back.
    server.push(50, { type: "job", id: "a", kind: "k", state: "completed" });
    await page.waitForFunction(
      () => document.querySelector("#outcome-completed")?.textContent === "1",
      undefined,
      { timeout: 15_000 },
    );
    expect(await text(page, "#status")).toBe("running");
  });

  it("comes back to the replay's step it showed when its connection is cut", async () => {
    server = await DashboardServer.start({
      replay: [
        { at: 0, event: { type: "run.started", run: "cut" } },
        {
          at: 1,
          event: { type: "graph", jobs: [{ id: "a", kind: "k", deps: [], state: "ready" }] },
        },
        { at: 2, event: { type: "job", id: "a", kind: "k", state: "running" } },
        { at: 3, event: { type: "job", id: "a", kind: "k", state: "completed" } },
      ],
    });
    const { page, proxy } = await pageThroughProxy(server);
    const at = (n: number) =>
      page.waitForFunction(
        (n) => document.querySelector("#replay-position")?.textContent?.startsWith(`event ${n} of`),
        n,
        { timeout: 15_000 },
      );
    await at(0);
    await page.locator("#slider").fill("3");
    await at(3);
    proxy.reset();
    await page.waitForFunction(() =>
      document.querySelector("#status")?.textContent?.startsWith("disconnected"),
    );
    await page.waitForFunction(() => document.querySelector("#status")?.textContent === "running");
    await at(3);
    expect(await text(page, "#count-running")).toBe("1");
  });

  it("says why it stopped updating when baton stops serving it, after a finished run's outcome", async () => {
    for (const finished of [false, true]) {
      server = await DashboardServer.start();
      server.push(0, { type: "run.started", run: `finished-${finished}` });
      if (finished) server.push(10, { type: "run.finished", ok: true });
      const page = await newPage();
      await page.goto(server.url);
      const status = (s: string) =>
        page.waitForFunction((want) => document.querySelector("#status")?.textContent === want, s);
      await status(finished ? "finished: ok" : "running");
      await server.close();
      server = undefined;
      await status(finished ? `finished: ok · ${CLOSE_REASON}` : CLOSE_REASON);
    }
  });

  it("draws every machine's chart with no text over another text or a state, all inside the chart", async () => {
    server = await DashboardServer.start();
    for (const [name, machine] of Object.entries(machineCatalog)) {
      const chart = chartLayout(stateChart(machine));
      server.push(0, {
        type: "actor",
        id: name,
        machine: name,
        label: name,
        states: [],
        status: "active",
        chart,
      });
    }
    const page = await newPage({ viewport: { width: 1280, height: 1100 } });
    await page.goto(server.url);
    for (const name of Object.keys(machineCatalog)) {
      await page.click(`#actors tr[data-actor="${name}"]`);
      await page.waitForFunction(
        (n) => document.querySelector("#chart-title")?.textContent === `${n} (${n}): active`,
        name,
      );
      expect(await outsideRooms(page, name), name).toEqual([]);
      // What the page drew, measured by Chromium: every text and every state's box.
      const clashes = await page.evaluate(() => {
        const box = (el: Element) => (el as SVGGraphicsElement).getBBox();
        const texts = [...document.querySelectorAll("#chart text")].map((t) => ({
          what: t.firstChild?.textContent ?? "",
          at: box(t),
        }));
        const boxes = [...document.querySelectorAll("#chart g.state:not(.compound) > rect")].map(
          (rect) => ({ what: rect.parentElement?.dataset.state ?? "", at: box(rect) }),
        );
        const view = (document.querySelector("#chart") as SVGSVGElement).viewBox.baseVal;
        // Half a pixel of slack: the white halo around a label may touch what is next to it.
        const clash = (a: DOMRect, b: DOMRect) =>
          a.x + 0.5 < b.x + b.width &&
          b.x + 0.5 < a.x + a.width &&
          a.y + 0.5 < b.y + b.height &&
          b.y + 0.5 < a.y + a.height;
        const found: string[] = [];
        texts.forEach((t, i) => {
          for (const other of texts.slice(i + 1)) {
            if (clash(t.at, other.at)) found.push(`"${t.what}" over "${other.what}"`);
          }
          for (const state of boxes) {
            if (t.what !== state.what.split(".").at(-1) && clash(t.at, state.at)) {
              found.push(`"${t.what}" over state ${state.what}`);
            }
          }
          const inside =
            t.at.x >= view.x &&
            t.at.y >= view.y &&
            t.at.x + t.at.width <= view.x + view.width &&
            t.at.y + t.at.height <= view.y + view.height;
          if (!inside) found.push(`"${t.what}" outside the chart`);
        });
        return found;
      });
      expect(clashes, name).toEqual([]);
    }
    // A font wider than the layout's estimate (a serif one, bold) squeezes into the same room.
    await page.evaluate(() => {
      const chart = document.querySelector<SVGSVGElement>("#chart")!;
      chart.style.fontFamily = '"DejaVu Serif"';
      chart.style.fontWeight = "bold";
    });
    for (const name of Object.keys(machineCatalog)) {
      await page.click(
        `#actors tr[data-actor="${name === "connection" ? "group" : "connection"}"]`,
      );
      await page.click(`#actors tr[data-actor="${name}"]`);
      expect(await outsideRooms(page, name), `${name} in DejaVu Serif`).toEqual([]);
    }
    await page.click('#actors tr[data-actor="connection"]');
    await (await page.$("#chart-panel"))!.screenshot({
      path: new URL("dashboard-chart-connection.png", ARTIFACTS).pathname,
    });
  });

  it("lists what the selected actor handles in place, the machine-wide transitions first", async () => {
    server = await DashboardServer.start();
    for (const [machine, states] of [
      ["coordinator", ["coordinator.running"]],
      ["watchdog", ["watchdog.suspect"]],
    ] as const) {
      const chart = chartLayout(stateChart(machineCatalog[machine]));
      server.push(0, {
        type: "actor",
        id: machine,
        machine,
        label: machine,
        states: [...states],
        status: "active",
        chart,
      });
    }
    const page = await newPage();
    await page.goto(server.url);
    const handled = async (machine: string) => {
      await page.click(`#actors tr[data-actor="${machine}"]`);
      await page.waitForFunction(
        (m) => document.querySelector("#chart-title")?.textContent?.startsWith(m),
        machine,
      );
      return page.$$eval("#handlers li", (items) => items.map((li) => li.textContent));
    };
    const coordinator = await handled("coordinator");
    expect(coordinator[0]).toBe("in every state: always [timersRequested]");
    expect(coordinator).toContain("running: LEASE");
    // A machine-wide transition to a state is listed with where it goes.
    expect(await handled("watchdog")).toEqual([
      "in every state: STOP → stopped",
      "suspect: PROBE_FAILED",
    ]);
  });

  it("loads with every request it makes answered, its icon too, and no error in the console", async () => {
    server = await DashboardServer.start();
    server.push(0, { type: "run.started", run: "icon" });
    const page = await newPage();
    const problems: string[] = [];
    let icon: Response | undefined;
    // Without an icon of its own, Chromium asks for /favicon.ico, which has no token: its
    // 403 shows only as an error in the console.
    const iconOrError = new Promise<void>((resolve) => {
      page.on("console", (m) => {
        if (m.type() !== "error") return;
        problems.push(m.text());
        resolve();
      });
      page.on("response", (r) => {
        if (r.status() >= 400) problems.push(`${r.status()} ${new URL(r.url()).pathname}`);
        if (new URL(r.url()).pathname.endsWith("/favicon.svg")) {
          icon = r;
          resolve();
        }
      });
    });
    await page.goto(server.url);
    await page.waitForFunction(() => document.querySelector("#run-id")?.textContent === "icon");
    await iconOrError;
    expect(problems).toEqual([]);
    expect(icon?.status()).toBe(200);
    expect(icon?.headers()["content-type"]).toBe("image/svg+xml");
  });

  it("charts the coordinator on a page opened before the run started, as on one opened later", async () => {
    server = await DashboardServer.start();
    const page = await newPage();
    await page.goto(server.url);
    // Nothing runs yet, and the page does not say it does.
    await page.waitForFunction(
      () => document.querySelector("#status")?.textContent === "not started yet",
    );
    expect(await text(page, "#chart-title")).toBe("select an actor");
    const run = createEngine({
      jobs: { double: (n: number) => n * 2 },
      inspect: server.inspect,
    }).run([job("double", 21)]);
    server.watch(run);
    expect((await run).ok).toBe(true);
    await page.waitForSelector('#chart g.state.active[data-state="coordinator.done"]', {
      timeout: 10_000,
    });
    expect(await text(page, "#chart-title")).toBe("coordinator (coordinator): done");
  });

  it("says which workers were lost and why, where a normal close says closed", async () => {
    server = await DashboardServer.start();
    const worker = (id: string, label: string) => ({
      type: "actor" as const,
      id,
      label,
      machine: "connection",
    });
    for (const [id, label] of [
      ["connection:ws:1", "lost-one"],
      ["connection:ws:2", "done-one"],
      ["connection:ws:4", "timed-out"],
    ] as const) {
      server.push(0, {
        ...worker(id, label),
        states: ["connection.registered.idle"],
        status: "active",
      });
    }
    server.push(1, {
      ...worker("connection:ws:1", "lost-one"),
      states: ["connection.closed"],
      status: "done",
      closed: "1006 connection broke",
    });
    server.push(2, {
      ...worker("connection:ws:2", "done-one"),
      states: ["connection.closed"],
      status: "done",
    });
    // A busy worker on a job of a long kind, and a worker that timed out with a long reason.
    const id = "0123456789abcdef";
    server.push(3, {
      type: "graph",
      jobs: [{ id, kind: "tokenize-every-document", deps: [], state: "running" }],
    });
    server.push(4, {
      ...worker("connection:ws:3", "busy-worker-with-a-long-name"),
      states: ["connection.registered", "connection.registered.busy"],
      status: "active",
      job: id,
    });
    server.push(5, {
      ...worker("connection:ws:4", "timed-out"),
      states: ["connection.closed"],
      status: "done",
      closed: `4005: lease of job ${id} expired: the worker sent no heartbeat before the lease deadline`,
    });
    const page = await newPage();
    await page.goto(server.url);
    const state = (id: string) => page.locator(`#actors tr[data-actor="${id}"] td`).nth(2);
    await page.waitForSelector('#actors tr.done[data-actor="connection:ws:4"]');
    expect(await state("connection:ws:1").textContent()).toBe("closed1006 connection broke");
    expect(await state("connection:ws:1").locator(".why").textContent()).toBe(
      "1006 connection broke",
    );
    expect(await page.locator('#actors tr.lost[data-actor="connection:ws:1"]').count()).toBe(1);
    expect(await state("connection:ws:2").textContent()).toBe("closed");
    expect(await page.locator("#actors tr.lost").count()).toBe(2);
    // However long the reason, the page does not grow wider than the window.
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
    ).toBe(true);
    // Nor the table wider than its panel: the job column stays in sight, its text cut with "…"
    // (until an audit a long label pushed it past the panel's edge, to be scrolled to).
    const [panel, cells] = await page.evaluate(() => {
      const panel = document.querySelector("#workers-panel")!.getBoundingClientRect();
      const cells = [...document.querySelectorAll("#actors th, #actors td")].map(
        (cell) => cell.getBoundingClientRect().right,
      );
      return [panel.right, cells];
    });
    for (const right of cells) expect(right).toBeLessThanOrEqual(panel);
    expect(
      await page
        .locator('#actors tr[data-actor="connection:ws:3"] td')
        .nth(3)
        .getAttribute("title"),
    ).toBe(`tokenize-every-document ${id}`);
  });

  it("heads each column of the graph with its jobs' kinds, cut to the column, whole on hover", async () => {
    server = await DashboardServer.start();
    server.push(0, { type: "run.started", run: "kinds" });
    const node = (id: string, kind: string, deps: string[]) => ({
      id,
      kind,
      deps,
      state: "ready" as const,
    });
    server.push(0, {
      type: "graph",
      jobs: [
        node("f1", "fetch", []),
        node("g1", "gate", []),
        node("t1", "tokenize-every-document", ["f1"]),
        node("r1", "report", ["t1"]),
      ],
    });
    const page = await newPage();
    await page.goto(server.url);
    await page.waitForFunction(() => document.querySelectorAll("#graph circle").length === 4);
    const labels = await page.$$eval("#graph text.layer-label", (texts) =>
      (texts as SVGTextElement[]).map((t) => ({
        shown: t.firstChild?.textContent,
        whole: t.querySelector("title")?.textContent,
        width: t.getComputedTextLength(),
      })),
    );
    expect(labels.map((l) => l.whole)).toEqual([
      "fetch, gate",
      "tokenize-every-document",
      "report",
    ]);
    expect(labels.map((l) => l.shown)).toEqual([
      "fetch, gate",
      expect.stringMatching(/^tok.*…$/),
      "report",
    ]);
    // Each fits its column (70 px), so no heading runs into the next.
    for (const label of labels) expect(label.width).toBeLessThanOrEqual(64);
  });

  it("keeps a 100-job graph's headings at their size: tall columns wrap, a wide graph scrolls", async () => {
    server = await DashboardServer.start();
    server.push(0, { type: "run.started", run: "hundred" });
    // A simulated run's shape: 35 jobs in the first column, then chains 13 columns deep.
    const jobs = Array.from({ length: 100 }, (_, i) => ({
      id: `j${i}`,
      kind: i < 35 ? "fetch" : "step",
      deps: i < 35 ? [] : [`j${i < 40 ? i - 35 : i - 5}`],
      state: "ready" as const,
    }));
    server.push(0, { type: "graph", jobs });
    const page = await newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(server.url);
    await page.waitForFunction(() => document.querySelectorAll("#graph circle").length === 100);
    const drawn = await page.evaluate(() => {
      const svg = document.querySelector("#graph") as SVGSVGElement;
      const scroll = document.querySelector("#graph-scroll") as HTMLElement;
      const heading = svg.querySelector("text.layer-label") as SVGTextElement;
      return {
        scale: svg.getScreenCTM()!.a,
        headingPx: heading.getBoundingClientRect().height,
        svgHeight: svg.getBoundingClientRect().height,
        scrolls: scroll.scrollWidth > scroll.clientWidth,
      };
    });
    // Until the graph was laid out by graphLayout, its 35-job column made the drawing 800 units
    // tall, shrunk into 300 px: headings and dots at 0.37 of their size.
    expect(drawn.scale).toBe(1);
    expect(drawn.headingPx).toBeGreaterThanOrEqual(11);
    expect(drawn.svgHeight).toBeLessThanOrEqual(300);
    expect(drawn.scrolls).toBe(true);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: new URL("dashboard-graph-100.png", ARTIFACTS).pathname });
  });

  it("gives a wrong or missing token no page and no data", async () => {
    server = await DashboardServer.start();
    server.push(0, { type: "run.started", run: "secret-run-id" });
    const url = new URL(server.url);
    const page = await newPage();
    // The token with its last character changed: to "x", or to "y" for a token ending in "x"
    // (one in 64 did, and its path was the dashboard's own).
    const oneOff = url.pathname.replace(/.\/$/, (last) => (last === "x/" ? "y/" : "x/"));
    for (const path of ["/", "/not-the-token/", oneOff]) {
      const response = await page.goto(`${url.origin}${path}`);
      expect(response?.status(), path).toBe(403);
      expect(await page.content()).not.toContain("secret-run-id");
    }
    // From a page on the dashboard's own origin, a socket without the token gets nothing.
    const received = await page.evaluate(
      (ws) =>
        new Promise<string[]>((resolve) => {
          const messages: string[] = [];
          const socket = new WebSocket(ws);
          socket.onmessage = (m) => messages.push(String(m.data));
          socket.onerror = () => resolve(messages);
          socket.onclose = () => resolve(messages);
        }),
      `ws://${url.host}/wrong-token/ws`,
    );
    expect(received).toEqual([]);
  });
});
