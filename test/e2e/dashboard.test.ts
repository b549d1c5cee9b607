/**
 * `baton run --ui` and `--ui-keep` as a user runs them: the command prints the dashboard's
 * address, closes it with the run by default, keeps serving the finished run with
 * `--ui-keep` until Ctrl-C, and `baton viz` prints a machine's diagram. Children still
 * running when a test ends are killed by pid.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";

const GRAPH = "test/fixtures/counted.graph.ts";
const URL_LINE = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/)/;
const stores: string[] = [];

afterEach(stopBatons);
afterAll(() => {
  for (const dir of stores.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function store(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-ui-store-"));
  stores.push(dir);
  return dir;
}

/** Resolves when the child's stderr matches `pattern` (polled), failing after `ms`. */
async function stderrMatches(
  read: () => string,
  pattern: RegExp,
  ms = 30_000,
): Promise<RegExpExecArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const match = pattern.exec(read());
    if (match) return match;
    if (Date.now() > deadline) throw new Error(`no ${pattern} on stderr:\n${read()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
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
  it("prints the dashboard's address and closes it with the run", async () => {
    const baton = startBaton([
      "run",
      GRAPH,
      "--in-process",
      "--workers",
      "2",
      "--ui",
      "--store",
      store(),
    ]);
    const result = await baton.exit;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(URL_LINE);
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
