import { expect, it } from "vitest";
import { rankList } from "../../src/rank/rankList.ts";

it.each([
  [[3], "rank 3"],
  [[0, 2], "ranks 0, 2"],
  [[1, 0], "ranks 0, 1"],
  [[0, 1, 2], "ranks 0-2"],
  [Array.from({ length: 40 }, (_, rank) => rank), "ranks 0-39"],
  [[12, 9, 10, 11, 7, 0, 1, 2, 3, 3], "ranks 0-3, 7, 9-12"],
])("names %j as %s", (ranks, text) => {
  expect(rankList(ranks)).toBe(text);
});
