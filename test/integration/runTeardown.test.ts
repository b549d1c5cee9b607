/**
 * How a finished run takes itself down (DESIGN §4: finished, then the server closes, then the
 * pool stops), with in-process workers over the in-memory Net.
 */
import { describe, expect, it } from "vitest";
import { createEngine, inProcessPool, job, type WorkerPool } from "../../src/index.ts";
import { memoryNet } from "../../src/runtime/memoryNet.ts";
import type { Net } from "../../src/runtime/ports.ts";

describe("a run's teardown", { timeout: 10_000 }, () => {
  it("starts the pool's stop once the listener has sent its closes, while it waits for the workers' answers", async () => {
    // A listener whose close waits for a worker that cannot answer (wsNet: 5 s, then the
    // pool's whole grace again): the gate stands for that wait, and opens once the pool's
    // stop has begun, or after a second (the pool's stop used to wait for the close).
    const steps: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const fallback = setTimeout(open, 1_000);
    const inner = memoryNet();
    const net: Net = {
      connect: (address, options) => inner.connect(address, options),
      async listen(address, options) {
        const listener = await inner.listen(address, options);
        return {
          address: listener.address,
          onConnection: (handler) => listener.onConnection(handler),
          async close() {
            const closed = listener.close();
            steps.push("listener closing");
            await closed;
            await gate;
            steps.push("listener closed");
          },
        };
      },
    };
    const workers = inProcessPool({ count: 2 });
    const pool: WorkerPool = {
      offers: workers.offers,
      remote: false,
      start(context) {
        const running = workers.start(context);
        return {
          failed: running.failed,
          async stop() {
            steps.push("pool stopping");
            open();
            await running.stop();
            steps.push("pool stopped");
          },
        };
      },
    };
    const engine = createEngine({ jobs: { one: () => 1 }, workers: pool, net });
    const result = await engine.run([job("one", null)]).finally(() => clearTimeout(fallback));
    expect(result.ok).toBe(true);
    expect(steps.slice(0, 2)).toEqual(["listener closing", "pool stopping"]);
    expect(steps.slice(2).sort()).toEqual(["listener closed", "pool stopped"]);
  });
});
