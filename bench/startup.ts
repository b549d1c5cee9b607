/**
 * How long the `baton` command takes to start and finish its cheapest commands, against
 * baselines measured in the same run:
 *
 * - `node -e ''`: Node alone, the floor of any command;
 * - `node --import tsx -e ''`: Node with a TypeScript loader, the floor of a command that
 *   runs TypeScript (baton's sources, or a user's graph and job modules).
 *
 * Timed: `baton version`, `baton --help`, `baton status` (on an empty state dir), and
 * `baton run --help`, which loads the engine. Each runs the compiled dist/ when it is
 * compiled from this checkout's src/ (`npm run build`) and the sources through tsx
 * otherwise; the report says which. Each figure is the median of BENCH_ROUNDS rounds (default 10), the
 * programs taking turns within a round, with the fastest and slowest round beside it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error(
    `BENCH_ROUNDS must be a whole number of at least 1, not ${process.env.BENCH_ROUNDS}`,
  );
  process.exit(2);
}
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BATON = join(ROOT, "bin/baton.js");
const { distIsCurrent } = (await import(
  new URL("../bin/distCurrent.mjs", import.meta.url).href
)) as {
  distIsCurrent: () => boolean;
};
const compiled = distIsCurrent();
const loadAtStart = loadavg()[0]!;
const stateDir = mkdtempSync(join(tmpdir(), "baton-bench-startup-"));

const programs = {
  node: ["-e", ""],
  nodeTsx: ["--import", "tsx", "-e", ""],
  version: [BATON, "version"],
  help: [BATON, "--help"],
  status: [BATON, "status", "--state-dir", stateDir],
  runHelp: [BATON, "run", "--help"],
} as const;
type Program = keyof typeof programs;

/** Runs the program to its exit; its wall time in ms. */
function timed(name: Program): number {
  const started = performance.now();
  const child = spawnSync(process.execPath, programs[name], { cwd: ROOT, encoding: "utf8" });
  const elapsed = performance.now() - started;
  if (child.status !== 0) {
    throw new Error(`${name} exited ${child.status ?? child.signal}: ${child.stderr}`);
  }
  return elapsed;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const ms = (value: number) => Math.round(value);
const ratio = (value: number, baseline: number) => Math.round((value / baseline) * 100) / 100;

try {
  const names = Object.keys(programs) as Program[];
  const times = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
    Program,
    number[]
  >;
  for (const name of names) timed(name);
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of names) times[name].push(timed(name));
  }
  const node = median(times.node);
  const nodeTsx = median(times.nodeTsx);
  const figures: Record<string, unknown> = {
    bench: "startup",
    rounds: ROUNDS,
    compiled,
    cores: availableParallelism(),
    load1AtStart: Math.round(loadAtStart * 100) / 100,
    load1: Math.round(loadavg()[0]! * 100) / 100,
  };
  const line = (name: Program, label: string) => {
    const value = median(times[name]);
    figures[`${name}Ms`] = ms(value);
    figures[`${name}SpreadMs`] = [ms(Math.min(...times[name])), ms(Math.max(...times[name]))];
    if (name !== "node") figures[`${name}VsNode`] = ratio(value, node);
    if (name !== "node" && name !== "nodeTsx") figures[`${name}VsNodeTsx`] = ratio(value, nodeTsx);
    const against =
      name === "node"
        ? ""
        : `; ${ratio(value, node)}× node${name === "nodeTsx" ? "" : `, ${ratio(value, nodeTsx)}× node with tsx`}`;
    console.log(
      `${label}: ${ms(value)} ms (rounds ${ms(Math.min(...times[name]))}–${ms(Math.max(...times[name]))} ms${against})`,
    );
  };
  console.log(
    compiled
      ? "dist/ is compiled from this src/: every command runs it"
      : "dist/ is missing or older than src/ (npm run build): every command runs the sources through tsx",
  );
  line("node", "node -e ''");
  line("nodeTsx", "node --import tsx -e ''");
  line("version", "baton version");
  line("help", "baton --help");
  line("status", "baton status (empty state dir)");
  line("runHelp", "baton run --help (loads the engine)");
  console.log(
    `load average (1 min): ${figures.load1AtStart} at the start, ${figures.load1} at the end, ` +
      `on ${figures.cores} cores`,
  );
  console.log(JSON.stringify(figures));
} finally {
  rmSync(stateDir, { recursive: true, force: true });
}
