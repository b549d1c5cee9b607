import { describe, expect, it } from "vitest";
import type { Link } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimNet } from "../../src/sim/simNet.ts";

/** Runs microtasks and timers until nothing is left (or `until`). */
async function settle(clock: SimClock, until = Number.POSITIVE_INFINITY) {
  for (;;) {
    await new Promise((resolve) => setImmediate(resolve));
    if (!clock.fireNext(until)) return;
  }
}

async function pair(seed = 1) {
  const clock = new SimClock();
  const net = new SimNet(clock, new SimEntropy(seed));
  const listener = await net.host("server").listen("memory://s");
  let server!: Link;
  listener.onConnection((link) => {
    server = link;
  });
  const client = await net.host("client").connect("memory://s");
  const log: string[] = [];
  server.onFrame((f) => log.push(`server got ${f} at ${clock.now()}`));
  client.onFrame((f) => log.push(`client got ${f} at ${clock.now()}`));
  server.onClose((code) => log.push(`server closed ${code}`));
  client.onClose((code) => log.push(`client closed ${code}`));
  return { clock, net, listener, server, client, log };
}

describe("SimNet", () => {
  it("delivers frames in order per direction, after a latency, never reordered", async () => {
    const { clock, server, client, log } = await pair();
    for (let i = 0; i < 50; i++) client.send(`c${i}`);
    for (let i = 0; i < 50; i++) server.send(`s${i}`);
    expect(log).toEqual([]);
    await settle(clock);
    const toServer = log.filter((l) => l.startsWith("server got")).map((l) => l.split(" ")[2]);
    const toClient = log.filter((l) => l.startsWith("client got")).map((l) => l.split(" ")[2]);
    expect(toServer).toEqual(Array.from({ length: 50 }, (_, i) => `c${i}`));
    expect(toClient).toEqual(Array.from({ length: 50 }, (_, i) => `s${i}`));
  });

  it("answers pings with pongs and closes both ends once, frames in flight first", async () => {
    const { clock, server, client, log } = await pair();
    let pongs = 0;
    server.onPong(() => pongs++);
    server.ping();
    await settle(clock);
    expect(pongs).toBe(1);
    client.send("last words");
    client.close(1000, "bye");
    client.close(1000, "twice");
    client.send("after close");
    await settle(clock);
    expect(log.map((l) => l.split(" at ")[0])).toEqual([
      "server got last words",
      "server closed 1000",
      "client closed 1000",
    ]);
  });

  it("a closing end still gets what the peer sent before it read the close, then the peer's answer", async () => {
    const { clock, server, client, log } = await pair();
    server.close(4005, "no heartbeat");
    client.send("a late result");
    await settle(clock);
    const events = log.map((l) => l.split(" at ")[0]);
    expect([...events].sort()).toEqual([
      "client closed 4005",
      "server closed 4005",
      "server got a late result",
    ]);
    // The server hears the late frame, and closes only once the client's answer is back.
    expect(events.indexOf("server got a late result")).toBeLessThan(
      events.indexOf("server closed 4005"),
    );
    expect(events.at(-1)).toBe("server closed 4005");
  });

  it("a closing end whose close goes unanswered closes after 5 s with its own code", async () => {
    const { clock, net, server, log } = await pair();
    net.partition(server.id, 60_000);
    server.close(4005, "no heartbeat");
    await settle(clock, 4_999);
    expect(log).toEqual([]);
    await settle(clock, 5_000);
    expect(log).toEqual(["server closed 4005"]);
  });

  it("reset: both ends close with 1006 and what was in flight toward the peer is lost", async () => {
    const { clock, net, server, client, log } = await pair();
    server.send("lost");
    net.reset(client.id, "server");
    await settle(clock);
    expect(log).toEqual(["server closed 1006", "client closed 1006"]);
  });

  it("partition: nothing moves until it heals, then everything arrives in order", async () => {
    const { clock, net, server, client, log } = await pair();
    net.partition(client.id, 10_000);
    client.send("a");
    client.send("b");
    server.send("x");
    await settle(clock, 9_999);
    expect(log).toEqual([]);
    await settle(clock);

    expect(log.filter((l) => l.startsWith("server got")).map((l) => l.split(" ")[2])).toEqual([
      "a",
      "b",
    ]);
    for (const line of log) expect(Number(line.split(" at ")[1])).toBeGreaterThanOrEqual(10_000);
  });

  it("half-open: the end left open learns only when it sends; the end of the faults does not tell it", async () => {
    const first = await pair();
    first.net.halfOpen(first.client.id, "server");
    await settle(first.clock);
    expect(first.log).toEqual(["server closed 1006"]);
    first.client.send("anyone?");
    await settle(first.clock);
    expect(first.log).toEqual(["server closed 1006", "client closed 1006"]);

    const second = await pair();
    second.net.halfOpen(second.client.id, "server");
    second.net.healAll();
    second.clock.setTimeout(() => {}, 7_200_000);
    await settle(second.clock);
    expect(second.log).toEqual(["server closed 1006"]);
    second.client.ping();
    await settle(second.clock);
    expect(second.log).toEqual(["server closed 1006", "client closed 1006"]);
  });

  it("delivers a ping to the pinged end's onPing handlers in order with frames, and pongs", async () => {
    const { clock, server, client, log } = await pair();
    client.onPing(() => log.push(`client pinged at ${clock.now()}`));
    client.onPing(() => log.push("client pinged again"));
    let pongs = 0;
    server.onPong(() => pongs++);
    server.onPing(() => log.push("server pinged"));
    server.send("before");
    server.ping();
    server.send("after");
    await settle(clock);
    expect(log.map((l) => l.split(" at ")[0])).toEqual([
      "client got before",
      "client pinged",
      "client pinged again",
      "client got after",
    ]);
    expect(pongs).toBe(1);
  });

  it("a killed host: its peers are reset, its listener is gone, its ends fall silent", async () => {
    const { clock, net, server, client, log } = await pair();
    net.killHost("server");
    server.send("from the dead");
    await settle(clock);
    expect(log).toEqual(["client closed 1006"]);
    await expect(net.host("client").connect("memory://s")).rejects.toThrow(/nothing listens/);
    expect(client.bufferedAmount).toBe(0);
  });

  it("refuses a frame over the receiver's limit with 4004", async () => {
    const clock = new SimClock();
    const net = new SimNet(clock, new SimEntropy(1));
    const listener = await net.host("server").listen("memory://s", { maxFrameBytes: 10 });
    const codes: number[] = [];
    listener.onConnection((link) => {
      link.onFrame(() => codes.push(0));
      link.onClose((code) => codes.push(code));
    });
    const client = await net.host("client").connect("memory://s");
    client.onClose((code) => codes.push(code));
    client.send("x".repeat(11));
    await settle(clock);
    expect(codes).toEqual([4004, 4004]);
  });

  it("is deterministic: the same seed delivers at the same times", async () => {
    const times = async (seed: number) => {
      const { clock, client, log } = await pair(seed);
      for (let i = 0; i < 20; i++) client.send(String(i));
      await settle(clock);
      return log.join("|");
    };
    expect(await times(5)).toBe(await times(5));
  });
});
