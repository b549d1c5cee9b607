/**
 * deploymentPaths, as a JavaScript caller may call it: what is no path or no deployment id is
 * refused with a ConfigError saying what it takes.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";

describe("deploymentPaths", () => {
  it("names a deployment's files under its state directory", () => {
    expect(deploymentPaths(".baton/run/", "dep-1").manifest).toBe(".baton/run/dep-1/manifest.json");
  });

  it("refuses a state directory that is no path, naming what it takes", () => {
    expect(() => deploymentPaths(5 as never, "dep-1")).toThrow(
      'deploymentPaths: stateDir must be the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (".baton/run"), not 5',
    );
    expect(() => deploymentPaths(undefined as never, "dep-1")).toThrow(ConfigError);
  });

  it("refuses a deployment id that is no text, where 5 named the directory 5", () => {
    expect(() => deploymentPaths(".baton/run", 5 as never)).toThrow(
      'deployment id 5 is not valid: use 1 to 64 letters, digits, "_", "." or "-"',
    );
  });
});
