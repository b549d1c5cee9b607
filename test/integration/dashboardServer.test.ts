/**
 * The dashboard server over real sockets on 127.0.0.1: a wrong or missing token gets 403
 * and no data (HTTP and WebSocket); a flood of 100,000 job changes reaches a page as a
 * bounded number of coalesced updates whose sum is the model's state.
 */
import { once } from "node:events";
import { connect } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { CLOSE_REASON, CLOSE_WAIT_MS, DashboardServer } from "../../src/runtime/dashboardServer.ts";
import type { Clock } from "../../src/runtime/ports.ts";
import type { DashboardEvent } from "../../src/viz/dashboardModel.ts";

/** A clock that moves only when told; due timers fire in order as it moves. */
function manualClock() {
  let now = 0;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: Clock & { advance(ms: number): void } = {
    now: () => now,
    setTimeout(fn, ms) {
      seq++;
      timers.set(seq, { at: now + ms, fn });
      return seq;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      now += ms;
      for (;;) {
        const due = [...timers].filter(([, t]) => t.at <= now).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) return;
        timers.delete(due[0]);
        due[1].fn();
      }
    },
  };
  return clock;
}

/** Opens a page's WebSocket; resolves with the close or the first message. */
function openSocket(
  url: string,
): Promise<{ status?: number; messages: unknown[]; ws?: WebSocket }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const messages: unknown[] = [];
    ws.on("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode, messages });
      ws.terminate();
    });
    ws.on("error", () => resolve({ messages }));
    ws.on("message", (data) => {
      messages.push(JSON.parse(String(data)));
      if (messages.length === 1) resolve({ messages, ws });
    });
  });
}

const graph = (n: number): DashboardEvent => ({
  type: "graph",
  jobs: Array.from({ length: n }, (_, i) => ({
    id: `j${i}`,
    kind: `k${i % 5}`,
    deps: [],
    state: "ready" as const,
  })),
});

describe("dashboard server", () => {
  let server: DashboardServer | undefined;
  const sockets: WebSocket[] = [];
  afterEach(async () => {
    for (const ws of sockets.splice(0)) ws.terminate();
    await server?.close();
    server = undefined;
  });

  it("says a taken port is the dashboard's (--ui-port), not the workers' (--listen)", async () => {
    server = await DashboardServer.start();
    const { port } = new URL(server.url);
    await expect(DashboardServer.start({ port: Number(port) })).rejects.toMatchObject({
      code: "CONFIG",
      message: `the dashboard (--ui-port) cannot listen at 127.0.0.1:${port}: the port is in use; pick another, or port 0 for any free one`,
    });
  });

  it("answers a wrong or missing token with 403 and no data, over HTTP and WebSocket", async () => {
    server = await DashboardServer.start();
    server.push(0, { type: "run.started", run: "r1" });
    server.push(0, graph(3));
    const url = new URL(server.url);
    const base = `http://127.0.0.1:${url.port}`;
    const token = url.pathname.split("/")[1]!;
    const wrong = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;

    for (const path of [
      "/",
      "/dashboard.js",
      `/${wrong}/`,
      `/${wrong}/dashboard.js`,
      `/${wrong}`,
      `/${token}/../`,
    ]) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(403);
      expect(await res.text()).not.toContain("r1");
    }
    for (const path of ["/ws", `/${wrong}/ws`, `/${token}/wss`]) {
      const page = await openSocket(`ws://127.0.0.1:${url.port}${path}`);
      expect(page.status, path).toBe(403);
      expect(page.messages).toEqual([]);
    }
    // The address without its last slash is sent to the page, the token's alone.
    const unslashed = await fetch(`${base}/${token}`, { redirect: "manual" });
    expect(unslashed.status).toBe(308);
    expect(unslashed.headers.get("location")).toBe(`/${token}/`);
    expect((await fetch(`${base}/${token}`)).url).toBe(server.url);
    const ok = await fetch(server.url);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-security-policy")).toContain("default-src 'none'");
    // With the token, HEAD is answered as GET is (curl -I), and a method that writes is refused.
    const head = await fetch(server.url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe(ok.headers.get("content-type"));
    const post = await fetch(server.url, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${base}/${wrong}/`, { method: "HEAD" })).status).toBe(403);
    const page = await openSocket(`ws://127.0.0.1:${url.port}/${token}/ws`);
    sockets.push(page.ws!);
    expect(page.messages[0]).toMatchObject({ type: "snapshot", state: { run: "r1", total: 3 } });
  });

  it("closes a page with a close handshake (1001 and why) when it stops, and cuts off one that does not answer", async () => {
    const clock = manualClock();
    server = await DashboardServer.start({ clock });
    const url = new URL(server.url);
    const page = await openSocket(`ws://127.0.0.1:${url.port}${url.pathname}ws`);
    sockets.push(page.ws!);
    const heard = new Promise<{ code: number; reason: string }>((resolve) =>
      page.ws!.once("close", (code, reason) => resolve({ code, reason: String(reason) })),
    );
    // A page that connects and then never answers: a bare socket that does the upgrade.
    const mute = connect(Number(url.port), "127.0.0.1");
    let received = Buffer.alloc(0);
    mute.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
    });
    const muteGone = once(mute, "close");
    try {
      mute.write(
        `GET ${url.pathname}ws HTTP/1.1\r\nHost: 127.0.0.1:${url.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      await vi.waitFor(() => expect(received.toString("latin1")).toContain('"type":"snapshot"'));

      let closed = false;
      const closing = server.close().then(() => {
        closed = true;
      });
      expect(await heard).toEqual({ code: 1001, reason: CLOSE_REASON });
      // The mute page got the close frame (unmasked, 1001 = 0x03e9) and does not answer it.
      const frame = Buffer.from([0x88, 2 + Buffer.byteLength(CLOSE_REASON), 0x03, 0xe9]);
      await vi.waitFor(() => expect(received.includes(frame)).toBe(true));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(closed).toBe(false);
      clock.advance(CLOSE_WAIT_MS);
      await closing;
      await muteGone;
      server = undefined;
    } finally {
      mute.destroy();
    }
  });

  it("sends at most ten coalesced updates a second however many events arrive", async () => {
    const clock = manualClock();
    server = await DashboardServer.start({ clock, maxUpdatesPerSecond: 10 });
    const jobs = 100_000;
    server.push(clock.now(), graph(jobs));
    const url = new URL(server.url);
    const page = await openSocket(`ws://127.0.0.1:${url.port}${url.pathname}ws`);
    sockets.push(page.ws!);
    // 100,000 completions spread over 2 s of the clock.
    for (let i = 0; i < jobs; i++) {
      server.push(clock.now(), { type: "job", id: `j${i}`, kind: `k${i % 5}`, state: "completed" });
      clock.advance(2000 / jobs);
    }
    server.push(clock.now(), { type: "run.finished", ok: true });
    server.flush();
    const diffs = () => page.messages.filter((m) => (m as { type: string }).type === "diff");
    while (!diffs().some((m) => (m as { diff: { finished: boolean } }).diff.finished)) {
      await once(page.ws!, "message");
    }

    // 2 s at ten a second, plus the final flush (and one for rounding at the edges).
    expect(server.stats.diffs).toBeLessThanOrEqual(22);
    expect(diffs().length).toBe(server.stats.diffs);
    const last = diffs().at(-1) as {
      diff: { outcomes: { completed: number }; counts: { ready: number } };
    };
    expect(last.diff.outcomes.completed).toBe(jobs);
    expect(last.diff.counts.ready).toBe(0);
  });

  it("sends a page that stopped reading the latest state once it catches up, even when nothing changes after, and logs it without the token", async () => {
    const clock = manualClock();
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    server = await DashboardServer.start({ clock, logger });
    const url = new URL(server.url);
    const page = await openSocket(`ws://127.0.0.1:${url.port}${url.pathname}ws`);
    sockets.push(page.ws!);
    const socket = (page.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    socket.pause();
    // 1 MB diffs, far past the 4 MiB a page may leave unread and the kernel's buffers.
    for (let i = 0; i < 40; i++) {
      const label = `${i}`.padEnd(1_000_000, "x");
      server.push(clock.now(), {
        type: "actor",
        id: "a",
        machine: "m",
        label,
        states: [],
        status: "active",
      });
      server.flush();
    }
    server.push(clock.now(), { type: "run.finished", ok: true });
    server.flush();
    socket.resume();

    type Message = { type: string; state?: { finished: boolean } };
    const last = () => page.messages.at(-1) as Message;
    for (
      let waited = 0;
      waited < 5_000 && !(last().type === "snapshot" && last().state?.finished);
      waited += 50
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      clock.advance(100);
    }
    expect(last()).toMatchObject({ type: "snapshot", state: { finished: true } });
    expect(page.messages.length).toBeLessThan(40);
    const logged = lines.map((line) => JSON.parse(line) as { msg: string });
    expect(logged.map((line) => line.msg)).toEqual([
      "a dashboard page connected",
      "a dashboard page stopped reading; it gets no updates until it catches up",
      "a dashboard page caught up; it gets the whole state",
    ]);
    for (const line of lines) expect(line).not.toContain(url.pathname.split("/")[1]);
  }, 30_000);

  it("sends a replay's page that seeks but stopped reading the step it asked for last once it catches up, not a snapshot a seek", async () => {
    const clock = manualClock();
    // Every step's snapshot holds a 1 MB label: a few unread ones pass the 4 MiB a page may leave unread.
    const actor: DashboardEvent = {
      type: "actor",
      id: "a",
      machine: "m",
      label: "x".repeat(1_000_000),
      states: [],
      status: "active",
    };
    const trace = [0, 1, 2, 3].map((at) => ({ at, event: actor }));
    server = await DashboardServer.start({ clock, replay: trace });
    const url = new URL(server.url);
    const page = await openSocket(`ws://127.0.0.1:${url.port}${url.pathname}ws`);
    sockets.push(page.ws!);
    const socket = (page.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    socket.pause();
    const seeks = [...Array.from({ length: 40 }, (_, i) => 1 + (i % 2)), 4];
    for (const position of seeks) page.ws!.send(JSON.stringify({ type: "seek", position }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    socket.resume();

    type Message = { replay: { position: number } };
    const last = () => page.messages.at(-1) as Message;
    for (let waited = 0; waited < 10_000 && last().replay.position !== 4; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      clock.advance(100);
    }
    expect(last().replay.position).toBe(4);
    expect(page.messages.length).toBeLessThan(seeks.length);
  }, 30_000);

  it("shows a page's seeks that come in together (a dragged slider) as one, the last", async () => {
    const trace = [
      { at: 0, event: { type: "run.started", run: "r1" } as DashboardEvent },
      ...Array.from({ length: 60 }, (_, i) => ({
        at: i,
        event: { type: "job", id: `j${i}`, kind: "k", state: "completed" } as DashboardEvent,
      })),
    ];
    server = await DashboardServer.start({ replay: trace });
    const page = await openSocket(`${server.url.replace("http:", "ws:")}ws`);
    sockets.push(page.ws!);
    for (let position = 1; position <= 50; position++) {
      page.ws!.send(JSON.stringify({ type: "seek", position }));
    }
    type Snapshot = { replay: { position: number }; state: { outcomes: { completed: number } } };
    const last = () => page.messages.at(-1) as Snapshot;
    for (let waited = 0; waited < 10_000 && last().replay.position !== 50; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(last().replay.position).toBe(50);
    expect(last().state.outcomes.completed).toBe(49);
    expect(page.messages.length).toBeLessThan(10);
  });

  it("moves only the page that seeks: each page has its own step", async () => {
    const trace = [
      { at: 0, event: { type: "run.started", run: "r1" } as DashboardEvent },
      { at: 0, event: graph(2) },
      { at: 5, event: { type: "job", id: "j0", kind: "k0", state: "completed" } as DashboardEvent },
      { at: 9, event: { type: "job", id: "j1", kind: "k1", state: "completed" } as DashboardEvent },
    ];
    server = await DashboardServer.start({ replay: trace });
    const wsUrl = `${server.url.replace("http:", "ws:")}ws`;
    const [a, b] = [await openSocket(wsUrl), await openSocket(wsUrl)];
    sockets.push(a.ws!, b.ws!);
    type Snapshot = { replay: { position: number }; state: { outcomes: { completed: number } } };
    const next = (ws: WebSocket) =>
      once(ws, "message").then(([data]) => JSON.parse(String(data)) as Snapshot);

    const seen = next(a.ws!);
    a.ws!.send(JSON.stringify({ type: "seek", position: 4 }));
    const moved = await seen;
    expect(moved.replay.position).toBe(4);
    expect(moved.state.outcomes.completed).toBe(2);

    // The other page was not moved, and its own seek starts from where it was.
    const other = next(b.ws!);
    b.ws!.send(JSON.stringify({ type: "seek", position: 3 }));
    const own = await other;
    expect(b.messages.map((m) => (m as Snapshot).replay.position)).toEqual([0, 3]);
    expect(own.state.outcomes.completed).toBe(1);
    // A page that connects later starts at the first step, whatever the others show.
    const late = await openSocket(wsUrl);
    sockets.push(late.ws!);
    expect((late.messages[0] as Snapshot).replay.position).toBe(0);
  });
});
