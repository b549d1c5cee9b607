/**
 * `connectInspector` with `@statelyai/inspect` installed but failing to load (a broken
 * install): a warning, the events dropped, the run unharmed, and no unhandled rejection.
 */
import pino from "pino";
import { afterEach, expect, it, vi } from "vitest";

afterEach(() => {
  vi.doUnmock("@statelyai/inspect");
  vi.resetModules();
});

it("drops the events with one warning when @statelyai/inspect is installed but fails to load, and the run goes on", async () => {
  vi.doMock("@statelyai/inspect", () => {
    throw new Error("Cannot find module 'superjson'");
  });
  const { connectInspector } = await import("../../src/runtime/inspector.ts");
  const { createEngine, job } = await import("../../src/index.ts");
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    const inspector = connectInspector("ws://127.0.0.1:9", { closeTimeoutMs: 2_000, logger });
    const engine = createEngine({ jobs: { one: () => 1 }, workers: 1, inspect: inspector.inspect });
    expect((await engine.run([job("one", null)])).ok).toBe(true);
    await inspector.close();
    await new Promise((resolve) => setImmediate(resolve));

    expect(unhandled).toEqual([]);
    expect(inspector.stats.sent).toBe(0);
    expect(inspector.stats.dropped).toBeGreaterThan(0);
    const warnings = lines.map((line) => JSON.parse(line) as { msg: string; reason?: string });
    expect(warnings).toContainEqual(
      expect.objectContaining({
        msg: "could not load @statelyai/inspect; inspection events are dropped (reinstall it: npm install @statelyai/inspect)",
        reason: expect.any(String),
      }),
    );
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});
