import { posix } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";

async function settle(clock: SimClock, until = Number.POSITIVE_INFINITY) {
  for (;;) {
    await new Promise((resolve) => setImmediate(resolve));
    if (!clock.fireNext(until)) return;
  }
}

describe("SimFiles", () => {
  it("writes atomically, reads one or many, lists sorted, removes, and counts commits", async () => {
    const clock = new SimClock();
    const files = new SimFiles(new SimEntropy(1));
    const port = files.port(clock.scope());
    const done = Promise.all([
      port.writeAtomic("store/results/ab/x.json", "one"),
      port.writeAtomic("store/results/aa/y.json", "two"),
    ]);
    await settle(clock);
    await done;
    expect(await port.read("store/results/ab/x.json")).toBe("one");
    expect(await port.list("store/results")).toEqual(["aa", "ab"]);
    expect(await port.list("store/nowhere")).toEqual([]);
    expect(await port.read("store/missing")).toBeUndefined();
    expect(
      await port.readMany(["store/results/aa/y.json", "store/missing", "store/results/ab/x.json"]),
    ).toEqual(["two", undefined, "one"]);
    await port.remove("store/results/ab/x.json");
    await port.remove("store/results/ab/x.json");
    expect(await port.list("store/results/ab")).toEqual([]);
    expect(files.commits.get("store/results/aa/y.json")).toBe(1);
    expect(await port.mkdirp("store/logs/a/b")).toBe("store/logs");
    expect(await port.mkdirp("store/logs/a")).toBeUndefined();
    expect(await port.list("store")).toEqual(["logs", "results"]);
    const claims = await Promise.all(
      ["a", "b"].map((who) => port.createExclusive("run/lease", who)),
    );
    expect(claims).toEqual([true, false]);
    expect(await port.read("run/lease")).toBe("a");
  });

  it("removes a folder only once it is empty; one user owns every file", async () => {
    const port = new SimFiles(new SimEntropy(1)).port(new SimClock().scope());
    await port.createExclusive("state/dep-a/rank-0.log", "x");
    expect(await port.owner("state/dep-a/rank-0.log")).toEqual({ uid: 0, self: true });
    expect(await port.owner("state/dep-a")).toEqual({ uid: 0, self: true });
    expect(await port.owner("state/dep-b")).toBeUndefined();
    // No links on the simulated disk: one path, one file.
    expect(await port.sameFile("state/dep-a", "state//dep-a/")).toBe(true);
    expect(await port.sameFile("state/dep-a", "state")).toBe(false);
    expect(await port.sameFile("state/dep-b", "state/dep-b")).toBe(false);
    expect(await port.removeDir("state/dep-a")).toBe(false);
    await port.remove("state/dep-a/rank-0.log");
    expect(await port.removeDir("state/dep-a")).toBe(true);
    expect(await port.list("state")).toEqual([]);
    expect(await port.removeDir("state/dep-a")).toBe(false);
  });

  it("survives a crash: the tree stays, the crashed process's writes stop where they were", async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const clock = new SimClock();
      const files = new SimFiles(new SimEntropy(seed));
      const first = clock.scope();
      const port = files.port(first);
      const old = port.writeAtomic("d/f.json", "old content");
      await settle(clock);
      await old;
      void port.writeAtomic("d/f.json", "new content, longer");
      // Crash at a random moment of the second write.
      await settle(clock, clock.now() + new SimEntropy(seed).int(0, 12));
      first.kill();
      files.crash(first, { torn: seed % 2 === 0 });
      const text = files.peek("d/f.json");
      // Atomic: the target is the old content or the new, whole, never a mix.
      expect(["old content", "new content, longer"]).toContain(text);
      // A dead process's calls never complete.
      let settled = false;
      void port.read("d/f.json").then(() => {
        settled = true;
      });
      await settle(clock);
      expect(settled).toBe(false);
      // A new process reads the tree that survived.
      const next = files.port(clock.scope());
      expect(await next.read("d/f.json")).toBe(text);
    }
  });

  it("tears the temp file of a write caught before its fsync", async () => {
    let torn = 0;
    for (let seed = 1; seed <= 100; seed++) {
      const clock = new SimClock();
      const files = new SimFiles(new SimEntropy(seed));
      const scope = clock.scope();
      void files.port(scope).writeAtomic("d/f.json", "x".repeat(100));
      clock.fireNext();
      await new Promise((resolve) => setImmediate(resolve));
      files.crash(scope, { torn: true });
      const temps = files.paths().filter((p) => p.endsWith(".tmp"));
      if (temps.length === 1 && (files.peek(temps[0]!) ?? "").length < 100) torn++;
      expect(files.peek("d/f.json")).toBeUndefined();
    }
    expect(torn).toBeGreaterThan(50);
  });

  it("dates each file by the virtual time of its write; a rename whose temp was removed fails", async () => {
    const clock = new SimClock();
    const files = new SimFiles(new SimEntropy(1));
    const port = files.port(clock.scope());
    clock.scope().setTimeout(() => {}, 5_000);
    await settle(clock);
    const first = port.writeAtomic("d/f.json", "one");
    await settle(clock);
    await first;
    const at = await port.modifiedAt("d/f.json");
    expect(at).toBeGreaterThanOrEqual(5_000);
    expect(at).toBeLessThanOrEqual(clock.now());
    expect(await port.modifiedAt("d/missing")).toBeUndefined();
    // A sweep removes the temp file while the write waits out a stalled disk.
    files.stall(clock.now() + 10_000);
    const second = port.writeAtomic("d/f.json", "two");
    second.catch(() => {});
    await settle(clock, clock.now() + 5_000);
    const [temp] = files.paths().filter((p) => p.endsWith(".tmp"));
    expect(await port.modifiedAt(temp!)).toBeLessThanOrEqual(clock.now());
    await port.remove(temp!);
    await settle(clock);
    await expect(second).rejects.toMatchObject({ code: "ENOENT" });
    expect(files.peek("d/f.json")).toBe("one");
  });

  it("holds every write at its next fsync while the disk stalls, and reads go on", async () => {
    const clock = new SimClock();
    const files = new SimFiles(new SimEntropy(1));
    const port = files.port(clock.scope());
    files.poke("store/old.json", "old");
    files.stall(30_000);
    let done = false;
    const write = port.writeAtomic("store/x.json", "one").then(() => {
      done = true;
    });
    await settle(clock, 29_999);
    expect(done).toBe(false);
    expect(files.peek("store/x.json")).toBeUndefined();
    expect(await port.read("store/old.json")).toBe("old");
    await settle(clock);
    await write;
    expect(clock.now()).toBeGreaterThanOrEqual(30_000);
    expect(await port.read("store/x.json")).toBe("one");
    expect(files.commits.get("store/x.json")).toBe(1);
  });

  it("refuses a create on a full disk as a write, making nothing, and creates once there is room", async () => {
    const clock = new SimClock();
    const lines: string[] = [];
    const files = new SimFiles(new SimEntropy(1), (line) => lines.push(line));
    const port = files.port(clock.scope());
    files.poke("store/taken.json", "taken");
    files.refuseWrites(5_000);
    // It made its file on a full disk, where a write was refused.
    await expect(port.createExclusive("store/lease.json", "mine")).rejects.toMatchObject({
      code: "ENOSPC",
      message: "ENOSPC: no space left on device, open 'store/lease.json'",
    });
    await expect(port.createExclusive("store/taken.json", "mine")).rejects.toMatchObject({
      code: "ENOSPC",
    });
    expect(files.paths()).toEqual(["store/taken.json"]);
    expect(lines).toEqual([
      "files refused store/lease.json: the disk is full",
      "files refused store/taken.json: the disk is full",
    ]);
    clock.setTimeout(() => {}, 5_000);
    await settle(clock);
    expect(await port.createExclusive("store/lease.json", "mine")).toBe(true);
    expect(await port.createExclusive("store/taken.json", "mine")).toBe(false);
  });
});

describe("SimFiles paths", () => {
  it("finds a file under any spelling of its path, as posix.normalize reads it", () => {
    const segment = fc.constantFrom("a", "b", ".", "..", "", ".x", "x.");
    const path = fc
      .tuple(fc.boolean(), fc.array(segment, { minLength: 1, maxLength: 6 }))
      .map(([absolute, parts]) => `${absolute ? "/" : ""}${parts.join("/")}`);
    fc.assert(
      fc.property(path, (spelled) => {
        const normalised = posix.normalize(spelled).replace(/(.)\/$/, "$1");
        const files = new SimFiles(new SimEntropy(1));
        files.poke(spelled, "data");
        expect(files.peek(normalised)).toBe("data");
        expect(files.paths()).toContain(normalised);
      }),
      { numRuns: 2_000 },
    );
  });
});
