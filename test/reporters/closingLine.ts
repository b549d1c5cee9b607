import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends a test run with one plain line, `N passed, N failed, N skipped`,
 * free of colour codes, so that CI and people reading a log see the count
 * without parsing vitest's summary table. The line goes to standard output and
 * to standard error, so that it is the last line of either stream, whichever a
 * log collector keeps or puts last (tests' child processes write to stderr).
 */
export default class ClosingLine implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<unknown>,
  ): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const testModule of testModules) {
      for (const test of testModule.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") counts.passed += 1;
        else if (state === "failed") counts.failed += 1;
        else counts.skipped += 1;
      }
      // A file that failed outside its tests (it did not load, or a hook of its own threw).
      if (testModule.state() === "failed") counts.failed += testModule.errors().length;
    }
    counts.failed += unhandledErrors.length;
    const line = `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`;
    process.stdout.write(line);
    process.stderr.write(line);
  }
}
