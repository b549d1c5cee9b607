/**
 * `runRankJob` as a handler written in JavaScript may call it: a launch that is no object, or a
 * `ctx` that is not its handler's, is a `ConfigError` naming it before any rank starts, where
 * each was a TypeError from inside (destructuring `undefined`, `ctx.job` of undefined,
 * `ctx.log.child is not a function`).
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { type JobContext, runRankJob } from "../../src/index.ts";

const ctx = {
  job: { id: "train-1", kind: "train", attempt: 1, ranks: 2 },
  results: [],
  deps: {},
  signal: new AbortController().signal,
  progress: () => {},
  log: pino({ level: "silent" }),
  need: () => [],
} as unknown as JobContext;

// Never launched: were a check missing, the launch fails on its state dir, not in a folder here.
const launch = { argv: ["/nonexistent/never-run"], stateDir: "/nonexistent/never-used" };

describe("runRankJob's arguments", () => {
  it.each([
    [
      [undefined, ctx],
      "runRankJob: the launch must be what a rank job launches, { argv, … }, not undefined",
    ],
    [
      [launch, undefined],
      "runRankJob: ctx must be the JobContext its handler was given (its second argument, ctx), not undefined",
    ],
    [
      [launch, { ...ctx, job: undefined }],
      "runRankJob: ctx.job must be the job of the JobContext its handler was given (its second argument, ctx), not undefined",
    ],
    [
      [launch, { ...ctx, signal: {} }],
      "runRankJob: ctx.signal must be the AbortSignal of the JobContext its handler was given",
    ],
    [
      [launch, { ...ctx, log: console }],
      "runRankJob: ctx.log must be the pino logger of the JobContext its handler was given (its second argument, ctx); it has no child()",
    ],
  ])(
    "refuses what it cannot take with a ConfigError before any rank starts (%#)",
    async (args, message) => {
      const run = () => runRankJob(...(args as Parameters<typeof runRankJob>));
      await expect(run()).rejects.toBeInstanceOf(ConfigError);
      await expect(run()).rejects.toThrow(message);
    },
  );
});
