/**
 * What a run's log (`run.log` for `baton run`) says of a job that ended without a result:
 * cancelled with its reason, failed with its own error (type, message, stack) as the handler
 * threw it. In-process workers over the in-memory Net, the logger `baton run` uses.
 */
import { describe, expect, it } from "vitest";
import { createEngine, type JobContext, job, NonRetryableError } from "../../src/index.ts";
import { createLogger } from "../../src/runtime/logger.ts";
import { untilAborted } from "../fixtures/untilAborted.ts";

/** The lines a logger that writes JSON lines at `info` wrote, parsed, and the logger. */
function loggedLines() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: "info",
    pretty: false,
    stderr: (text) => {
      for (const line of text.trim().split("\n")) lines.push(JSON.parse(line));
    },
  });
  return { logger, said: (msg: string) => lines.filter((line) => line.msg === msg) };
}

describe("the run's log of a job's outcome", { timeout: 10_000 }, () => {
  it("says a cancelled job was cancelled, with the run's reason, not that it failed", async () => {
    const { logger, said } = loggedLines();
    const engine = createEngine({
      jobs: { wait: (_: number, ctx: JobContext) => untilAborted(ctx.signal) },
      workers: 1,
      logger,
    });
    const run = engine.run([1, 2].map((n) => job("wait", n)));
    run.on("job", (event) => {
      if (event.state === "running") run.cancel("interrupted (Ctrl-C)");
    });

    expect((await run).counts).toMatchObject({ cancelled: 2 });
    expect(said("job failed")).toEqual([]);
    const cancelled = said("job cancelled");
    expect(cancelled).toHaveLength(2);
    for (const line of cancelled) {
      expect(line).toMatchObject({ kind: "wait", reason: "interrupted (Ctrl-C)" });
      expect(line.cause).toMatch(/^(cancelled|shutdown)$/);
      expect(line).not.toHaveProperty("err");
    }
  });

  it("logs a failed job's error with its own type, message and stack; a skipped job as skipped, naming the job that failed", async () => {
    const { logger, said } = loggedLines();
    const engine = createEngine({
      jobs: {
        parse: (text: string): number => {
          throw new TypeError(`not a number: ${text}`);
        },
        refuse: (): number => {
          throw new NonRetryableError("the input names no table");
        },
        double: (n: number) => 2 * n,
      },
      workers: 1,
      logger,
    });
    const parse = job("parse", "x");
    const result = await engine.run([
      parse,
      job("refuse", null),
      job("double", 1, { after: [parse] }),
    ]);

    expect(result.counts).toMatchObject({ failed: 2, skipped: 1 });
    const failed = (kind: string) => said("job failed").find((line) => line.kind === kind);
    expect(failed("parse")).toMatchObject({
      cause: "error",
      err: {
        type: "TypeError",
        message: "not a number: x",
        stack: expect.stringMatching(/^TypeError: not a number: x\n.*jobOutcomeLog\.test\.ts/s),
      },
    });
    expect(failed("refuse")).toMatchObject({
      err: { type: "NonRetryableError", message: "the input names no table", retryable: false },
    });
    expect(failed("double")).toBeUndefined();
    const parseId = [...result.jobs.values()].find((outcome) => outcome.kind === "parse")?.id;
    const skipped = said("job skipped");
    expect(skipped).toEqual([
      expect.objectContaining({
        level: 30,
        kind: "double",
        cause: "skipped",
        failedJob: parseId,
        failedKind: "parse",
        reason: `skipped because dependency ${parseId} (parse) failed: not a number: x`,
      }),
    ]);
    expect(skipped[0]).not.toHaveProperty("err");
  });

  it("names the job that failed, not the one skipped in between, for a chain of skips", async () => {
    const { logger, said } = loggedLines();
    const engine = createEngine({
      jobs: {
        parse: (): number => {
          throw new NonRetryableError("bad input");
        },
        double: (n: number) => 2 * n,
        triple: (n: number) => 3 * n,
      },
      workers: 1,
      logger,
    });
    const parse = job("parse", null);
    const double = job("double", 1, { after: [parse] });
    const result = await engine.run([parse, double, job("triple", 1, { after: [double] })]);

    expect(result.counts).toMatchObject({ failed: 1, skipped: 2 });
    const idOf = (kind: string) => [...result.jobs.values()].find((o) => o.kind === kind)?.id;
    const failed = { failedJob: idOf("parse"), failedKind: "parse" };
    expect(said("job skipped")).toMatchObject([
      { job: idOf("double"), ...failed },
      {
        job: idOf("triple"),
        ...failed,
        reason: `skipped because dependency ${idOf("double")} (double) was skipped, after job ${idOf("parse")} (parse) failed: bad input`,
      },
    ]);
  });
});
