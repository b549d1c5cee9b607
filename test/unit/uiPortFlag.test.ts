/**
 * The dashboard's flags of `baton run`, `baton sim` and `baton launch`, checked before
 * anything is loaded or started: a port given to `--ui`, which takes none, is said as such.
 */
import { describe, expect, it } from "vitest";
import { launchCommand } from "../../src/cli/launchCommand.ts";
import { runCommand } from "../../src/cli/runCommand.ts";
import { simCommand } from "../../src/cli/simCommand.ts";
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
      new ConfigError(`give one graph module, not 2 (${GRAPH}, 8080) (baton run --help shows how)`),
    );
  });
});

/** The error for `port` given to `--ui`, read as `what`. */
const portToUi = (port: string, what: string) =>
  new ConfigError(
    `--ui takes no value, so ${port} was read as ${what}: give the dashboard's port as --ui-port ${port}`,
  );

describe("baton sim --ui", () => {
  it.each([[["--replay", "3", "--ui", "8080"]], [["--ui", "8080", "--replay", "3"]]])(
    "%j says that the port goes with --ui-port",
    async (args) => {
      // It used to be "8080 is no graph module: to simulate seed 8080, give --seed 8080".
      await expect(simCommand(args)).rejects.toThrow(portToUi("8080", "the graph module"));
    },
  );

  it("takes a number without --ui for a seed", async () => {
    await expect(simCommand(["8080"])).rejects.toThrow(
      new ConfigError("8080 is no graph module: to simulate seed 8080, give --seed 8080"),
    );
  });
});

describe("baton launch --ui", () => {
  it.each([
    [["--world", "2", "--ui", "8080", "--", "python3", "train.py"]],
    [["--world", "2", "--ui", "8080", "python3", "train.py"]],
    [["--ui", "8080", "--", "true"]],
  ])("%j says that the port goes with --ui-port", async (args) => {
    // It used to start the dashboard and 2 ranks of "8080 python3 train.py", or say
    // "no number of ranks".
    await expect(launchCommand(args)).rejects.toThrow(portToUi("8080", "the ranks' command"));
  });

  it("leaves a number among the command's own arguments alone", async () => {
    await expect(
      launchCommand([
        "--ui",
        "--hosts",
        "local,local",
        "--world",
        "3",
        "python3",
        "train.py",
        "8080",
      ]),
    ).rejects.toThrow(
      new ConfigError(
        "--hosts places 2 ranks but --world is 3: list one host per rank, or HOST*COUNT",
      ),
    );
  });
});
