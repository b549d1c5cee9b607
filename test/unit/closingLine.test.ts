import { afterEach, describe, expect, it, vi } from "vitest";
import type { TestModule } from "vitest/node";
import { capturedOutput } from "../fixtures/capturedOutput.ts";
import ClosingLine from "../reporters/closingLine.ts";

afterEach(() => vi.restoreAllMocks());

/** A test file as the reporter reads it: its tests' states, its own state and errors. */
function testFile(tests: string[], errors = 0): TestModule {
  const allTests = () => tests.map((state) => ({ result: () => ({ state }) }));
  return {
    children: { allTests, size: tests.length },
    state: () => (errors > 0 || tests.includes("failed") ? "failed" : "passed"),
    errors: () => Array(errors).fill({ message: "thrown outside a test" }),
  } as unknown as TestModule;
}

/** The line the reporter ends a run with, for these files. */
function closingLine(files: TestModule[]): string {
  const out = capturedOutput();
  capturedOutput(process.stderr);
  new ClosingLine().onTestRunEnd(files, []);
  return out.text;
}

describe("the run's closing line", () => {
  it("counts the tests of each file by their state", () => {
    expect(closingLine([testFile(["passed", "failed"]), testFile(["passed", "skipped"])])).toBe(
      "2 passed, 1 failed, 1 skipped\n",
    );
  });

  it("counts a file that did not load, and one whose own hook threw after its tests passed, as failed", () => {
    expect(closingLine([testFile([], 1), testFile(["passed", "passed"], 1)])).toBe(
      "2 passed, 2 failed, 0 skipped\n",
    );
  });
});
