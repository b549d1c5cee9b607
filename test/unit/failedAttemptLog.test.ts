import { describe, expect, it } from "vitest";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { jobRunner } from "../../src/runtime/jobRunner.ts";
import { createLogger } from "../../src/runtime/logger.ts";
import type { JobFrame, ResultFrame } from "../../src/transport/frames.ts";

/** Runs one attempt of a handler that throws, under a logger at `level`. */
async function failedAttempt(level: "info" | "debug") {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level,
    pretty: false,
    stderr: (text) => {
      for (const line of text.trim().split("\n")) lines.push(JSON.parse(line));
    },
  });
  let children = 0;
  const counted = logger as unknown as { child: (...args: unknown[]) => unknown };
  const child = counted.child.bind(logger);
  counted.child = (...args) => {
    children++;
    return child(...args);
  };
  const runner = jobRunner(
    loadJobs({
      parse: (text: string): number => {
        throw new TypeError(`not a number: ${text}`);
      },
    }),
    logger,
  );
  const frame: JobFrame = {
    type: "job",
    id: "0123456789abcdef",
    kind: "parse",
    input: "x",
    deps: {},
    attempt: 2,
  };
  const result = await new Promise<ResultFrame>((done) =>
    runner.start(frame, 6, { progress: () => {}, done }),
  );
  return { result, children, failedLines: lines.filter((line) => line.msg === "job failed") };
}

describe("a failed attempt's debug line", () => {
  it("is logged with the job's bindings when the logger writes debug lines", async () => {
    const { result, failedLines } = await failedAttempt("debug");
    expect(result).toMatchObject({ status: "failed", error: { name: "TypeError" } });
    expect(failedLines).toEqual([
      expect.objectContaining({
        job: "0123456789abcdef",
        kind: "parse",
        attempt: 2,
        err: expect.objectContaining({ message: "not a number: x" }),
      }),
    ]);
  });

  it("makes no logger child for the job when it would not be written", async () => {
    const { result, children, failedLines } = await failedAttempt("info");
    expect(result).toMatchObject({ status: "failed", error: { name: "TypeError" } });
    expect(failedLines).toEqual([]);
    expect(children).toBe(0);
  });
});
