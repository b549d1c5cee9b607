import { describe, expect, it } from "vitest";
import { ConfigError, GraphError } from "../../src/errors.ts";
import { checkOptionNames } from "../../src/optionNames.ts";

const known = { alpha: true, beta: true };
const check = (options: unknown) =>
  checkOptionNames("thing", options, known, { shape: "{ alpha, beta }" });

describe("checkOptionNames", () => {
  it("takes an object of known names, or none", () => {
    expect(() => check({ alpha: 1 })).not.toThrow();
    expect(() => check({})).not.toThrow();
  });

  it.each([
    [null, "thing: the options must be an object, { alpha, beta }, not null"],
    [undefined, "thing: the options must be an object, { alpha, beta }, not undefined"],
    ["alpha", 'thing: the options must be an object, { alpha, beta }, not "alpha"'],
    [["alpha"], "thing: the options must be an object, { alpha, beta }, not an array"],
    [{ alpah: 1 }, "thing: unknown option alpah; it takes alpha, beta; did you mean alpha?"],
    [{ BETA: 1 }, "thing: unknown option BETA; it takes alpha, beta; did you mean beta?"],
    [{ gamma: 1 }, /^thing: unknown option gamma; it takes alpha, beta$/],
  ])("refuses %o with a ConfigError saying what it takes", (options, message) => {
    expect(() => check(options)).toThrow(ConfigError);
    expect(() => check(options)).toThrow(message);
  });

  it("adds the hint for a misplaced name, and throws the error asked for", () => {
    const misplaced = () =>
      checkOptionNames("thing", { gamma: 1 }, known, {
        shape: "{ alpha, beta }",
        hint: (name) => ` (${name} goes elsewhere)`,
        fail: (message) => new GraphError("BAD_JOB", message),
      });
    expect(misplaced).toThrow(GraphError);
    expect(misplaced).toThrow(
      "thing: unknown option gamma; it takes alpha, beta (gamma goes elsewhere)",
    );
  });
});
