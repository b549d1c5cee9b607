/**
 * `baton run --store-full-wait` and `--store-read-only` are checked before anything is loaded
 * or started.
 */
import { describe, expect, it } from "vitest";
import { runCommand } from "../../src/cli/runCommand.ts";
import { ConfigError } from "../../src/errors.ts";

const GRAPH = "test/fixtures/counted.graph.ts";

describe("baton run --store-full-wait and --store-read-only", () => {
  it("refuses a wait that is not a duration with its unit", async () => {
    for (const value of ["300", "0s", "1.5m", "soon", ""]) {
      await expect(runCommand([GRAPH, `--store-full-wait=${value}`])).rejects.toThrow(
        new ConfigError(
          `--store-full-wait must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "${value}"`,
        ),
      );
    }
  });

  it("refuses it, and --force, with --store-read-only, which writes no result", async () => {
    for (const flag of ["--store-full-wait=1m", "--force"]) {
      await expect(runCommand([GRAPH, "--store-read-only", flag])).rejects.toThrow(
        new ConfigError(
          `--store-read-only reuses the stored results and writes none, so it does not go with ${flag.split("=")[0]}`,
        ),
      );
    }
    await expect(runCommand([GRAPH, "--no-store", "--store-read-only"])).rejects.toThrow(
      new ConfigError("--no-store keeps no results, so it does not go with --store-read-only"),
    );
  });

  it("refuses it with --no-store, which writes no result to wait for room for", async () => {
    await expect(runCommand([GRAPH, "--no-store", "--store-full-wait=1m"])).rejects.toThrow(
      new ConfigError("--no-store keeps no results, so it does not go with --store-full-wait"),
    );
  });
});
