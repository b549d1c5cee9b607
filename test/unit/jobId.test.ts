import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/graph/canonicalJson.ts";
import { type Json, job } from "../../src/graph/job.ts";
import { jobId } from "../../src/graph/jobId.ts";
import { planGraph } from "../../src/graph/planGraph.ts";

describe("jobId", () => {
  it("is 16 hex digits", () => {
    expect(jobId("fetch", { url: "https://example.org" }, [], "1")).toMatch(/^[0-9a-f]{16}$/);
  });

  it("is stable across runs and machines", () => {
    expect(jobId("fetch", { url: "https://example.org" }, [], "1")).toBe("eba860ca133034df");
    expect(jobId("parse", { strict: true }, ["0123456789abcdef"], "2")).toBe("3faf2fb2e166ce7b");
  });

  it("does not depend on the key order of the input", () => {
    expect(jobId("k", { a: 1, b: { c: 2, d: 3 } }, [], "1")).toBe(
      jobId("k", { b: { d: 3, c: 2 }, a: 1 }, [], "1"),
    );
  });

  it("does not depend on the order of deps, nor on repeated deps", () => {
    const id = jobId("k", null, ["b", "a", "c"], "1");
    expect(jobId("k", null, ["c", "b", "a"], "1")).toBe(id);
    expect(jobId("k", null, ["a", "c", "b", "a"], "1")).toBe(id);
  });

  it("changes with the version, the kind, the input and the deps", () => {
    const id = jobId("k", { n: 1 }, ["a"], "1");
    expect(jobId("k", { n: 1 }, ["a"], "2")).not.toBe(id);
    expect(jobId("j", { n: 1 }, ["a"], "1")).not.toBe(id);
    expect(jobId("k", { n: 2 }, ["a"], "1")).not.toBe(id);
    expect(jobId("k", { n: 1 }, ["b"], "1")).not.toBe(id);
    expect(jobId("k", { n: 1 }, [], "1")).not.toBe(id);
  });

  it("keeps its parts apart", () => {
    expect(jobId("ab", "c", [], "1")).not.toBe(jobId("a", "bc", [], "1"));
    expect(jobId("k", "1", [], "1")).not.toBe(jobId("k", 1, [], "1"));
    expect(jobId("k", null, ["a,b"], "1")).not.toBe(jobId("k", null, ["a", "b"], "1"));
  });

  it("hashes the JSON array of its parts, whatever kind and version came before", () => {
    const digest = (parts: unknown[]) =>
      createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
    const parts: [string, Json, string[], string][] = [
      ['say "hi"', { b: 1, a: "é" }, [], "1\n"],
      ["k", 2, ["b", "a"], "1"],
      ['say "hi"', "x", ["a"], "1\n"],
      ['say "hi"', null, [], "2"],
      ["", 0, [], ""],
    ];
    for (const [kind, input, deps, version] of [...parts, ...parts]) {
      const sorted = [...new Set(deps)].sort();
      expect(jobId(kind, input, deps, version)).toBe(
        digest([kind, canonicalJson(input), sorted, version]),
      );
    }
  });

  it("merges identical jobs of a graph into one", () => {
    const a = job("fetch", { url: "x", n: 1 });
    const b = job("fetch", { n: 1, url: "x" });
    const plan = planGraph([job("parse", null, { after: [a, b] })], { versionOf: () => "1" });
    expect(plan.idOf(a)).toBe(plan.idOf(b));
    expect(plan.jobs.size).toBe(2);
  });
  it("holds only its 16 digits, not the 64-digit digest they were cut from", () => {
    // Measured in a process of its own, with a full collection on either side: 20,000 ids
    // that each held their digest took about 120 B each, ids of their own about 40.
    const script = `const { jobId } = await import(${JSON.stringify(
      new URL("../../src/graph/jobId.ts", import.meta.url).pathname,
    )});
      const ids = [];
      gc();
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 20000; i++) ids.push(jobId("k", i, [], "1"));
      gc();
      console.log((process.memoryUsage().heapUsed - before) / ids.length);`;
    const result = spawnSync(
      process.execPath,
      ["--expose-gc", "--import", "tsx", "--input-type=module", "-e", script],
      { encoding: "utf8", timeout: 30_000, killSignal: "SIGKILL" },
    );
    expect(result.stderr).toBe("");
    expect(Number(result.stdout)).toBeLessThan(80);
  });
});
