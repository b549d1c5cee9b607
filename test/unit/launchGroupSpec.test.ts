/** `launchGroup` refuses a spec it could not run, before it starts anything. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { launchGroup } from "../../src/runtime/launchGroup.ts";
import type { LaunchSpec } from "../../src/runtime/rankGroup.ts";

const ok = { argv: ["/bin/true"], worldSize: 1, stateDir: "/nonexistent/never-used" };

describe("launchGroup's spec", () => {
  it.each([
    [{ argv: [] }, "a rank group needs a command to launch: argv is empty"],
    [{ worldSize: 0 }, "worldSize must be an integer of at least 1, not 0"],
    [{ masterPort: 70_000 }, "masterPort must be a TCP port from 1 to 65535, not 70000"],
    [
      { timeouts: { loadTimeoutMs: -1 } },
      "timeouts.loadTimeoutMs must be a positive number of ms, not -1",
    ],
    [
      { teardown: { termGraceMs: -1 } },
      "teardown.termGraceMs must be a number of ms of 0 or more, not -1",
    ],
    [
      { teardown: { termGraceMs: Number.NaN } },
      "teardown.termGraceMs must be a number of ms of 0 or more, not NaN",
    ],
    // Node's spawn refused these, which failed the launch as if another attempt could do better.
    [
      { argv: ["/bin/echo", "a\0b"] },
      `a rank group's argv[1] holds a NUL byte, which no program's argument can: "a\\u0000b"`,
    ],
    [
      { env: { TOKEN: "x\0y" } },
      `a rank group's env variable "TOKEN" holds a NUL byte, which no environment variable can: "x\\u0000y"`,
    ],
  ])("refuses %o with a ConfigError", (bad, message) => {
    expect(() => launchGroup({ ...ok, ...bad })).toThrow(ConfigError);
    expect(() => launchGroup({ ...ok, ...bad })).toThrow(message);
  });

  // What JavaScript, or a rank kind's `ranks` function, can pass that the types refuse: none
  // of it launched what was meant, or it threw a TypeError from inside.
  it.each([
    [
      { argv: "python3 serve.py" },
      'a rank group\'s argv must be an array, the program and then its arguments (["python3", "serve.py"]), not the string "python3 serve.py": split it into its words',
    ],
    [
      { argv: undefined },
      "a rank group's argv must be an array, the program and then its arguments",
    ],
    [{ wrldSize: 2 }, "launchGroup: unknown option wrldSize; it takes argv, worldSize, stateDir,"],
    [
      { teardown: { termGrace: 5_000 } },
      "launchGroup: teardown: unknown option termGrace; it takes termGraceMs, killWaitMs,",
    ],
    [
      { timeouts: { loadTimeout: 60_000 } },
      "launchGroup: timeouts: unknown option loadTimeout; it takes loadTimeoutMs,",
    ],
    // Each taken without a word: nothing inspected, no bug planted.
    [
      { inspect: 5 },
      "launchGroup: inspect must be an XState inspection observer, a function of each inspection event or { next }, not 5",
    ],
    [{ plantedBugs: ["nope"] }, 'launchGroup: plantedBugs: unknown planted bug "nope"'],
  ])("refuses %o, a spec of the wrong shape, with a ConfigError", (bad, message) => {
    const launch = () => launchGroup({ ...ok, ...bad } as unknown as LaunchSpec);
    expect(launch).toThrow(ConfigError);
    expect(launch).toThrow(message);
  });

  it("refuses a spec that is not an object", () => {
    expect(() => launchGroup(undefined as never)).toThrow(
      "launchGroup: the options must be an object, { argv, worldSize, … }, not undefined",
    );
    expect(() => launchGroup(["/bin/true"] as never)).toThrow(
      "launchGroup: the options must be an object, { argv, worldSize, … }, not an array",
    );
  });

  it("takes a timeout given as undefined as left out: its default applies", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-spec-"));
    try {
      const group = launchGroup({
        ...ok,
        stateDir,
        timeouts: { watchMs: undefined, loadTimeoutMs: undefined },
        teardown: { termGraceMs: undefined },
      });
      expect((await group.wait()).status).toBe("succeeded");
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
