/**
 * `reapDeployments` as JavaScript may call it (README: `baton reap` as a function): options
 * that are no object, or a `stateDir` that is no path, are a `ConfigError` saying what it takes,
 * where each was Node's `TypeError` (`The "paths[0]" argument must be of type string`); and
 * `files` without the methods it reads and clears with, ports,
 * teardown timeouts or a `hurry` it cannot take, which failed only once a deployment was torn
 * down, if at all.
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
    [
      { stateDir: ".baton/run", files: "nodeFiles" },
      'reapDeployments: files must be a Files, such as nodeFiles(), not "nodeFiles"',
    ],
    [
      { stateDir: ".baton/run", files: { list: async () => [], read: async () => undefined } },
      "reapDeployments: files must be a Files, such as nodeFiles(); it has no owner()",
    ],
    [
      { stateDir: ".baton/run", procs: {} },
      "reapDeployments: procs must be a Procs, such as nodeProcs(); it has no list()",
    ],
    [
      { stateDir: ".baton/run", clock: Date },
      "reapDeployments: clock must be a Clock, such as nodeClock(); it has no setTimeout()",
    ],
    [
      { stateDir: ".baton/run", logger: "pino" },
      'reapDeployments: logger must be a pino logger, not "pino"',
    ],
    [
      { stateDir: ".baton/run", teardown: { termGraceMs: "5s" } },
      'reapDeployments: teardown.termGraceMs must be a number of ms of 0 or more, not "5s"',
    ],
    [
      { stateDir: ".baton/run", hurry: true },
      "reapDeployments: hurry must be an AbortSignal, or undefined, not true",
    ],
  ])("refuses %j with a ConfigError saying what it takes", async (options, message) => {
    const reap = reapDeployments(options as unknown as ReapOptions);
    await expect(reap).rejects.toBeInstanceOf(ConfigError);
    await expect(reapDeployments(options as unknown as ReapOptions)).rejects.toThrow(message);
  });
});
