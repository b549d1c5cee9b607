import { defineConfig } from "vitest/config";
import ClosingLine from "./test/reporters/closingLine.ts";
import LongFilesFirst from "./test/sequencers/longFilesFirst.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file gets a temp folder of its own, and fails when it leaves baton's files there.
    setupFiles: ["test/setup/tempFolderPerFile.ts"],
    pool: "forks",
    // Two test files at a time (vitest ran one at a time on CI's two cores): most files wait
    // on processes, sockets and timers more than they compute. ARCHITECTURE.md, Tests.
    maxWorkers: 2,
    reporters: ["default", new ClosingLine()],
    sequence: { sequencer: LongFilesFirst },
  },
});
