import { timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { WebSocket, WebSocketServer } from "ws";
import type { InspectionEvent } from "xstate";
import { checkOptionNames } from "../optionNames.ts";
import {
  type DashboardEvent,
  DashboardModel,
  describeEvent,
  replayTo,
} from "../viz/dashboardModel.ts";
import { type GroupProgress, groupFeed } from "../viz/groupProgress.ts";
import { inspectionFeed } from "../viz/inspectionFeed.ts";
import { cannotListen } from "./cannotListen.ts";
import { nodeClock } from "./nodeClock.ts";
import { nodeEntropy } from "./nodeEntropy.ts";
import type { Clock, Entropy } from "./ports.ts";
import { requireWhole } from "./requireWhole.ts";
import type { Run } from "./run.ts";
import { settledWithin } from "./settledWithin.ts";

/** One recorded step of a run or a simulation: what happened, and when (ms, wall or virtual). */
export interface TraceStep {
  at: number;
  event: DashboardEvent;
}

/** What `DashboardServer.start` takes. */
export interface DashboardServerOptions {
  /** Port on 127.0.0.1 (default 0: any free port). */
  port?: number | undefined;
  /** Most updates a page receives per second (default 10); changes in between are coalesced. */
  maxUpdatesPerSecond?: number | undefined;
  /** A recorded trace to replay (a time slider and step buttons) instead of a live run. */
  replay?: readonly TraceStep[] | undefined;
  clock?: Clock | undefined;
  entropy?: Entropy | undefined;
  /** Where pages connecting, falling behind and catching up are logged, at info (never the URL: it carries the token). */
  logger?: Logger | undefined;
}

/** Every option `DashboardServer.start` takes (the compiler holds this to its options). */
export const SERVER_OPTIONS: Record<keyof DashboardServerOptions, true> = {
  port: true,
  maxUpdatesPerSecond: true,
  replay: true,
  clock: true,
  entropy: true,
  logger: true,
};

/** Why pages are closed (with 1001, going away) when the dashboard stops: the page shows it. */
export const CLOSE_REASON = "baton stopped serving the dashboard";

/** How long a page gets to answer the close before its connection is cut. */
export const CLOSE_WAIT_MS = 1_000;

/** The most updates a page is sent a second unless told (`maxUpdatesPerSecond`). */
export const DEFAULT_MAX_UPDATES_PER_SECOND = 10;

/** A page that stops reading gets no diffs past this much unsent data, then one snapshot. */
const MAX_BUFFERED_BYTES = 4 * 2 ** 20;

const ASSETS: Record<string, string> = {
  "": "text/html; charset=utf-8",
  "dashboard.js": "text/javascript; charset=utf-8",
  "dashboard.css": "text/css; charset=utf-8",
  // Its own icon, or the browser asks for /favicon.ico, outside the token: a 403 on every load.
  "favicon.svg": "image/svg+xml",
};

/**
 * The run dashboard's server: an HTTP and WebSocket server on 127.0.0.1 that serves the
 * page (local files only: HTML, CSS, JS, drawn as SVG) under a random token
 * (`http://127.0.0.1:PORT/TOKEN/`), keeps a `DashboardModel` of the run, sends a page a
 * snapshot when it connects and then diffs at most `maxUpdatesPerSecond` times a second,
 * however many events arrive. Any other path, and a WebSocket upgrade without the token,
 * gets 403 and no data. With `replay` it serves a recorded trace instead, which the page
 * steps through with `seek` messages; a trace that ends in a broken invariant (a failed
 * simulation) tells the page at which step, and the page shows it from that step on.
 *
 * @example
 * ```ts
 * const ui = await DashboardServer.start({ port: 0 });
 * const run = createEngine({ jobs, inspect: ui.inspect }).run(graph);
 * ui.watch(run);
 * console.error(`dashboard: ${ui.url}`);
 * await run;
 * await ui.close(); // the page then says it stopped; an open server keeps the process alive
 * ```
 */
export class DashboardServer {
  /** Pages sent a snapshot, and diffs sent (for tests and logs). */
  readonly stats = { snapshots: 0, diffs: 0 };
  /** Feeds the model from the engine's `inspect` option. */
  readonly inspect: (event: InspectionEvent) => void;
  private model: DashboardModel;
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  private readonly interval: number;
  private readonly clients = new Set<WebSocket>();
  /** Pages that fell behind: they get a snapshot instead of the next diff. */
  private readonly stale = new Set<WebSocket>();
  private timer: unknown;
  private lastFlush = Number.NEGATIVE_INFINITY;
  /**
   * A replay's step each page shows: each page steps on its own, so two people (or two tabs
   * comparing steps) do not move each other's. A page starts at the first step.
   */
  private readonly positions = new WeakMap<WebSocket, number>();
  /**
   * The step each page asked for last, until it is shown: a dragged slider sends a seek at every
   * move, and each rebuilds the model to its step (O(step)), so the seeks that come in
   * together are shown as one, the last.
   */
  private readonly seeks = new Map<WebSocket, number>();
  /** The recorded trace a replay serves; undefined for a live run. */
  private replay: readonly TraceStep[] | undefined;
  /** The replay's step that shows a broken invariant, if it has one. */
  private violationAt: number | undefined;

  private constructor(
    private readonly http: Server,
    private readonly sockets: WebSocketServer,
    private readonly token: string,
    private readonly assets: Map<string, Buffer>,
    options: DashboardServerOptions,
  ) {
    this.clock = options.clock ?? nodeClock();
    this.logger = options.logger;
    this.interval = 1000 / (options.maxUpdatesPerSecond ?? DEFAULT_MAX_UPDATES_PER_SECOND);
    this.model = new DashboardModel();
    const feed = inspectionFeed((event) => this.push(this.clock.now(), event));
    this.inspect = feed;
    http.on("request", (req, res) => this.serve(req, res));
    http.on("upgrade", (req, socket, head) => {
      if (!this.authorised(req, "ws")) {
        socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      sockets.handleUpgrade(req, socket, head, (ws) => this.connected(ws));
    });
  }

  /**
   * Starts the server on 127.0.0.1. A port that is not 0 to 65535, taken, or not allowed
   * rejects with a `ConfigError` saying what to do. `ws` is loaded by the first start, not with
   * baton.
   *
   * @example
   * ```ts
   * const ui = await DashboardServer.start({ port: 8377 });
   * ```
   */
  static async start(options: DashboardServerOptions = {}): Promise<DashboardServer> {
    checkOptionNames("DashboardServer.start", options, SERVER_OPTIONS, {
      shape: "{ port, maxUpdatesPerSecond, replay, … }",
    });
    requireWhole("DashboardServer.start", "port", options.port ?? 0, 0, 65_535);
    const assets = new Map<string, Buffer>();
    for (const name of Object.keys(ASSETS)) {
      const file = new URL(`../viz/page/${name || "index.html"}`, import.meta.url);
      assets.set(name, await readFile(file));
    }
    const token = (options.entropy ?? nodeEntropy()).id(32);
    const http = createServer();
    const { WebSocketServer } = await import("ws");
    const sockets = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      maxPayload: 4096,
    });
    await new Promise<void>((resolve, reject) => {
      http.once("error", (error) =>
        reject(cannotListen(`127.0.0.1:${options.port ?? 0}`, error, "the dashboard (--ui-port)")),
      );
      http.listen(options.port ?? 0, "127.0.0.1", () => resolve());
    });
    const server = new DashboardServer(http, sockets, token, assets, options);
    if (options.replay) server.showReplay(options.replay);
    return server;
  }

  /**
   * Serves a recorded trace from now on, from its first step, as `start({ replay })` does:
   * so a server can hold its port while the trace is still being recorded (`baton sim
   * --replay S --ui` records a seed's this way).
   *
   * @example
   * ```ts
   * const ui = await DashboardServer.start({ port: 0 });
   * ui.showReplay([
   *   { at: 0, event: { type: "run.started", run: "r1" } },
   *   { at: 5, event: { type: "job", id: "a1", kind: "fetch", state: "running" } },
   *   { at: 90, event: { type: "run.finished", ok: true } },
   * ]); // the page steps through them with a time slider
   * ```
   */
  showReplay(trace: readonly TraceStep[]): void {
    this.replay = trace;
    const broken = trace.findIndex((step) => step.event.type === "violation");
    this.violationAt = broken === -1 ? undefined : broken + 1;
    // Nothing the live model held before is sent on as a diff.
    this.model = replayTo(trace, 0);
    this.model.takeDiff();
    for (const ws of this.clients) this.seek(ws, 0);
  }

  /** The page's address, with its token. */
  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/${this.token}/`;
  }

  /** Folds one event into the model; pages hear of it within one update interval. */
  push(at: number, event: DashboardEvent): void {
    this.model.apply(at, event);
    this.schedule();
  }

  /**
   * Names the run on the page and sends its last state as soon as it settles (its jobs and
   * actors come through `inspect`); a run that fails outright is shown as finished, not ok.
   */
  watch(run: Run): void {
    this.push(this.clock.now(), { type: "run.started", run: run.id });
    run.then(
      () => this.flush(),
      () => {
        this.push(this.clock.now(), { type: "run.finished", ok: false });
        this.flush();
      },
    );
  }

  /**
   * Shows one rank group launched in this process (`baton launch --ui`) as a run of its own,
   * named after its deployment: give `report` to `watchGroup`, as a rank job's reports feed
   * a run's page (the group, its ranks, its teardown, their charts); `ended(ok)` shows the
   * launch finished and sends the last state at once.
   *
   * @example
   * ```ts
   * const ui = await DashboardServer.start({ port: 0 });
   * const shown = ui.showGroup();
   * const group = launchGroup({ argv: ["python3", "train.py"], worldSize: 2, inspect: watchGroup(shown.report) });
   * await group.wait().then((exit) => shown.ended(exit.status === "succeeded"), () => shown.ended(false));
   * await ui.close();
   * ```
   */
  showGroup(): { report(progress: GroupProgress): void; ended(ok: boolean): void } {
    const groups = groupFeed((event) => this.push(this.clock.now(), event));
    let named = false;
    return {
      report: (progress) => {
        if (!named) this.push(this.clock.now(), { type: "run.started", run: progress.deployment });
        named = true;
        groups.report(progress);
      },
      ended: (ok) => {
        this.push(this.clock.now(), { type: "run.finished", ok });
        this.flush();
      },
    };
  }

  /**
   * Sends what changed now, without waiting for the next interval. A page that fell behind
   * gets nothing until it catches up, then the whole state: it is looked at every interval
   * until then, so it catches up even when nothing changes any more (a finished run).
   */
  flush(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.lastFlush = this.clock.now();
    const diff = this.model.takeDiff();
    const text = diff && JSON.stringify({ type: "diff", diff });
    for (const ws of this.clients) {
      if (this.behind(ws)) continue;
      if (this.stale.has(ws)) {
        this.logger?.info("a dashboard page caught up; it gets the whole state");
        this.sendSnapshot(ws);
      } else if (text !== undefined) {
        ws.send(text);
        this.stats.diffs++;
      }
    }
    if (this.stale.size > 0) this.schedule();
  }

  /**
   * Closes every page's connection with a close handshake (1001, "{@link CLOSE_REASON}"),
   * so the page hears why; a page that has not answered within {@link CLOSE_WAIT_MS} is cut
   * off. Then the server stops.
   */
  async close(): Promise<void> {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const pages = [...this.clients];
    const closed = pages.map(
      (ws) => ws.readyState === ws.CLOSED || new Promise((gone) => ws.once("close", gone)),
    );
    for (const ws of pages) ws.close(1001, CLOSE_REASON);
    await settledWithin(Promise.all(closed), CLOSE_WAIT_MS, this.clock);
    for (const ws of pages) ws.terminate();
    this.sockets.close();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    const wait = Math.max(0, this.lastFlush + this.interval - this.clock.now());
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, wait);
  }

  /**
   * Replay: shows page `ws` the state after the first `position` events of the trace. A page
   * that seeks but stops reading gets the step it asked for last once it catches up, not a
   * snapshot for every seek.
   */
  private seek(ws: WebSocket, position: number): void {
    this.positions.set(ws, Math.max(0, Math.min(Math.trunc(position), this.replay!.length)));
    if (this.behind(ws)) this.schedule();
    else this.sendSnapshot(ws);
  }

  /**
   * Whether page `ws` has more than {@link MAX_BUFFERED_BYTES} unsent: it is then marked stale
   * (said once in the log) and gets nothing until it catches up.
   */
  private behind(ws: WebSocket): boolean {
    if (ws.bufferedAmount <= MAX_BUFFERED_BYTES) return false;
    if (!this.stale.has(ws)) {
      this.logger?.info(
        { unsent: ws.bufferedAmount },
        "a dashboard page stopped reading; it gets no updates until it catches up",
      );
    }
    this.stale.add(ws);
    return true;
  }

  /** Whether `req` asks for `asset` under the token (`undefined`: the token without a slash). */
  private authorised(req: IncomingMessage, asset: string | undefined): boolean {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    const expected = Buffer.from(
      asset === undefined ? `/${this.token}` : `/${this.token}/${asset}`,
    );
    const actual = Buffer.from(path);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const name = Object.keys(ASSETS).find((asset) => this.authorised(req, asset));
    // The address without its last slash (cut when copied, or typed): the page's files are
    // relative to the folder, so it is sent there rather than refused.
    if (name === undefined && this.authorised(req, undefined)) {
      res.writeHead(308, { location: `/${this.token}/`, "cache-control": "no-store" });
      res.end();
      return;
    }
    if (name === undefined) {
      res.writeHead(403, { "content-type": "text/plain", "cache-control": "no-store" });
      res.end("forbidden: open the dashboard with the URL baton printed (it carries a token)\n");
      return;
    }
    // HEAD gets GET's headers (Node sends no body for it); nothing is ever posted to it.
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, {
        allow: "GET, HEAD",
        "content-type": "text/plain",
        "cache-control": "no-store",
      });
      res.end("method not allowed: the dashboard is only read (GET)\n");
      return;
    }
    res.writeHead(200, {
      "content-type": ASSETS[name]!,
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
      "content-security-policy":
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'",
    });
    res.end(this.assets.get(name));
  }

  private connected(ws: WebSocket): void {
    this.clients.add(ws);
    // Never the URL: it carries the token.
    this.logger?.info({ pages: this.clients.size }, "a dashboard page connected");
    ws.on("close", () => {
      this.clients.delete(ws);
      this.stale.delete(ws);
    });
    ws.on("error", () => ws.terminate());
    ws.on("message", (data) => {
      if (!this.replay) return;
      try {
        const message = JSON.parse(String(data)) as { type?: unknown; position?: unknown };
        if (message.type === "seek" && typeof message.position === "number") {
          const queued = this.seeks.has(ws);
          this.seeks.set(ws, message.position);
          if (!queued) {
            setImmediate(() => {
              const position = this.seeks.get(ws)!;
              this.seeks.delete(ws);
              this.seek(ws, position);
            });
          }
        }
      } catch {
        ws.close(1003, "messages are JSON");
      }
    });
    this.sendSnapshot(ws);
  }

  private sendSnapshot(ws: WebSocket): void {
    this.stale.delete(ws);
    const trace = this.replay;
    const position = this.positions.get(ws) ?? 0;
    const message = {
      type: "snapshot",
      state: (trace ? replayTo(trace, position) : this.model).snapshot(),
      ...(trace && {
        replay: {
          position,
          length: trace.length,
          at: position > 0 ? trace[position - 1]!.at : (trace[0]?.at ?? 0),
          event: position > 0 ? describeEvent(trace[position - 1]!.event) : undefined,
          violationAt: this.violationAt,
        },
      }),
    };
    if (ws.readyState === ws.OPEN) {
      ws.send(JSON.stringify(message));
      this.stats.snapshots++;
    }
  }
}
