import { defineConfig } from "vitest/config";
import ClosingLine from "./test/reporters/closingLine.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", new ClosingLine()],
  },
});
