/** `baton run --workers` is read as `baton sim`'s and `baton launch`'s whole numbers are. */
import { describe, expect, it } from "vitest";
import { runCommand } from "../../src/cli/runCommand.ts";
import { ConfigError } from "../../src/errors.ts";

const GRAPH = "test/fixtures/counted.graph.ts";

describe("baton run --workers", () => {
  it("refuses a count that is not written as a whole number, before loading anything", async () => {
    // Number() read 1e1 as 10 workers and 0x2 as 2.
    for (const value of ["1e1", "0x2", "1.5", "-1", "two", " 2", ""]) {
      await expect(runCommand([GRAPH, "--dry-run", `--workers=${value}`])).rejects.toThrow(
        new ConfigError(`--workers must be a number of workers ≥ 0, not "${value}"`),
      );
    }
  });

  it("takes 0 for worker processes but at least 1 in process", async () => {
    await expect(runCommand([GRAPH, "--in-process", "--workers=0"])).rejects.toThrow(
      new ConfigError(
        "--workers 0 with --in-process runs no worker: --in-process runs the workers inside this process (1 or more); for only workers that join with baton worker, leave out --in-process",
      ),
    );
  });
});
