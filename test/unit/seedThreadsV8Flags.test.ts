import { afterEach, describe, expect, it, vi } from "vitest";

const set = vi.hoisted(() => vi.fn());
vi.mock("node:v8", async (original) => ({
  ...(await original<typeof import("node:v8")>()),
  setFlagsFromString: set,
}));

const { SEED_THREADS_V8_FLAGS, setSeedThreadsV8Flags } = await import(
  "../../src/cli/seedThreadsV8Flags.ts"
);

afterEach(() => set.mockClear());

describe("setSeedThreadsV8Flags", () => {
  it("leaves V8's parallel scavenger alone for seeds on one thread, where it has a core of its own", () => {
    setSeedThreadsV8Flags(1)();
    expect(set).not.toHaveBeenCalled();
  });

  it("turns it off for seeds on two threads or more, and puts V8's default back", () => {
    const restore = setSeedThreadsV8Flags(2);
    expect(set.mock.calls).toEqual([["--no-parallel-scavenge"]]);
    expect(SEED_THREADS_V8_FLAGS).toEqual(["--no-parallel-scavenge"]);
    restore();
    expect(set.mock.calls.at(-1)).toEqual(["--parallel-scavenge"]);
  });
});
