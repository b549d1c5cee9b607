import { AsyncResource } from "node:async_hooks";
import { EventEmitterAsyncResource } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { job } from "../../src/graph/job.ts";
import { POOL_STOP_GRACE_MS } from "../../src/runtime/workerPool.ts";
import { drawFaults, formatFaults, parseFaults } from "../../src/sim/faultPlan.ts";
import { shrink } from "../../src/sim/shrink.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import type { SimTools } from "../../src/sim/simGraph.ts";
import { simulate } from "../../src/sim/simulate.ts";
import chargesGraph from "../fixtures/simCharges.graph.ts";
import chargesHandlers from "../fixtures/simCharges.sim.ts";
import needsGraph from "../fixtures/simNeeds.graph.ts";
import needsHandlers from "../fixtures/simNeeds.sim.ts";

/** What `run` gave, and how many turns the event loop took meanwhile. */
async function countingTurns<T>(run: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let next: NodeJS.Immediate | undefined;
  const count = (): void => {
    turns++;
    next = setImmediate(count);
  };
  next = setImmediate(count);
  try {
    const result = await run();
    return { result, turns };
  } finally {
    clearImmediate(next);
  }
}

describe("simulate", () => {
  it("gives the same trace, byte for byte, for the same seed, and another for another seed", async () => {
    const options = { jobs: 15, workers: 3, faults: "heavy" as const };
    const a = await simulate({ seed: 11, ...options });
    const b = await simulate({ seed: 11, ...options });
    const c = await simulate({ seed: 12, ...options });
    expect(a.trace.length).toBeGreaterThan(50);
    expect(b.trace).toEqual(a.trace);
    expect(b.traceHash).toBe(a.traceHash);
    expect(c.traceHash).not.toBe(a.traceHash);
  });

  it("gives the event loop a turn every hundred steps of the drawn graph, not every step", async () => {
    const { result, turns } = await countingTurns(() =>
      simulate({ seed: 3, jobs: 20, workers: 3, ranks: false }),
    );
    expect(result.ok).toBe(true);
    expect(result.steps).toBeGreaterThan(500);
    // The loop still turns (a thread's messages, a signal), but a step costs no turn of it.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(result.steps / 100));
    expect(turns).toBeLessThan(result.steps / 50);
  });

  it("takes a turn of the event loop for your handlers only while one of their immediates waits, and waits for their ticks without one", async () => {
    const own = { graph: job("hold", 1), workers: 8, faults: "none" as const, ranks: false };
    // Handlers that only sleep take a turn every hundred steps, as the drawn ones do.
    const quiet = await countingTurns(() =>
      simulate({ ...own, seed: 1, handlers: ({ sleep }) => ({ hold: () => sleep(600_000) }) }),
    );
    expect(quiet.result.ok).toBe(true);
    expect(quiet.result.steps).toBeGreaterThan(1_000);
    expect(quiet.turns).toBeLessThan(quiet.result.steps / 50);
    // Chains of ticks, each queued from the last one's continuation, in async functions awaited
    // in turn, from handlers that start at each of a worker's steps: all run before the next
    // step, as with a turn, so no virtual time passes over them.
    const ticked = async (n: number): Promise<void> => {
      await new Promise((resolve) => process.nextTick(resolve));
      if (n > 1) await ticked(n - 1);
    };
    const ticks = await simulate({
      ...own,
      graph: Array.from({ length: 8 }, (_, i) => job("hold", i)),
      seed: 1,
      handlers: ({ now, invariant }) => ({
        hold: async (i: number) => {
          const at = now();
          for (let n = 1; n <= 4; n++) {
            await ticked(n + (i % 3));
            invariant(now() === at, `ticks ${n} ran at ${now()}, queued at ${at}`);
          }
        },
      }),
    });
    expect(ticks.violation).toBeUndefined();
    // A handler that polls with immediates for what another's sleep sets: a step each turn.
    let set = false;
    const polled = await countingTurns(() =>
      simulate({
        graph: [job("poll", 1), job("set", 2)],
        workers: 2,
        faults: "none",
        ranks: false,
        seed: 1,
        handlers: ({ sleep }) => ({
          poll: async () => {
            while (!set) await new Promise((resolve) => setImmediate(resolve));
          },
          set: async () => {
            await sleep(30_000);
            set = true;
          },
        }),
      }),
    );
    expect(polled.result.violation).toBeUndefined();
    expect(polled.result.counts.completed).toBe(2);
    expect(polled.turns).toBeGreaterThan(polled.result.steps / 2);
  });

  it("runs a user's graph and handlers in virtual time", async () => {
    const fetch = job("fetch", 21);
    const double = job("double", null, { after: [fetch] });
    const events: string[] = [];
    let inspected = 0;
    const report = await simulate({
      seed: 3,
      graph: [double],
      handlers: ({ sleep }) => ({
        fetch: async (n: number) => {
          await sleep(3_600_000);
          return n;
        },
        double: (_: null, ctx) => (ctx.results[0] as number) * 2,
      }),
      workers: 2,
      faults: "none",
      until: 7_200_000,
      onEvent: ({ at, event }) => events.push(`${at} ${event}`),
      inspect: () => {
        inspected++;
      },
    });
    expect(report.ok).toBe(true);
    expect(report.counts.completed).toBe(2);
    // What each handler returned, per job, as engine.run's result has it.
    const outcomes = [...report.outcomes.values()];
    expect(
      outcomes.map(({ kind, status, value, attempts }) => ({ kind, status, value, attempts })),
    ).toEqual([
      { kind: "fetch", status: "completed", value: 21, attempts: 1 },
      { kind: "double", status: "completed", value: 42, attempts: 1 },
    ]);
    expect([...report.outcomes!.keys()]).toEqual(outcomes.map((outcome) => outcome.id));
    expect(report.virtualMs).toBeGreaterThanOrEqual(3_600_000);
    expect(report.wallMs).toBeLessThan(report.virtualMs);
    expect(events).toEqual([...report.trace]);
    expect(inspected).toBeGreaterThan(0);
    // Each grant names the job by its kind and input: the ids alone say nothing to a reader.
    const grants = report.trace.filter((line) => / grant /.test(line));
    expect(grants).toEqual([
      expect.stringMatching(/^\d+ grant [0-9a-f]{16} \(fetch 21\) to sim:\d+ attempt 1$/),
      expect.stringMatching(/^\d+ grant [0-9a-f]{16} \(double\) to sim:\d+ attempt 1$/),
    ]);
  });

  it("draws rank groups beside a graph of your own only when world or ranks: true asks, and beside the drawn graph unless ranks: false", async () => {
    const yours = {
      seed: 5,
      graph: [job("fetch", 1)],
      handlers: { fetch: (n: number) => n },
      workers: 1,
      faults: "none" as const,
    };
    const drawnGraph = { seed: 5, jobs: 2, workers: 1, faults: "none" as const };
    /** The rank lists of the launches a seed traced (`ranks launch N dep by launcher P: [...]`). */
    const launches = async (options: Parameters<typeof simulate>[0]) =>
      (await simulate(options)).trace.flatMap((line) => {
        const ranks = / ranks launch \d+ \S+ by launcher \d+(?: contained)?: (\[.*?\])/.exec(line);
        return ranks ? [JSON.parse(ranks[1]!) as unknown[]] : [];
      });
    expect(await launches(yours)).toEqual([]);
    const sized = await launches({ ...yours, world: 2 });
    expect(sized.length).toBeGreaterThan(0);
    expect(Math.max(...sized.map((ranks) => ranks.length))).toBeLessThanOrEqual(2);
    expect((await launches({ ...yours, ranks: true })).length).toBeGreaterThan(0);
    expect((await launches(drawnGraph)).length).toBeGreaterThan(0);
    expect(await launches({ ...drawnGraph, ranks: false })).toEqual([]);
  });

  it("runs a plain handler of a rank job's kind as the group's stand-in, with the job's ranks", async () => {
    const train = job("train", { lr: 0.1 }, { ranks: 4 });
    const score = job("score", null, { after: [train] });
    const seen: (number | undefined)[] = [];
    const report = await simulate({
      seed: 5,
      graph: [score],
      handlers: ({ sleep }) => ({
        train: async (_: { lr: number }, ctx) => {
          seen.push(ctx.job.ranks);
          await sleep(60_000);
          // The group's first launch fails, as a failing rank fails it; the retry succeeds.
          if (ctx.job.attempt === 1) throw new Error("rank 2 exited with code 1");
          return { worldSize: ctx.job.ranks ?? 0 };
        },
        score: (_: null, ctx) => ctx.results[0],
      }),
      workers: 2,
      faults: "none",
      ranks: false,
    });
    expect(report.violation).toBeUndefined();
    expect(report.counts.completed).toBe(2);
    expect(seen).toEqual([4, 4]);
  });

  it("runs a rank job that only ctx.need adds on its kind's stand-in", async () => {
    const report = await simulate({
      seed: 1,
      graph: [job("prep", 1)],
      handlers: ({ sleep }) => ({
        prep: (_: number, ctx) => ctx.need(job("train", 1, { ranks: 2 }))[0],
        train: async (_: number, ctx) => {
          await sleep(10_000);
          return ctx.job.ranks ?? 0;
        },
      }),
      faults: "none",
      ranks: false,
    });
    expect(report.failed).toEqual([]);
    expect(report.counts.completed).toBe(2);
  });

  it("tells a ctx.need of a kind your handlers lack to add it to simulate's handlers option", async () => {
    const report = await simulate({
      seed: 1,
      graph: [job("crawl", null)],
      handlers: { crawl: (_: null, ctx) => ctx.need(job("page", "https://a.example")) },
      faults: "none",
      ranks: false,
    });
    expect(report.failed.map((f) => f.message)).toEqual([
      'Unknown job kind "page" (1 job). Add a handler for it to the handlers option of simulate, or fix the kind. The handlers option of simulate defines "crawl".',
    ]);
  });

  it("calls a handlers function again after a coordinator crash, as README says", async () => {
    let made = 0;
    const report = await simulate({
      seed: 1,
      graph: [job("work", 1)],
      handlers: ({ sleep }) => {
        made++;
        return { work: () => sleep(20_000) };
      },
      faults: parseFaults("coordinator-crash@5000+1000/clean"),
      ranks: false,
    });
    expect(report.violation).toBeUndefined();
    expect(report.trace).toContain("6000 start coordinator-1");
    expect(made).toBe(2);
  });

  it("notes what a job of your graph's ctx.need asked for, by kind and input, out of the trace hash", async () => {
    const needed = [job("page", "https://a.example"), job("page", "https://b.example")];
    const report = await simulate({
      seed: 1,
      graph: [job("crawl", null)],
      handlers: ({ sleep }) => ({
        page: async (url: string) => {
          await sleep(100);
          return url.length;
        },
        crawl: (_: null, ctx) => ctx.need(...needed),
      }),
      workers: 1,
      faults: "none",
      ranks: false,
    });
    expect(report.violation).toBeUndefined();
    const [crawl] = [...report.outcomes.values()].filter((o) => o.kind === "crawl");
    const [a, b] = [...report.outcomes.values()].filter((o) => o.kind === "page").map((o) => o.id);
    const note = `# ${crawl!.id} (crawl) needs ${a} (page "https://a.example"), ${b} (page "https://b.example")`;
    const at = report.trace.findIndex((line) => line.endsWith(note));
    expect(at).toBeGreaterThan(0);
    expect(report.trace[at - 1]).toMatch(new RegExp(` job ${crawl!.id} blocked$`));
  });

  it("passes a needed job and its dependency both stored before a coordinator crash: the next coordinator takes them from the store, neither ready on the way (own graph, heavy seed 47)", async () => {
    const mid = job("mid", 1, { after: [job("leaf", 1)] });
    const report = await simulate({
      seed: 1,
      graph: [job("top", null)],
      handlers: ({ sleep }) => ({
        leaf: async () => sleep(100),
        mid: async () => sleep(100),
        top: async (_: null, ctx) => {
          await ctx.need(mid);
          await sleep(10_000);
        },
      }),
      workers: 1,
      // Both needed jobs are stored by 5 s; top, running again after them, is not.
      faults: parseFaults("coordinator-crash@5000+1000/clean"),
      ranks: false,
    });
    expect(report.violation).toBeUndefined();
    const after = report.trace.slice(report.trace.indexOf("6000 start coordinator-1"));
    const needed = [...report.outcomes.values()].filter((o) => o.kind !== "top");
    expect(needed.map((o) => [o.kind, o.cached])).toEqual([
      ["leaf", true],
      ["mid", true],
    ]);
    for (const { id } of needed) {
      expect(after.filter((line) => line.includes(` job ${id} `))).toEqual([
        expect.stringMatching(/^6006 job [0-9a-f]{16} completed$/),
      ]);
    }
  });

  it.each([10, 11, 19, 26])(
    "passes heavy seed %i of ctx.need chains across two coordinator crashes: every reader is given the one stored value (simNeeds)",
    async (seed) => {
      const report = await simulate({
        seed,
        graph: needsGraph,
        handlers: needsHandlers,
        workers: 2,
        faults: "heavy",
      });
      expect(report.violation).toBeUndefined();
      expect(report.faults.filter((fault) => fault.kind === "coordinator-crash")).toHaveLength(2);
      // The next coordinator took jobs from the store, and every job completed.
      expect(report.counts.cached).toBeGreaterThan(0);
      expect(report.failed).toEqual([]);
    },
  );

  it("gives what tools.keep makes to every incarnation of a seed, and a new one to the next seed", async () => {
    const worlds: Map<number, number>[] = [];
    const run = () =>
      simulate({
        seed: 1,
        graph: [job("charge", 7)],
        handlers: ({ sleep, keep }) => {
          const charged = keep("charged", () => {
            const made = new Map<number, number>();
            worlds.push(made);
            return made;
          });
          return {
            charge: async (id: number) => {
              charged.set(id, (charged.get(id) ?? 0) + 1);
              await sleep(20_000);
              return charged.get(id);
            },
          };
        },
        faults: parseFaults("coordinator-crash@5000+1000/clean"),
        ranks: false,
      });
    const first = await run();
    expect(first.violation).toBeUndefined();
    // The crash cut the first attempt short: the second incarnation charged the same world again.
    expect(worlds).toHaveLength(1);
    expect([...first.outcomes.values()].map((o) => o.value)).toEqual([2]);
    const second = await run();
    expect(worlds).toHaveLength(2);
    expect(second.traceHash).toBe(first.traceHash);
    expect([...second.outcomes.values()].map((o) => o.value)).toEqual([2]);
  });

  it("fails the seed when a check of your handlers' (tools.invariant) does not hold, naming the job", async () => {
    const yours = { seed: 1, graph: chargesGraph, handlers: chargesHandlers, ranks: false };
    const calm = await simulate({ ...yours, workers: 1, faults: "none" });
    expect(calm.ok).toBe(true);
    const reconciled = [...calm.outcomes.values()].find((o) => o.kind === "reconcile");
    expect(reconciled?.value).toBe(3);
    // The worker dies during the first charge: its next attempt charges the order again.
    const crashed = await simulate({
      ...yours,
      workers: 1,
      faults: parseFaults("worker-crash@500:0"),
    });
    expect(crashed.ok).toBe(false);
    expect(crashed.violation).toEqual({
      invariant: 15,
      message: expect.stringMatching(
        /^invariant 15 \(your handlers' own checks hold \(the tools' invariant\)\) violated: job [0-9a-f]{16} \(reconcile\): order \d charged 2 times$/,
      ),
    });
    expect(crashed.trace.at(-1)).toBe(
      `${crashed.virtualMs} violation 15: ${crashed.violation!.message}`,
    );
    const small = await shrink(crashed, {
      graph: chargesGraph,
      handlers: chargesHandlers,
      ranks: false,
    });
    expect(small.result.violation?.invariant).toBe(15);
  });

  it("says when and where a handlers function threw, at the start or only at a restart, as a ConfigError", async () => {
    let made = 0;
    const restart = simulate({
      seed: 1,
      graph: [job("work", 1)],
      handlers: ({ sleep }) => {
        if (++made > 1) throw new TypeError("config.url is undefined");
        return { work: () => sleep(20_000) };
      },
      faults: parseFaults("coordinator-crash@5000+1000/clean"),
      ranks: false,
    });
    await expect(restart).rejects.toThrow(ConfigError);
    await expect(restart).rejects.toThrow(
      /^simulate: seed 1: your handlers function threw when coordinator-1 started, after a coordinator crash: TypeError: config.url is undefined \(at .*simulate\.test\.ts:\d+:\d+\)\. It is called for each coordinator incarnation/,
    );
    const never = simulate({
      seed: 2,
      graph: [job("work", 1)],
      handlers: () => {
        throw new Error("no config");
      },
      ranks: false,
    });
    await expect(never).rejects.toThrow(
      /^simulate: seed 2: your handlers function threw when coordinator-0 started: Error: no config/,
    );
    const later = simulate({
      seed: 1,
      graph: [job("work", 1)],
      // A JavaScript module (or an untyped export) can: TypeScript refuses it.
      handlers: (async () => ({ work: () => 1 })) as never,
      ranks: false,
    });
    await expect(later).rejects.toThrow(
      "simulate: your handlers function returned a Promise: it must return the job module itself (work)",
    );
  });

  it("writes what your handlers log (ctx.log, info and above) into the trace, at its virtual time", async () => {
    const run = () =>
      simulate({
        seed: 1,
        graph: [job("charge", 7)],
        handlers: ({ sleep }) => ({
          charge: async (order: number, ctx) => {
            await sleep(250);
            ctx.log.info({ order, balance: 90 }, "read balance");
            ctx.log.debug("not this one");
            ctx.log.warn("paid");
            return order;
          },
        }),
        faults: "none",
        ranks: false,
      });
    const report = await run();
    expect(report.ok).toBe(true);
    const logged = report.trace.filter((line) => line.includes(" log "));
    expect(logged).toEqual([
      expect.stringMatching(
        /^\d+ log [0-9a-f]{16} \(charge\) attempt 1 info: read balance \{"order":7,"balance":90\}$/,
      ),
      expect.stringMatching(/^\d+ log [0-9a-f]{16} \(charge\) attempt 1 warn: paid$/),
    ]);
    expect(Number(logged[0]!.split(" ")[0])).toBeGreaterThanOrEqual(250);
    expect((await run()).traceHash).toBe(report.traceHash);
  });

  it("notes in the trace, outside its hash, a handler that ran on after its attempt was aborted", async () => {
    const run = () =>
      simulate({
        seed: 1,
        graph: [job("deaf", 1, { timeoutMs: 100 }), job("heeds", 2, { timeoutMs: 100 })],
        handlers: ({ sleep }) => ({
          // Does not look at its signal: it runs its whole second after the timeout aborts it.
          deaf: async (n: number) => {
            await sleep(1_000);
            return n;
          },
          // Stops as its signal fires: nothing to note.
          heeds: (_: number, ctx) =>
            new Promise((_resolve, reject) =>
              ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
            ),
        }),
        faults: "none",
        ranks: false,
      });
    const report = await run();
    const notes = report.trace.filter((line) => / # /.test(line));
    expect(notes).toEqual([
      expect.stringMatching(
        /^\d+ # ([0-9a-f]{16}) \(deaf\) attempt 1: its handler ended (\d+) ms after its abort \(job \1 \(deaf\) ran longer than its timeout of 100 ms \(attempt 1\)/,
      ),
    ]);
    // Of its second, what was left when the timeout aborted it, about 100 ms in.
    const ranOn = Number(/ended (\d+) ms/.exec(notes[0]!)![1]);
    expect(ranOn).toBeGreaterThan(850);
    expect(ranOn).toBeLessThan(1_000);
    // It comes before the result its worker could send only once the handler had ended.
    const [at, , deaf] = notes[0]!.split(" ");
    const result = report.trace.findIndex((line) => line.includes(`> server result ${deaf} `));
    expect(report.trace.indexOf(notes[0]!)).toBeLessThan(result);
    expect(Number(report.trace[result]!.split(" ")[0])).toBeGreaterThanOrEqual(Number(at));
    // The same seed gives the same note; the hash is the events' alone.
    const again = await run();
    expect(again.trace).toEqual(report.trace);
    const events = report.trace.filter((line) => !notes.includes(line));
    const { createHash } = await import("node:crypto");
    const hashOf = (lines: string[]) =>
      createHash("sha256")
        .update(lines.map((line) => `${line}\n`).join(""))
        .digest("hex")
        .slice(0, 16);
    expect(report.traceHash).toBe(hashOf(events));
  });

  it("notes a lost worker's handler that ran on after its abort; the worker (a pool of 1) rejoins, and attempt 2 starts, only once it ended", async () => {
    const report = await simulate({
      seed: 1,
      workers: 1,
      graph: [job("deaf", 1)],
      handlers: ({ sleep }) => ({
        deaf: async (n: number) => {
          await sleep(5_000);
          return n;
        },
      }),
      faults: parseFaults("reset@1000:0"),
      ranks: false,
    });
    expect(report.ok).toBe(true);
    const note = report.trace.findIndex((line) => / # /.test(line));
    expect(report.trace[note]).toMatch(
      /^\d+ # ([0-9a-f]{16}) \(deaf\) attempt 1: its handler ended \d+ ms after its abort \(connection closed: connection reset/,
    );
    // One job at a time: attempt 2 was granted only after attempt 1's handler ended (it used
    // to be granted at 1003 ms, beside it).
    const second = report.trace.findIndex((line) =>
      / grant \S+ \(deaf 1\) to \S+ attempt 2$/.test(line),
    );
    const completed = report.trace.findIndex((line) =>
      / > server result \S+ completed$/.test(line),
    );
    expect(note).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(note);
    expect(completed).toBeGreaterThan(second);
  });

  it("refuses a kind defined { ranks }, which launched real processes, saying to give a stand-in", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-sim-ranks-"));
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const run = simulate({
        seed: 1,
        graph: [job("train", null, { ranks: 2 })],
        // A rank that exits at once: without the refusal, the real launcher started it.
        handlers: { train: { ranks: () => ["true"] } },
        ranks: false,
        faults: "none",
        until: 60_000,
      });
      await expect(run).rejects.toThrow(ConfigError);
      await expect(run).rejects.toThrow(
        'simulate: handlers defines kind "train" as { ranks }, which launches real processes, and the simulation starts none: give a plain handler that stands in for the group instead',
      );
      // No deployment was launched: the real launcher's state dir is never made.
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      process.chdir(cwd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names the jobs still running when a handler waits outside virtual time, and why", async () => {
    const stuck = job("fetch", 1);
    const report = await simulate({
      seed: 1,
      graph: [stuck, job("parse", 2)],
      // Waits on something the simulation never reaches, as a real timer or socket would.
      handlers: { fetch: () => new Promise(() => {}), parse: (n: number) => n },
      workers: 2,
      faults: "none",
      ranks: false,
      until: 60_000,
    });
    expect(report.ok).toBe(false);
    expect(report.violation?.invariant).toBe(6);
    const message = report.violation!.message;
    expect(message).toMatch(
      /^invariant 6 \(the run and the rank groups end in time, every job completed or failed with a message\) violated: the run is not over at 60000 virtual ms/,
    );
    expect(message).toMatch(/still running: [0-9a-f]{16} \(fetch\)\. If their handlers wait on/);
    expect(message).toContain("such as a real setTimeout or real I/O");
    expect(message).not.toContain("(parse)");
    // until was given: the default bound is not what cut it off.
    expect(message).not.toContain("give until");
  });

  it("counts and bounds your graph by its jobs, not the roots it was given by", async () => {
    // A chain of 4 jobs of 250 virtual s each, given by its last job: 1,000 s of work, which
    // a bound sized for 1 job (10 minutes + 4 minutes) cut off.
    let last = job("step", 0);
    for (let i = 1; i < 4; i++) last = job("step", i, { after: [last] });
    const report = await simulate({
      seed: 1,
      graph: last,
      handlers: ({ sleep }) => ({
        step: async (i: number) => {
          await sleep(250_000);
          return i;
        },
      }),
      workers: 1,
      faults: "none",
      ranks: false,
    });
    expect(report.violation).toBeUndefined();
    expect(report.jobs).toBe(4);
    expect(report.trace[0]).toMatch(/^0 sim seed 1 jobs 4 workers 1 /);
  });

  it("says a job that only outlasts the default bound needs until, when none was given", async () => {
    const report = await simulate({
      seed: 1,
      graph: job("train", 1),
      handlers: ({ sleep }) => ({ train: () => sleep(3_600_000) }),
      workers: 1,
      faults: "none",
      ranks: false,
    });
    expect(report.violation?.invariant).toBe(6);
    expect(report.violation?.message).toContain(
      "if they only take longer than the default bound allows (10 virtual minutes after the faults, and 4 minutes a job for each worker: 1 job on 1 worker), give until, the virtual ms by which your run must be over",
    );
  });

  it("says when until comes before the faults end, instead of that they ended", async () => {
    const report = await simulate({
      seed: 1,
      jobs: 5,
      workers: 1,
      ranks: false,
      faults: parseFaults("partition@5000:0+1000"),
      until: 10,
    });
    expect(report.violation?.invariant).toBe(6);
    expect(report.violation?.message).toContain(
      "the run is not over at 10 virtual ms (the faults end later, at 6000 ms: a run is only bound to be over once its faults are; give until (baton sim's --until) after 6000 ms, or fewer faults)",
    );
  });

  it("fails a seed whose handler waits on a real timer or real I/O, naming the job (invariant 0)", async () => {
    const options = { seed: 2, workers: 2, faults: "none" as const, ranks: false };
    const timer = await simulate({
      ...options,
      graph: [job("poll", 1), job("parse", 2)],
      // A real 5 ms timer fires after 5 real ms: at whatever virtual time the run has reached.
      handlers: {
        poll: async (n: number) => {
          await new Promise((resolve) => setTimeout(resolve, 5));
          return n;
        },
        parse: (n: number) => n,
      },
    });
    expect(timer.ok).toBe(false);
    expect(timer.violation?.invariant).toBe(0);
    expect(timer.violation?.message).toMatch(
      /^invariant 0 \(a seed gives the same trace on every run\) violated: the handler of job [0-9a-f]{16} \(poll\) started a real timer \(setTimeout or setInterval\), whose callback ran when real time/,
    );
    expect(timer.violation?.message).toContain("Wait with the simulation tools' sleep instead");

    const io = await simulate({
      ...options,
      graph: job("read", 1),
      handlers: { read: async () => (await readFile(new URL(import.meta.url), "utf8")).length },
    });
    expect(io.violation?.invariant).toBe(0);
    expect(io.violation?.message).toMatch(/\(read\) started real file I\/O \(FSREQ/);
    // What to do about a file: not the timer's advice, which a file read cannot follow.
    expect(io.violation?.message).toContain(
      "Read the file synchronously instead (readFileSync: synchronous I/O takes no virtual time",
    );
    expect(timer.violation?.message).not.toContain("readFileSync");
  });

  it("fails a seed whose handler reads the real clock or real randomness, naming the job, the call and the tool (invariant 0)", async () => {
    const options = { seed: 3, workers: 2, faults: "none" as const, ranks: false };
    const reads: [string, () => unknown, string][] = [
      ["Date.now()", () => Date.now(), "now"],
      ["new Date()", () => new Date().toISOString(), "now"],
      ["performance.now()", () => performance.now(), "now"],
      ["Math.random()", () => Math.random(), "random"],
      ["crypto.randomUUID()", () => crypto.randomUUID(), "random"],
      // A library's read names the line of yours that called the library.
      ["Date.now()", () => pino.stdTimeFunctions.epochTime(), "now"],
    ];
    for (const [api, read, tool] of reads) {
      const report = await simulate({
        ...options,
        graph: [job("stamp", 1), job("plain", 2)],
        // The read comes after a sleep: the handler's context follows it through awaits.
        handlers: ({ sleep }) => ({
          stamp: async () => {
            await sleep(100);
            return String(read());
          },
          plain: (n: number) => n,
        }),
      });
      expect(report.violation?.invariant, api).toBe(0);
      expect(report.violation?.message).toMatch(
        new RegExp(
          `^invariant 0 \\(a seed gives the same trace on every run\\) violated: the handler of job [0-9a-f]{16} \\(stamp\\) called ${api.replace(/[().]/g, "\\$&")} \\(at .*simulate\\.test\\.ts:\\d+:\\d+\\), which `,
        ),
      );
      expect(report.violation?.message).toContain(`Use the simulation tools' ${tool} (`);
    }
  });

  it("names the first of a read and real work seen in one step, whichever real time landed first (a fetch reads the clock, then connects)", async () => {
    const report = await simulate({
      seed: 3,
      graph: job("stamp", 1),
      handlers: {
        stamp: async () => {
          const stamped = Date.now();
          const landed = new Promise((resolve) => setTimeout(resolve, 1));
          // The timer is due before the runner's next check: it fires first.
          const due = performance.now() + 5;
          while (performance.now() < due);
          await landed;
          return stamped;
        },
      },
      faults: "none",
      ranks: false,
    });
    expect(report.violation?.message).toMatch(/\(stamp\) called Date\.now\(\) \(at /);
  });

  it("fails a seed whose handler reads the real clock or starts a real timer in an abort listener, naming the job (invariant 0)", async () => {
    // The engine aborts the signal where it stops the attempt: its listeners ran there, outside
    // the handler's context, and these seeds passed.
    const listeners: [string, (signal: AbortSignal) => void, RegExp][] = [
      [
        "addEventListener",
        (s) => s.addEventListener("abort", () => Date.now()),
        /called Date\.now\(\)/,
      ],
      ["onabort", (s) => (s.onabort = () => Math.random()), /called Math\.random\(\)/],
      [
        "AbortSignal.any",
        (s) => AbortSignal.any([s]).addEventListener("abort", () => new Date()),
        /called new Date\(\)/,
      ],
      [
        "a timer",
        (s) => s.addEventListener("abort", () => setTimeout(() => {}, 60_000).unref()),
        /started a real timer/,
      ],
    ];
    for (const [name, listen, what] of listeners) {
      const report = await simulate({
        seed: 2,
        graph: [job("slow", 1, { timeoutMs: 1_000, retries: 0 }), job("plain", 2)],
        handlers: ({ sleep }) => ({
          slow: async (_: number, ctx) => {
            listen(ctx.signal);
            await sleep(60_000);
          },
          plain: (n: number) => n,
        }),
        faults: "none",
        ranks: false,
      });
      expect(report.violation?.invariant, name).toBe(0);
      expect(report.violation?.message, name).toMatch(/the handler of job [0-9a-f]{16} \(slow\) /);
      expect(report.violation?.message, name).toMatch(what);
    }
    // A listener that only stops the handler still sees the engine's reason, and passes.
    const stopped = await simulate({
      seed: 2,
      graph: job("slow", 1, { timeoutMs: 1_000, retries: 0 }),
      handlers: {
        slow: (_: number, ctx) =>
          new Promise((_resolve, reject) =>
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
          ),
      },
      faults: "none",
      ranks: false,
    });
    expect(stopped.violation).toBeUndefined();
    expect(stopped.failed[0]?.message).toContain("ran longer than its timeout of 1000 ms");
  });

  it("fails a seed whose handler leaves a real timer it neither awaited nor cleared, which fired during the run only on a slow machine (invariant 0)", async () => {
    const left: [string, () => unknown][] = [
      ["setTimeout", () => setTimeout(() => {}, 60_000).unref()],
      ["setInterval", () => setInterval(() => {}, 60_000).unref()],
      ["AbortSignal.timeout", () => AbortSignal.timeout(60_000)],
    ];
    for (const [name, start] of left) {
      const report = await simulate({
        seed: 2,
        graph: [job("fire", 1), job("plain", 2)],
        handlers: {
          fire: (n: number) => {
            start();
            return n;
          },
          plain: (n: number) => n,
        },
        faults: "none",
        ranks: false,
      });
      expect(report.violation?.invariant, name).toBe(0);
      expect(report.violation?.message, name).toMatch(
        /the handler of job [0-9a-f]{16} \(fire\) started a real timer \(setTimeout or setInterval\) that had not fired when the run was over: .* or clear it before the handler returns$/,
      );
    }
    // Cleared at the last moment (Node tells of it a turn of the event loop later): no harm.
    const cleared = await simulate({
      seed: 2,
      graph: job("fire", 1),
      handlers: {
        fire: (n: number) => {
          const guard = setTimeout(() => {}, 60_000);
          setImmediate(() => clearTimeout(guard));
          return n;
        },
      },
      faults: "none",
      ranks: false,
    });
    expect(cleared.violation).toBeUndefined();
  });

  it("does not take a library's own AsyncResource, nor sync zlib's handle, for real work", async () => {
    // p-limit runs its queue through AsyncResource.bind: these seeds failed invariant 0 as
    // "real asynchronous work (bound-anonymous-fn)".
    const report = await simulate({
      seed: 2,
      graph: [job("bound", 1), job("emitter", 2), job("zip", 3)],
      handlers: ({ sleep }) => ({
        bound: async (n: number) => {
          await sleep(10);
          return AsyncResource.bind(() => n)();
        },
        emitter: (n: number) => {
          const events = new EventEmitterAsyncResource({ name: "Queue" });
          events.on("next", () => {});
          events.emit("next");
          events.emitDestroy();
          return n;
        },
        zip: (n: number) => gzipSync(String(n)).length,
      }),
      faults: "none",
      ranks: false,
    });
    expect(report.violation).toBeUndefined();
    expect(report.counts.completed).toBe(3);
  });

  it("traps the real clock only while a simulation runs, for its own handlers, and puts it back even when the run throws", async () => {
    const real = { Date, now: Date.now, random: Math.random, uuid: crypto.randomUUID };
    // Two at once in this thread: one handler reads Date.now, the other only the tools. Reads
    // outside a handler (the handlers function here, the engine, XState) are not a handler's.
    const own = { graph: job("stamp", 1), faults: "none" as const, ranks: false };
    const [reads, calm] = await Promise.all([
      simulate({ ...own, seed: 5, handlers: () => ({ stamp: () => Date.now() }) }),
      simulate({
        ...own,
        seed: 6,
        handlers: ({ now }) => {
          const made = Date.now();
          return { stamp: () => now() + (made > 0 ? 1 : 0) };
        },
      }),
    ]);
    expect(reads.violation?.message).toContain("(stamp) called Date.now()");
    expect(calm.violation).toBeUndefined();
    expect(calm.counts.completed).toBe(1);
    expect({ Date, now: Date.now, random: Math.random, uuid: crypto.randomUUID }).toEqual(real);
    let made = 0;
    const restart = simulate({
      seed: 1,
      graph: [job("work", 1)],
      handlers: ({ sleep }) => {
        if (++made > 1) throw new TypeError("config.url is undefined");
        return { work: () => sleep(20_000) };
      },
      faults: parseFaults("coordinator-crash@5000+1000/clean"),
      ranks: false,
    });
    await expect(restart).rejects.toThrow(ConfigError);
    expect({ Date, now: Date.now, random: Math.random, uuid: crypto.randomUUID }).toEqual(real);
  });

  it("passes handlers that use only the tools, ctx and work that runs at a fixed point", async () => {
    const leaf = job("leaf", 5);
    const run = () =>
      simulate({
        seed: 4,
        graph: [job("top", 1), job("side", 2)],
        handlers: ({ sleep }) => ({
          top: (n: number, ctx) => {
            const [x] = ctx.need(leaf);
            ctx.progress({ done: 1, total: 1 });
            return (x as number) + n;
          },
          side: async (n: number) => {
            // A guard timer cleared before it fires, setImmediate, queueMicrotask, nextTick.
            const guard = setTimeout(() => {}, 60_000);
            await new Promise((resolve) => setImmediate(resolve));
            await new Promise<void>((resolve) => queueMicrotask(resolve));
            await new Promise((resolve) => process.nextTick(resolve));
            await sleep(1_000);
            clearTimeout(guard);
            return readFileSync(new URL(import.meta.url), "utf8").length > 0 ? n : 0;
          },
          leaf: async (n: number) => {
            await sleep(500);
            return n * 10;
          },
        }),
        workers: 2,
        faults: "none",
        ranks: false,
      });
    const first = await run();
    expect(first.violation).toBeUndefined();
    expect(first.counts.completed).toBe(3);
    expect((await run()).trace).toEqual(first.trace);
  });

  it("says which jobs failed and why: a handler that throws breaks no invariant", async () => {
    const report = await simulate({
      seed: 1,
      graph: [job("parse", 2, { after: [job("fetch", 1, { retries: 0 })] })],
      handlers: {
        fetch: () => {
          throw new Error("boom: the mirror is down");
        },
        parse: (n: number) => n,
      },
      faults: "none",
      ranks: false,
    });
    expect(report.ok).toBe(true);
    expect(report.counts).toMatchObject({ failed: 1, skipped: 1 });
    expect(report.failed).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f]{16}$/),
        kind: "fetch",
        cause: "error",
        message: "boom: the mirror is down",
      },
    ]);
  });

  it("gives a seed an invariant stopped its jobs as far as they got: counts, failed, outcomes", async () => {
    const report = await simulate({
      seed: 1,
      graph: [job("fetch", 1, { retries: 0 }), job("audit", 2), job("check", 3)],
      handlers: ({ sleep, invariant }) => ({
        fetch: () => {
          throw new Error("boom: the mirror is down");
        },
        audit: (n: number) => n * 10,
        check: async () => {
          await sleep(5_000.5);
          invariant(false, "the books do not balance");
        },
      }),
      faults: "none",
      ranks: false,
    });
    expect(report.violation?.invariant).toBe(15);
    // check's handler broke the invariant while it ran: the seed stopped with it unfinished.
    expect(report.counts).toEqual({
      completed: 1,
      failed: 1,
      skipped: 0,
      cancelled: 0,
      cached: 0,
      unfinished: 1,
    });
    expect(report.failed).toEqual([
      expect.objectContaining({
        kind: "fetch",
        cause: "error",
        message: "boom: the mirror is down",
      }),
    ]);
    const ended = [...report.outcomes.values()].map(({ kind, status, value }) => ({
      kind,
      status,
      value,
    }));
    expect(ended.sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
      { kind: "audit", status: "completed", value: 20 },
      { kind: "fetch", status: "failed", value: undefined },
    ]);
    // Whole ms: the sleep of 5000.5 virtual ms ends at a whole time, and the wall time is rounded.
    expect(Number.isInteger(report.virtualMs) && report.virtualMs > 5_000).toBe(true);
    expect(Number.isInteger(report.wallMs)).toBe(true);
  });

  it("names the real timer a job still running waits on at the liveness deadline", async () => {
    const report = await simulate({
      seed: 1,
      graph: [job("fetch", 1), job("parse", 2)],
      handlers: {
        fetch: () => new Promise((resolve) => setTimeout(resolve, 600_000).unref()),
        parse: (n: number) => n,
      },
      workers: 2,
      faults: "none",
      ranks: false,
      until: 60_000,
    });
    expect(report.violation?.invariant).toBe(6);
    expect(report.violation?.message).toMatch(
      /still running: ([0-9a-f]{16}) \(fetch\) \(\1 waits on a real timer \(setTimeout or setInterval\)\)/,
    );
  });

  it("resumes from the store after a coordinator crash, results stored once", async () => {
    const report = await simulate({
      seed: 5,
      jobs: 30,
      workers: 4,
      faults: parseFaults("coordinator-crash@20000+3000/torn,coordinator-crash@60000+1000/clean"),
    });
    expect(report.violation).toBeUndefined();
    expect(report.trace.filter((l) => / start coordinator-/.test(l))).toHaveLength(3);
    expect(report.counts.cached).toBeGreaterThan(0);
  });

  it("counts a result being stored when its worker is lost meanwhile, and stores it once", async () => {
    // Stalled disks hold job 5b52…'s result for 43 s after its worker answered; meanwhile a
    // partition cuts that worker off and its connection is closed for silence. The job no
    // longer has a lease (its result was in), so the loss changes nothing: it completes once
    // the disk is back, ran once, and its result is stored once. (With the earlier design,
    // where the connection held the job until its result was stored, this seed's first form
    // found the job run again and stored twice.)
    const report = await simulate({
      seed: 24,
      jobs: 30,
      workers: 6,
      faults: parseFaults(
        "worker-crash@872:55,worker-crash@12829:32,disk-stall@28524+18665,reset@33155:2,partition@35654:20+26046,disk-stall@39490+33700",
      ),
    });
    expect(report.violation).toBeUndefined();
    const job = "5b528ab74fbb7572";
    const at = (line: RegExp) => report.trace.findIndex((l) => line.test(l));
    const answered = at(new RegExp(`> server result ${job} completed`));
    expect(answered).toBeGreaterThan(-1);
    const conn = report.trace[answered]!.split(" ")[2]!;
    const storing = at(new RegExp(` job ${job} storing$`));
    const lost = at(new RegExp(` net ${conn} server closed 4005 `));
    const completed = at(new RegExp(` job ${job} completed$`));
    expect(storing).toBeGreaterThan(answered);
    expect(lost).toBeGreaterThan(storing);
    expect(completed).toBeGreaterThan(lost);
    expect(report.trace.filter((l) => l.includes(`grant ${job} `))).toHaveLength(1);
    expect(report.trace.filter((l) => l.endsWith(` store ${job}`))).toHaveLength(1);
  });

  it("a result the full disk refuses is held, spending no attempt, and written once there is room", async () => {
    // The disk is full for the first 4 s: job 871d…'s answer cannot be stored, so the result
    // is held and written again 1 s, then 2 s later (refused, as the disk is still full); once
    // another job's result is written after the fault, it is written too. It ran once.
    const report = await simulate({
      seed: 5,
      jobs: 10,
      workers: 2,
      faults: parseFaults("disk-full@0+4000"),
    });
    expect(report.violation).toBeUndefined();
    const job = "871dd66e859f188d";
    const lines = report.trace.filter((l) => l.includes(job)).map((l) => l.replace(/^\d+ /, ""));
    const refused = `files refused sim-store/results/87/${job}.json: the disk is full`;
    expect(lines.slice(lines.indexOf(`job ${job} storing`))).toEqual([
      `job ${job} storing`,
      refused,
      refused,
      refused,
      `job ${job} completed`,
    ]);
    expect(lines.filter((l) => l.startsWith(`grant ${job} `))).toEqual([
      `grant ${job} to sim:1 attempt 1`,
    ]);
    expect(report.counts).toMatchObject({ completed: 13, failed: 0 });
  });

  it("a coordinator restarted on a full disk cannot open its store, as baton run cannot, and is started again once there is room", async () => {
    // It opened its store on the full disk (its probe file was made there): a start the real
    // disk refuses, STORE_NOT_WRITABLE, which an operator runs again once there is room.
    const report = await simulate({
      seed: 2,
      jobs: 10,
      workers: 2,
      faults: parseFaults("disk-full@3000+8000,coordinator-crash@4000+500/clean"),
    });
    expect(report.violation).toBeUndefined();
    expect(report.trace.filter((l) => / start |\.writable-/.test(l))).toEqual([
      "0 start coordinator-0",
      "4500 start coordinator-1",
      "4500 files refused sim-store/results/.writable-4500: the disk is full",
      "4500 start coordinator-1 failed: the store's disk is full; again in 6500 ms",
      "11000 start coordinator-2",
    ]);
    expect(report.counts).toMatchObject({ failed: 0, unfinished: 0 });
  });

  it("clears the marker temp files of ranks killed mid-write, leaving only the logs", async () => {
    // Launch 1's launcher crashes; launch 2, under the same name, reaps its ranks 301 and 302
    // while each is rewriting its marker, which leaves `.rank-N.marker.json.K.tmp` behind.
    // Launch 2's verified teardown must clear them with the rest (invariant 10).
    const report = await simulate({ seed: 333, jobs: 20, workers: 3, faults: "heavy", world: 6 });
    expect(report.violation).toBeUndefined();
    expect(
      report.trace.filter((l) => / ranks dep-\S+ rank \d pid 30[12] died SIGTERM$/.test(l)),
    ).toHaveLength(2);
    expect(report.trace.some((l) => l.endsWith(" ranks over"))).toBe(true);
  });

  it("gives a rank missing from a crashed launcher's manifest the whole escalation: TERM, KILL, KILL again", async () => {
    // Launch 1's launcher writes its manifest with no rank, starts its 2 ranks, and is killed
    // right before its 5th file write, the manifest with their pids: the manifest lists none
    // of them. Rank 1 ignores its launcher's death and TERM and survives a KILL. Launch 2,
    // under the same name 5 s later, reaps it before it launches: `unrecordedRanks` finds it
    // by its environment and gives it the whole escalation. When the reaper left such ranks to
    // the marker sweep's single KILL, launch 2 started beside a live orphan (invariant 12).
    // The scenario is given, not drawn: it holds on any seed (the simulation's default seed
    // 1537 drew it, and a change to what a seed draws would have lost it).
    const stays = { loadMs: 500, deaf: true, ignoreTerm: true, killsToDie: 2 };
    for (const seed of [1, 2, 3]) {
      const report = await simulate({
        seed,
        jobs: 2,
        workers: 1,
        faults: "none",
        launches: [
          {
            name: "train",
            ranks: [{ loadMs: 500 }, stays],
            crash: { atFileWrite: { n: 5, afterMs: 0 } },
          },
          { name: "train", atMs: 5_000, ranks: [{ loadMs: 500 }], stopAfterMs: 30_000 },
        ],
      });
      expect(report.violation).toBeUndefined();
      const lines = report.trace.map((l) => l.replace(/^\d+ /, ""));
      const crashed = lines.indexOf("ranks launcher 300 of train crashed");
      const launch2 = lines.findIndex((l) => l.startsWith("ranks launch 2 train by launcher 303:"));
      expect(crashed).toBeGreaterThan(-1);
      expect(launch2).toBeGreaterThan(crashed);
      expect(lines.slice(crashed, launch2)).toContain("ranks train rank 1 pid 302 ready");
      // Nothing signalled it before launch 2's reap; the reap signalled it three times, and
      // launch 2 started its rank (pid 304) only once it was gone.
      const toRank = (l: string) => /^ranks signal \S+ (group|pid) 302 /.test(l);
      expect(lines.slice(0, launch2).filter(toRank)).toEqual([]);
      const died = lines.indexOf("ranks train rank 1 pid 302 died SIGKILL");
      expect(lines.slice(launch2, died + 1).filter(toRank)).toEqual([
        "ranks signal SIGTERM group 302 ok -> 302",
        "ranks signal SIGKILL group 302 ok -> 302",
      ]);
      expect(lines.slice(died).filter(toRank)).toEqual([
        "ranks signal SIGKILL group 302 ok -> 302",
      ]);
      expect(lines.indexOf("ranks train rank 0 pid 304 ready")).toBeGreaterThan(died);
      expect(lines).toContain("ranks over");
    }
  });

  it("reaps at once the lease of a launcher that crashed before writing its manifest", async () => {
    // Launch 1's launcher dies 6 ms after it starts, after its lease and before its manifest.
    // Launch 2's reap, 2 s later, finds the lease fresh but its launcher's pid gone, and
    // reaps it then, so the simulated operator's `baton reap`, run while a crashed launch left
    // a control file, never runs. Before, the reap passed the fresh lease by, and the
    // operator's reaps found it fresh, then cleared it once stale, 30 s later.
    const report = await simulate({ seed: 500 });
    expect(report.violation).toBeUndefined();
    const lines = report.trace.map((l) => l.replace(/^\d+ /, "").replace(/ by \d+$/, ""));
    expect(lines).toContain("ranks launcher 300 of dep-k34c2lryd9hd crashed");
    expect(lines.some((l) => l.startsWith("ranks launch 2 "))).toBe(true);
    expect(lines.filter((l) => l.includes("reap"))).toEqual([]);
    expect(lines).toContain("ranks over");
  });

  it("reaps the deployment of a launcher that crashed while writing its first lease", async () => {
    // Launch 1's launcher is killed 3 ms into its second file write, the first rewrite of the
    // lease it had just claimed, which leaves a torn `.lease.json.1.tmp` beside the lease, and
    // no manifest. Launch 2's reap finds the lease's launcher gone and removes the
    // deployment's control files, the temp file with them, so the simulated operator's
    // `baton reap`, run while a crashed launch left a control file, never runs. Before the
    // reaper removed such temp files, nothing ever did.
    const report = await simulate({ seed: 73, jobs: 10, workers: 2, faults: "heavy", world: 6 });
    expect(report.violation).toBeUndefined();
    const lines = report.trace.map((l) => l.replace(/^\d+ /, "").replace(/ by \d+$/, ""));
    expect(lines).toContain("files torn /sim/run/dep-abty89d3jhaq/.lease.json.1.tmp at 83 of 152");
    expect(lines.some((l) => l.startsWith("ranks launch 2 "))).toBe(true);
    expect(lines.filter((l) => l.includes("reap"))).toEqual([]);
    expect(lines).toContain("ranks over");
  });

  it("sends nothing to the coordinator after the run for a hello that crossed the listener's close", async () => {
    // Seed 200: a worker reconnects as the run finishes; its hello reaches the server's end of
    // a link the listener is closing, after the coordinator stopped. Its connection machine
    // used to register it and send LEASE, then WORKER_LOST, to the stopped coordinator.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const report = await simulate({ seed: 200, jobs: 8, workers: 3 });
      expect(report.ok).toBe(true);
      expect(report.trace.some((l) => / > server hello \(closing\)$/.test(l))).toBe(true);
      const stale = warn.mock.calls.filter((call) => String(call[0]).includes("stopped actor"));
      expect(stale).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  it("ends the run once the pool's stop grace is over, though a partitioned worker never hears the close", async () => {
    // The idle worker (sim:2) is cut off from 1 s to 61 s. Its coordinator's close cannot
    // reach it, so it used to hold the pool's stop, and the run, until its silence limit:
    // 20005 ms (the README's example, heavy seed 7, likewise), for a run over at 3010.
    const report = await simulate({
      seed: 1,
      graph: [job("work", null)],
      handlers: ({ sleep }) => ({
        work: async () => {
          await sleep(3_000);
          return 1;
        },
      }),
      workers: 2,
      faults: parseFaults("partition@1000:1+60000"),
    });
    expect(report.ok).toBe(true);
    expect(report.counts.completed).toBe(1);
    expect(report.trace).toContain("1000 fault partition sim:2 for 60000 ms");
    const finished = report.trace.find((l) => / run finished /.test(l));
    const finishedAt = Number(finished?.split(" ")[0]);
    expect(finishedAt).toBeLessThan(4_000);
    expect(report.virtualMs).toBe(finishedAt + POOL_STOP_GRACE_MS);
  });

  it("does not store an answer that reaches a connection already closing", async () => {
    // First found with heavy faults (seed 2 of an earlier graph) once the simulated net let a
    // closing end still receive frames, as a WebSocket does: a worker's answer reached a
    // connection closed for silence (its job already given back), and was stored; the job's
    // next run stored it again.
    const report = await simulate({
      seed: 11,
      jobs: 30,
      workers: 6,
      faults: parseFaults(
        "partition@3992:3+2160,reset@5926:41,worker-crash@18491:12,slow@27431+8624/2644,partition@35938:62+2607,half-open@35954:52/client,coordinator-crash@38714+2128/torn",
      ),
    });
    expect(report.violation).toBeUndefined();
    const late = report.trace.find((l) => / > server result \w+ completed \(closing\)$/.test(l));
    expect(late).toBeDefined();
    const job = late!.split(" ")[6]!;
    expect(report.trace.filter((l) => l.includes(`grant ${job} `)).length).toBeGreaterThan(1);
  });

  it("catches a planted bug and shrinks it to a smaller reproducer that still fails", async () => {
    let failed: Awaited<ReturnType<typeof simulate>> | undefined;
    for (let seed = 1; seed <= 1000 && !failed; seed++) {
      const r = await simulate({
        seed,
        jobs: 20,
        workers: 4,
        plantedBugs: ["release-lease-twice"],
      });
      if (!r.ok) failed = r;
    }
    expect(failed?.violation?.invariant).toBe(1);
    const small = await shrink(failed!, { plantedBugs: ["release-lease-twice"] });
    expect(small.result.ok).toBe(false);
    expect(small.result.violation?.invariant).toBe(1);
    expect(small.jobs + small.workers + small.faults.length).toBeLessThan(
      failed!.jobs + failed!.workers + failed!.faults.length,
    );
    const again = await simulate({
      seed: failed!.seed,
      jobs: small.jobs,
      workers: small.workers,
      faults: small.faults,
      plantedBugs: ["release-lease-twice"],
    });
    expect(again.traceHash).toBe(small.result.traceHash);
  });

  it("shrinks a race of your own to the fewest workers that still lose the update", async () => {
    // Each order is charged, then shipped; a ship reads the stock, waits, and writes it back:
    // two ships side by side lose an update. Which worker counts put two side by side is no
    // order of size: at seed 1, 3 workers do and 4 and 5 do not, and fast-check stopped at 6.
    const orders = [1, 2, 3, 4, 5, 6];
    const charges = orders.map((order) => job("charge", order));
    const ships = orders.map((order, i) => job("ship", order, { after: [charges[i]!] }));
    const yours = {
      graph: [job("report", null, { after: ships })],
      handlers: ({ sleep, random, keep, invariant }: SimTools) => {
        const stock = keep("stock", () => ({ count: 100, shipped: 0 }));
        return {
          charge: async () => {
            await sleep(500 + 1_500 * random());
          },
          ship: async () => {
            const seen = stock.count;
            await sleep(20 + 30 * random());
            stock.count = seen - 1;
            stock.shipped++;
          },
          report: () => {
            invariant(stock.count === 100 - stock.shipped, `stock ${stock.count}`);
          },
        };
      },
      faults: "none" as const,
    };
    const failed = await simulate({ ...yours, seed: 1, workers: 8 });
    expect(failed.violation?.invariant).toBe(15);
    let fewest = 1;
    while ((await simulate({ ...yours, seed: 1, workers: fewest })).ok) fewest++;
    const small = await shrink(failed, yours);
    expect(small.workers).toBe(fewest);
    expect(small.result.violation?.invariant).toBe(15);
  });

  it("shrinks a failure of a graph of your own by its workers and faults, keeping its jobs", async () => {
    const fetches = ["a", "bb", "ccc"].map((name) => job("fetch", name));
    const yours = {
      graph: [job("merge", null, { after: fetches })],
      handlers: ({ sleep }: { sleep: (ms: number) => Promise<void> }) => ({
        fetch: async (name: string) => {
          await sleep(1_000);
          return name.length;
        },
        merge: () => 0,
      }),
      plantedBugs: ["lease-running-job" as const],
    };
    const failed = await simulate({ ...yours, seed: 0, workers: 3 });
    expect(failed.violation?.invariant).toBe(1);
    const small = await shrink(failed, yours);
    expect(small.jobs).toBe(failed.jobs);
    expect(small.result.violation?.invariant).toBe(1);
    expect(small.workers + small.faults.length).toBeLessThan(failed.workers + failed.faults.length);
    const again = await simulate({
      ...yours,
      seed: 0,
      workers: small.workers,
      faults: small.faults,
    });
    expect(again.traceHash).toBe(small.result.traceHash);
  });

  it("writes fault plans as text and reads them back", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const faults = drawFaults(new SimEntropy(seed), "heavy");
      expect(parseFaults(formatFaults(faults))).toEqual(faults);
    }
    expect(parseFaults("disk-stall@5000+30000,disk-full@6000+2000")).toEqual([
      { kind: "disk-stall", at: 5000, ms: 30_000 },
      { kind: "disk-full", at: 6000, ms: 2_000 },
    ]);
    expect(() => parseFaults("partition@5")).toThrow(/bad fault "partition@5"/);
    expect(parseFaults("")).toEqual([]);
  });
});

describe("simulate's options", () => {
  it.each([
    [{ seed: Number.NaN }, "seed must be a whole number from 0 to 4294967295, not NaN"],
    [{ seed: -1 }, "seed must be a whole number from 0 to 4294967295, not -1"],
    [{ seed: 1.5 }, "seed must be a whole number from 0 to 4294967295, not 1.5"],
    [{ seed: 1, workers: 0 }, "workers must be a whole number from 1 to 1000, not 0"],
    [{ seed: 1, jobs: -3 }, "jobs must be a whole number from 1 to 10000, not -3"],
    [{ seed: 1, world: 0.5 }, "world must be a whole number from 1 to 10000, not 0.5"],
  ])(
    "refuses %o with a ConfigError at once (workers: 0 used to spin for good)",
    async (bad, message) => {
      await expect(simulate({ faults: "none", ranks: false, ...bad })).rejects.toThrow(
        `simulate: ${message}`,
      );
    },
  );

  const rank = { loadMs: 500 };
  it.each([
    [{ launches: { ranks: [rank] } }, "launches must be a list of rank-group launches"],
    [{ launches: [{ ranks: [] }] }, "launches[0].ranks must list 1 to 10000 rank behaviours"],
    [
      { launches: [{ ranks: [{ ignoreTERM: true }] }] },
      "launches[0].ranks[0]: unknown option ignoreTERM; it takes loadMs, exit, ignoreTerm",
    ],
    [{ launches: [{ ranks: [rank], atMs: -1 }] }, "launches[0]: atMs must be a whole number"],
    [{ launches: [{ ranks: [rank], name: "a/b" }] }, "launches[0]: name must be a deployment id"],
    [{ launches: [{ ranks: [rank], crash: { torn: true } }] }, "launches[0].crash says neither"],
    [
      { launches: [{ ranks: [rank] }], world: 4 },
      "launches gives the rank groups to launch, and world sizes drawn ones: give one of them",
    ],
    [
      { launches: [{ ranks: [rank] }], ranks: false },
      "launches gives the rank groups to launch, and ranks: false leaves rank groups out",
    ],
  ])("refuses launches it could not make as given: %o", async (bad, message) => {
    await expect(simulate({ seed: 1, faults: "none", ...(bad as object) })).rejects.toThrow(
      `simulate: ${message}`,
    );
  });
});
