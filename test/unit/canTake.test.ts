import { describe, expect, it } from "vitest";
import { canTake, someTakes } from "../../src/graph/canTake.ts";

describe("canTake and someTakes", () => {
  it("takes a job when every resource it requires is offered, one missing counting as 0", () => {
    expect(canTake({ cpus: 8, memory: 16384 }, { cpus: 2 })).toBe(true);
    expect(canTake({ cpus: 8, memory: 16384 }, { gpus: 1 })).toBe(false);
    expect(canTake({}, {})).toBe(true);
  });

  it("finds whether any of the offers takes the job", () => {
    expect(someTakes([{ cpus: 2 }, { cpus: 8 }], { cpus: 4 })).toBe(true);
    expect(someTakes([{ cpus: 2 }, { cpus: 3 }], { cpus: 4 })).toBe(false);
    expect(someTakes([], {})).toBe(false);
  });
});
