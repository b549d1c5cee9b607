import { describe, expect, it } from "vitest";
import { emptyFlags } from "../../src/cli/emptyFlags.ts";
import { ConfigError } from "../../src/errors.ts";

describe("emptyFlags", () => {
  it("refuses the first flag given an empty value, naming it and the command's --help", () => {
    const values = { name: "", "state-dir": "", world: "" };
    expect(() => emptyFlags("launch", values, ["state-dir", "name"])).toThrow(
      new ConfigError(
        "--state-dir is empty: give it a value, or leave it out (baton launch --help says what it takes)",
      ),
    );
  });

  it("passes flags that are absent or have a value, and leaves the flags not listed alone", () => {
    expect(() =>
      emptyFlags("run", { jobs: "jobs.ts", store: undefined, workers: "" }, ["jobs", "store"]),
    ).not.toThrow();
  });
});
