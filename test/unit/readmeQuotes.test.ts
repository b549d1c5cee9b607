/**
 * What README.md quotes of baton's output is what baton prints: each quote is produced here by
 * the code that prints it, and looked for in the README, so a change of wording that leaves
 * the README behind fails. And the files README.md and ARCHITECTURE.md name are files baton
 * has, so a file renamed or removed without its docs fails too.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { summaryTable } from "../../src/cli/summaryTable.ts";
import type { JobOutcome, RunResult } from "../../src/runtime/run.ts";
import { ROOT } from "../fixtures/batonCli.ts";

const README = readFileSync(join(ROOT, "README.md"), "utf8");
const ARCHITECTURE = readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8");

/** The folders of the repository whose files the docs name by path (`src/cli/main.ts`). */
const NAMED_ROOTS = ["src", "bench", "bin", "scripts", "examples", "test"];

/**
 * What `text` names in backticks outside its code blocks: each code span, whole, as Markdown
 * reads them (one may run over a line break, read as a space, and one opened by two backticks
 * may hold one). Paths are what a span is, so `src/a.ts` counts and a sentence naming one
 * does not.
 */
function backticked(text: string): string[] {
  const prose = text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
  return [...prose.matchAll(/(?<!`)(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g)].map((match) =>
    match[2]!.replace(/\n/g, " "),
  );
}

/**
 * The repository paths among `spans`: those under one of {@link NAMED_ROOTS} (and, under
 * test/, one of its folders: Node's own `test/parallel/…` is not baton's), leaving out
 * placeholders (`bench/NAME.ts`) and what a run makes (`examples/.baton/logs/`).
 */
function repositoryPaths(spans: string[]): string[] {
  const testFolders = readdirSync(join(ROOT, "test"));
  return spans.filter((span) => {
    const parts = span.replace(/\/$/, "").split("/");
    if (!/^[\w./-]+$/.test(span) || parts.length < 2 || !NAMED_ROOTS.includes(parts[0]!)) {
      return false;
    }
    if (parts[0] === "test" && !testFolders.includes(parts[1]!)) return false;
    return !parts.some((part) => part.startsWith(".") || /^[A-Z]+(\.|$)/.test(part));
  });
}

/** The names of every file under {@link NAMED_ROOTS}. */
function fileNames(): Set<string> {
  return new Set(
    NAMED_ROOTS.flatMap((root) =>
      readdirSync(join(ROOT, root), { recursive: true }).map((path) => basename(String(path))),
    ),
  );
}

/** A run whose one job failed as `outcome` says. */
function failedRun(outcome: Partial<JobOutcome>): RunResult {
  const id = "0287a67c56965a9a";
  const job = {
    id,
    kind: "parse",
    status: "failed",
    cause: "error",
    attempts: 1,
    cached: false,
    lostWorkers: [],
    ...outcome,
  } as unknown as JobOutcome;
  return {
    run: "r",
    ok: false,
    jobs: new Map([[id, job]]),
    counts: { completed: 0, failed: 1, skipped: 0, cancelled: 0, cached: 0 },
    durationMs: 1200,
    get: () => {
      throw new Error("not used");
    },
    toJSON: () => {
      throw new Error("not used");
    },
  };
}

describe("README.md's quotes of baton run's summary", () => {
  it("lists a job that threw a NonRetryableError as the README says", () => {
    const summary = summaryTable(
      failedRun({
        worker: "local-1",
        error: { name: "NonRetryableError", message: "the row has no id", retryable: false },
      }),
    );
    const listed = /^✗ parse \w+ (\(.*?\)):/m.exec(summary)?.[1];
    expect(listed).toMatch(/^\(error, 1 attempt.*not retried\)$/);
    expect(README).toContain(`\`baton run\` lists it as \`${listed}\``);
  });
});

describe.each([
  ["README.md", README],
  ["ARCHITECTURE.md", ARCHITECTURE],
])("the files %s names", (_doc, text) => {
  it("exist where it says, each path it gives", () => {
    const missing = repositoryPaths(backticked(text)).filter(
      (path) => !existsSync(join(ROOT, path)),
    );
    expect(missing).toEqual([]);
  });

  it("exist somewhere, each camelCase file name it gives without a folder", () => {
    const names = fileNames();
    const missing = backticked(text).filter(
      (span) => /^[a-z]+[A-Z]\w*(\.\w+)*\.(ts|mts|mjs)$/.test(span) && !names.has(span),
    );
    expect(missing).toEqual([]);
  });
});
