import { describe, expect, it } from "vitest";
import { countsTable } from "../../src/cli/countsTable.ts";

describe("countsTable", () => {
  it("rules the totals off from the kinds, so a kind called total is not taken for them", () => {
    const byKind = new Map([
      ["total", [3, 0]],
      ["leaf", [20, 1]],
    ]);
    expect(countsTable(["completed", "failed"], byKind, [23, 1])).toEqual([
      "kind   completed  failed",
      "─────  ─────────  ──────",
      "leaf          20       1",
      "total          3       0",
      "─────  ─────────  ──────",
      "total         23       1",
    ]);
  });
});
