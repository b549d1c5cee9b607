/**
 * CoordinatorServer against a hand-driven link in virtual time: what it does with a link's
 * events once that link's connection machine has stopped.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createActor } from "xstate";
import { coordinatorMachine } from "../../src/machines/coordinator.ts";
import { CoordinatorServer } from "../../src/runtime/coordinatorServer.ts";
import type { Link, Listener } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

/** A link whose other end never answers a close: the test decides when the close arrives. */
function silentLink() {
  const closeHandlers: ((code: number, reason: string) => void)[] = [];
  const closes: [number, string][] = [];
  const link: Link = {
    id: "c1",
    remote: "test",
    bufferedAmount: 0,
    send: () => {},
    close: (code, reason) => closes.push([code, reason]),
    ping: () => {},
    onFrame: () => {},
    onPong: () => {},
    onPing: () => {},
    onClose: (handler) => closeHandlers.push(handler),
  };
  const arriveClosed = (code: number, reason: string) => {
    for (const handler of closeHandlers) handler(code, reason);
  };
  return { link, closes, arriveClosed };
}

describe("CoordinatorServer", () => {
  it("drops a link's close that arrives after its connection machine stopped on its own", async () => {
    const clock = new SimClock();
    const coordinator = createActor(coordinatorMachine, { input: { jobs: [] }, clock }).start();
    let accept!: (link: Link) => void;
    const listener: Listener = {
      address: "memory://test",
      onConnection: (handler) => {
        accept = handler;
      },
      close: async () => {},
    };
    const server = new CoordinatorServer({
      listener,
      coordinator,
      clock,
      entropy: new SimEntropy(1),
      secret: new Uint8Array(32),
      run: "r1",
      logger: pino({ level: "silent" }),
    });
    const { link, closes, arriveClosed } = silentLink();
    accept(link);
    expect(server.connectionCount).toBe(1);
    // No hello: 4003 after 10 s, then the machine stops waiting for the close after 5 s more.
    while (clock.fireNext(15_000)) await Promise.resolve();
    expect(closes).toEqual([[4003, "no hello within 10000 ms of connecting"]]);
    expect(server.connectionCount).toBe(0);
    const warn = vi.spyOn(console, "warn");
    arriveClosed(4003, "no hello within 10000 ms of connecting");
    await new Promise((resolve) => setImmediate(resolve));
    expect(warn).not.toHaveBeenCalled();
    coordinator.stop();
  });
});
