/**
 * The dashboard's flags of `baton run`, checked before anything is loaded or started: a port
 * given to `--ui`, which takes none, is said as such.
 */
import { describe, expect, it } from "vitest";
import { runCommand } from "../../src/cli/runCommand.ts";
import { ConfigError } from "../../src/errors.ts";

const GRAPH = "test/fixtures/counted.graph.ts";

describe("baton run --ui", () => {
  it.each([
    [["--ui", "8080", GRAPH], "8080"],
    [[GRAPH, "--ui", "0"], "0"],
    [["--ui", "8080"], "8080"],
  ])("%j says that the port goes with --ui-port", async (args, port) => {
    // It used to be "takes one graph module, not 2 (8080, …)", or "8080 does not exist".
    await expect(runCommand(args)).rejects.toThrow(
      new ConfigError(
        `--ui takes no value, so ${port} was read as the graph module: give the dashboard's port as --ui-port ${port}`,
      ),
    );
  });

  it("leaves a number alone without --ui", async () => {
    await expect(runCommand([GRAPH, "8080"])).rejects.toThrow(
      new ConfigError(
        `baton run takes one graph module, not 2 (${GRAPH}, 8080) (baton run --help shows how)`,
      ),
    );
  });
});
