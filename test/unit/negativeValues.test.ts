import { parseArgs } from "node:util";
import { describe, expect, it } from "vitest";
import { negativeValues } from "../../src/cli/negativeValues.ts";

const OPTIONS = { world: { type: "string" }, json: { type: "boolean" } } as const;

describe("negativeValues", () => {
  it("joins a flag that takes a value to the negative number after it, which parseArgs then takes", () => {
    const args = negativeValues(["--world", "-1", "--json"], OPTIONS);
    expect(args).toEqual(["--world=-1", "--json"]);
    expect(parseArgs({ args, options: OPTIONS }).values).toEqual({ world: "-1", json: true });
    expect(negativeValues(["--world", "-0.5"], OPTIONS)).toEqual(["--world=-0.5"]);
  });

  it("leaves a boolean flag, a value that is not a number, and everything after -- as they were", () => {
    expect(negativeValues(["--json", "-1"], OPTIONS)).toEqual(["--json", "-1"]);
    expect(negativeValues(["--world", "-x"], OPTIONS)).toEqual(["--world", "-x"]);
    expect(negativeValues(["--", "--world", "-1"], OPTIONS)).toEqual(["--", "--world", "-1"]);
    expect(negativeValues(["--world", "2"], OPTIONS)).toEqual(["--world", "2"]);
  });
});
