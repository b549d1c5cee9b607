import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import {
  checkConnect,
  coordinatorUrl,
  isLoopback,
  reachedFrom,
  whyNoCoordinator,
  workerConnect,
} from "../../src/runtime/coordinatorAddress.ts";
import { type LocalWorkersOptions, localPool } from "../../src/runtime/localPool.ts";
import { type SlurmPoolOptions, slurmPool } from "../../src/runtime/slurmPool.ts";

describe("coordinatorUrl", () => {
  it("reads HOST:PORT and ws://HOST:PORT, and names no coordinator for port 0 or another shape", () => {
    expect(coordinatorUrl("10.0.0.5:7000")).toBe("ws://10.0.0.5:7000");
    expect(coordinatorUrl("ws://login1.cluster:7000/")).toBe("ws://login1.cluster:7000");
    expect(coordinatorUrl("[::1]:7000")).toBe("ws://[::1]:7000");
    expect(coordinatorUrl("10.0.0.5:0")).toBeUndefined();
    expect(coordinatorUrl("login1.cluster")).toBeUndefined();
    expect(coordinatorUrl("http://login1:7000")).toBeUndefined();
  });
});

describe("whyNoCoordinator", () => {
  // A pasted address with more than the address in it was "it names no port", which it did.
  it.each([
    ["ws://10.0.0.5:7000/run", 'after its port 7000 comes "/run": the address ends at its port'],
    ["10.0.0.5:7000,", 'after its port 7000 comes ",": the address ends at its port'],
    [
      "ws://10.0.0.5:7000'",
      "it holds the quote ': a shell's quotes are not part of the address; give it without them",
    ],
    ["::1:7000", "an IPv6 host goes in brackets: [::1]:7000"],
    ["10.0.0.5:70000", "port 70000 is past 65535, the highest"],
    ["10.0.0.5", "it names no port"],
    [":7000", "it names no host: put the coordinator machine's name or address before the port"],
    ["wss://10.0.0.5:7000", "wss://: a coordinator listens for ws://, without TLS"],
  ])("says what keeps %s from being a coordinator's address", (text, why) => {
    expect(coordinatorUrl(text)).toBeUndefined();
    expect(whyNoCoordinator(text)).toBe(` (${why})`);
  });
});

describe("isLoopback", () => {
  it("names this machine's loopback addresses, and no other address or name", () => {
    for (const address of [
      "ws://127.0.0.1:41234",
      "127.0.1.1:7000",
      "[::1]:7000",
      "localhost:7000",
    ]) {
      expect(isLoopback(address)).toBe(true);
    }
    for (const address of [
      "ws://10.0.0.5:7000",
      "ws://login1:7000",
      "ws://0.0.0.0:7000",
      "memory://run-1",
    ]) {
      expect(isLoopback(address)).toBe(false);
    }
  });
});

describe("connect, as localPool and slurmPool take it", () => {
  const make = {
    localPool: (connect: unknown) =>
      localPool({ jobsModule: "jobs.ts", count: 0, connect } as unknown as LocalWorkersOptions),
    slurmPool: (connect: unknown) =>
      slurmPool({ jobsModule: "/shared/jobs.ts", connect } as unknown as SlurmPoolOptions),
  };

  it.each(Object.entries(make))("%s takes an address a worker can reach", (_, pool) => {
    for (const connect of [undefined, "login1:7000", "ws://10.0.0.5:7000", "[fd00::5]:7000"]) {
      expect(() => pool(connect)).not.toThrow();
    }
  });

  it.each([
    ["login1", 'not "login1" (it names no port)'],
    [
      "login1:0",
      'a port other than 0), not "login1:0" (port 0 is baton run --listen\'s any free port',
    ],
    ["ws://login1:7000/run", 'not "ws://login1:7000/run" (after its port 7000 comes "/run"'],
    ["fd00::5:7000", "(an IPv6 host goes in brackets: [fd00::5]:7000)"],
    [7000, "not 7000"],
    ["", 'not ""'],
  ])("refuses %o, saying what to give, in both pools", (connect, said) => {
    for (const [where, pool] of Object.entries(make)) {
      expect(() => pool(connect)).toThrow(ConfigError);
      expect(() => pool(connect)).toThrow(
        `${where}: connect must be the coordinator's address as its workers reach it, HOST:PORT or ws://HOST:PORT such as login1.cluster:7000`,
      );
      expect(() => pool(connect)).toThrow(said);
    }
  });

  it.each(["0.0.0.0:7000", "ws://[::]:7000"])(
    "refuses the wildcard %s it stands in for",
    (connect) => {
      expect(() => checkConnect("slurmPool", connect)).toThrow(
        `slurmPool: connect ${connect} names every interface of the coordinator's machine, which no worker elsewhere reaches; give that machine's name`,
      );
      expect(() => make.localPool(connect)).toThrow("localPool: connect");
    },
  );

  it("is the workers' --connect when given, else where the coordinator listens", () => {
    expect(workerConnect("login1:7000", "ws://0.0.0.0:7000")).toBe("login1:7000");
    expect(workerConnect(undefined, "ws://0.0.0.0:7000")).toBe("ws://0.0.0.0:7000");
  });

  it("for workers elsewhere, names this machine in place of a wildcard host, keeping the port", () => {
    expect(workerConnect(undefined, "ws://0.0.0.0:7000", "login1")).toBe("ws://login1:7000");
    expect(workerConnect(undefined, "ws://[::]:7001", "login1")).toBe("ws://login1:7001");
    expect(workerConnect(undefined, "ws://10.0.0.5:7000", "login1")).toBe("ws://10.0.0.5:7000");
    expect(workerConnect("login1.ib:7000", "ws://0.0.0.0:7000", "login1")).toBe("login1.ib:7000");
  });

  it("leaves an address of another transport as it is, for workers elsewhere too", () => {
    expect(reachedFrom("memory://run-1", "login1")).toBe("memory://run-1");
    expect(workerConnect(undefined, "memory://run-1", "login1")).toBe("memory://run-1");
  });
});
