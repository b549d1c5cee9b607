import { describe, expect, it, vi } from "vitest";
import { createActor, SimulatedClock } from "xstate";
import { ConfigError } from "../../src/errors.ts";
import {
  type WatchdogEmitted,
  type WatchdogInput,
  watchdogMachine,
} from "../../src/machines/watchdog.ts";

/** A watchdog on a simulated clock that records what it emits. */
function watchdog(input: WatchdogInput = {}) {
  const clock = new SimulatedClock();
  const actor = createActor(watchdogMachine, { input, clock });
  const emitted: WatchdogEmitted[] = [];
  actor.on("*", (event) => emitted.push(event));
  actor.start();
  return {
    clock,
    emitted,
    ok: () => actor.send({ type: "PROBE_OK" }),
    fail: (reason = "no answer") => actor.send({ type: "PROBE_FAILED", reason }),
    stop: () => actor.send({ type: "STOP" }),
    value: () => actor.getSnapshot().value,
    status: () => actor.getSnapshot().status,
    types: () => emitted.map((event) => event.type),
  };
}

describe("watchdog machine", () => {
  it("is healthy at first and stays healthy on good probes", () => {
    const w = watchdog();
    w.ok();
    w.ok();
    expect(w.value()).toBe("healthy");
    expect(w.emitted).toEqual([]);
  });

  it("treats one failed probe as suspicion, not loss, and a good probe clears it", () => {
    const w = watchdog();
    w.fail("timeout");
    expect(w.value()).toBe("suspect");
    expect(w.emitted).toEqual([{ type: "suspect", strikes: 1, reason: "timeout" }]);
    w.clock.increment(60_000);
    expect(w.value()).toBe("suspect");
    w.ok();
    expect(w.value()).toBe("healthy");
    expect(w.types()).toEqual(["suspect", "recovered"]);
    // The strikes start again from zero: one more failure is again only suspicion.
    w.fail();
    expect(w.value()).toBe("suspect");
  });

  it("aborts at the tolerance and re-probes; a recovery inside the grace returns to healthy", () => {
    const w = watchdog({ tolerance: 2, graceMs: 5_000 });
    w.fail("a");
    w.fail("b");
    expect(w.value()).toBe("reprobing");
    expect(w.emitted.at(-1)).toEqual({ type: "abort", strikes: 2, reason: "b" });
    w.clock.increment(4_999);
    w.ok();
    expect(w.value()).toBe("healthy");
    w.clock.increment(10_000);
    expect(w.value()).toBe("healthy");
    expect(w.types()).toEqual(["suspect", "abort", "recovered"]);
  });

  it("is lost, once, when the grace ends without a recovery", () => {
    const w = watchdog({ tolerance: 2, graceMs: 5_000 });
    w.fail();
    w.fail();
    w.clock.increment(2_000);
    w.fail();
    w.clock.increment(2_999);
    expect(w.value()).toBe("reprobing");
    w.clock.increment(1);
    expect(w.value()).toBe("lost");
    expect(w.status()).toBe("done");
    const lost = w.emitted.filter((event) => event.type === "lost");
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ strikes: 3 });
    // A probe answer after the end reaches a machine that has ended: XState only warns.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      w.ok();
      expect(warn.mock.calls.map((call) => String(call[0]))).toEqual([
        expect.stringContaining("sent to stopped actor"),
      ]);
    } finally {
      warn.mockRestore();
    }
    w.clock.increment(10_000);
    expect(w.types().filter((type) => type === "lost")).toHaveLength(1);
  });

  it("never emits lost after a stop during the grace", () => {
    const w = watchdog({ graceMs: 5_000 });
    w.fail();
    w.fail();
    w.clock.increment(4_000);
    w.stop();
    expect(w.value()).toBe("stopped");
    w.clock.increment(60_000);
    expect(w.types()).toEqual(["suspect", "abort"]);
  });

  it("takes its tolerance and grace from the input", () => {
    const w = watchdog({ tolerance: 3, graceMs: 100 });
    w.fail();
    w.fail();
    expect(w.value()).toBe("suspect");
    w.fail();
    expect(w.value()).toBe("reprobing");
    w.clock.increment(100);
    expect(w.value()).toBe("lost");

    const once = watchdog({ tolerance: 1 });
    once.fail();
    expect(once.types()).toEqual(["abort"]);
  });

  it("aborts again after a recovery and a new run of failures", () => {
    const w = watchdog({ tolerance: 2, graceMs: 1_000 });
    w.fail();
    w.fail();
    w.ok();
    w.fail();
    w.fail();
    expect(w.types()).toEqual(["suspect", "abort", "recovered", "suspect", "abort"]);
  });

  it("refuses a tolerance below 1 or a negative grace", () => {
    for (const input of [{ tolerance: 0 }, { tolerance: 1.5 }, { graceMs: -1 }]) {
      const errors: unknown[] = [];
      const actor = createActor(watchdogMachine, { input });
      actor.subscribe({ error: (error) => errors.push(error) });
      actor.start();
      expect(actor.getSnapshot().status).toBe("error");
      expect(errors[0]).toBeInstanceOf(ConfigError);
    }
  });
});
