/**
 * Handlers for the Quick start pipeline: word frequencies over generated documents.
 * Each handler is a plain (async) function of its input and a context.
 */
import { defineJobs } from "baton";

const WORDS = [
  "state",
  "machine",
  "worker",
  "lease",
  "result",
  "rank",
  "graph",
  "job",
  "seed",
  "trace",
];

/** A small deterministic generator, so every run computes the same numbers. */
function wordsOf(doc: number, length: number): string[] {
  let x = doc * 2654435761 + 1;
  return Array.from({ length }, () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return WORDS[x % WORDS.length]!;
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

type Counts = Record<string, number>;

function add(into: Counts, from: Counts): Counts {
  for (const [word, n] of Object.entries(from)) into[word] = (into[word] ?? 0) + n;
  return into;
}

export default defineJobs({
  /**
   * "Downloads" a document: here, generates it, slowly enough to watch. Like a real download,
   * it gets a time limit: an attempt still running after 10 s is stopped and retried.
   */
  fetch: {
    timeoutMs: 10_000,
    run: async ({ doc }: { doc: number }, ctx) => {
      ctx.progress({ done: 0, total: 1, message: `fetching document ${doc}` });
      await sleep(20 + (doc % 5) * 10, ctx.signal);
      return wordsOf(doc, 200 + doc * 10).join(" ");
    },
  },
  tokenize: (_: { doc: number }, ctx) => (ctx.results[0] as string).split(" "),
  count: (_: { doc: number }, ctx) => {
    const counts: Counts = {};
    for (const word of ctx.results[0] as string[]) counts[word] = (counts[word] ?? 0) + 1;
    return counts;
  },
  merge: (_: { group: number | "all" }, ctx) =>
    (ctx.results as Counts[]).reduce((acc, c) => add(acc, c), {} as Counts),
  report: (_: null, ctx) => {
    const total = ctx.results[0] as Counts;
    return Object.entries(total)
      .sort(([, a], [, b]) => b - a)
      .slice(0, 5)
      .map(([word, n]) => `${word}: ${n}`);
  },
  /** Publishes the report; the first attempt fails as a flaky service would, the retry works. */
  publish: (_: null, ctx) => {
    if (ctx.job.attempt === 1) {
      throw new Error("report service unavailable (a simulated transient failure; baton retries)");
    }
    return { published: (ctx.results[0] as string[]).length };
  },
});
