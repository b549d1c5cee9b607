/**
 * `reapDeployments` as JavaScript may call it (README: `baton reap` as a function): options
 * that are no object, or a `stateDir` that is no path, are a `ConfigError` saying what it takes,
 * where each was Node's `TypeError` (`The "paths[0]" argument must be of type string`).
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { type ReapOptions, reapDeployments } from "../../src/runtime/reaper.ts";

describe("checkReapOptions", () => {
  it.each([
    [undefined, "reapDeployments: the options must be an object, { stateDir, … }, not undefined"],
    [
      ".baton/run",
      'reapDeployments: the options must be an object, { stateDir, … }, not ".baton/run"',
    ],
    [
      {},
      'reapDeployments: stateDir must be the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (".baton/run", as baton reap takes by default), not undefined',
    ],
    [
      { stateDir: 5 },
      'reapDeployments: stateDir must be the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (".baton/run", as baton reap takes by default), not 5',
    ],
    [{ stateDir: "" }, 'as baton reap takes by default), not ""'],
  ])("refuses %j with a ConfigError saying what it takes", async (options, message) => {
    const reap = reapDeployments(options as unknown as ReapOptions);
    await expect(reap).rejects.toBeInstanceOf(ConfigError);
    await expect(reapDeployments(options as unknown as ReapOptions)).rejects.toThrow(message);
  });
});
