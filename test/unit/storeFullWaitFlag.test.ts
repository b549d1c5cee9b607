/** `baton run --store-full-wait` is checked before anything is loaded or started. */
import { describe, expect, it } from "vitest";
import { runCommand } from "../../src/cli/runCommand.ts";
import { ConfigError } from "../../src/errors.ts";

const GRAPH = "test/fixtures/counted.graph.ts";

describe("baton run --store-full-wait", () => {
  it("refuses a wait that is not a duration with its unit", async () => {
    for (const value of ["300", "0s", "1.5m", "soon", ""]) {
      await expect(runCommand([GRAPH, `--store-full-wait=${value}`])).rejects.toThrow(
        new ConfigError(
          `--store-full-wait must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "${value}"`,
        ),
      );
    }
  });

  it("refuses it with --no-store, which writes no result to wait for room for", async () => {
    await expect(runCommand([GRAPH, "--no-store", "--store-full-wait=1m"])).rejects.toThrow(
      new ConfigError("--no-store keeps no results, so it does not go with --store-full-wait"),
    );
  });
});
