/**
 * What `import … from "baton"` costs a program that embeds baton, against a baseline
 * measured in the same run: importing xstate, ws and pino alone, the packages baton's engine
 * runs on (the most an entry loading nothing of its own beside them could cost).
 *
 * Each figure is the time, wall and CPU (the process's user and system time, which a busy
 * machine disturbs less than wall time), from just before the `import()` to just after it, in
 * a fresh Node process: the median of BENCH_ROUNDS rounds (default 15), the two taking turns
 * within a round, with the fastest and slowest round beside it. One more process imports the
 * entry under a loader hook and counts the modules it evaluates: baton's own (dist/) and each
 * package's, which do not depend on the machine's load.
 *
 * It imports the compiled dist/index.js, as a user's program does, so it needs a dist/
 * compiled from this checkout's src/ (`npm run build`).
 */
import { spawnSync } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error(
    `BENCH_ROUNDS must be a whole number of at least 1, not ${process.env.BENCH_ROUNDS}`,
  );
  process.exit(2);
}
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ENTRY = new URL("../dist/index.js", import.meta.url).href;
const { distIsCurrent } = (await import(
  new URL("../bin/distCurrent.mjs", import.meta.url).href
)) as {
  distIsCurrent: () => boolean;
};
if (!distIsCurrent()) {
  console.error(
    "dist/ is missing or older than src/: run npm run build first (the bench imports dist/index.js as a user's program does)",
  );
  process.exit(2);
}
const loadAtStart = loadavg()[0]!;

const programs = {
  baseline: ["xstate", "ws", "pino"],
  baton: [ENTRY],
} as const;
type Program = keyof typeof programs;

interface Timing {
  wallMs: number;
  cpuMs: number;
}

/** A program that imports `specifiers` in turn and prints the time it took as JSON. */
const importing = (specifiers: readonly string[]) => `
const cpu = process.cpuUsage();
const wall = performance.now();
for (const specifier of ${JSON.stringify(specifiers)}) await import(specifier);
const wallMs = performance.now() - wall;
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ wallMs, cpuMs: (used.user + used.system) / 1000 }));`;

function timed(name: Program): Timing {
  const child = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", importing(programs[name])],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (child.status !== 0) {
    throw new Error(`importing ${name} exited ${child.status ?? child.signal}: ${child.stderr}`);
  }
  return JSON.parse(child.stdout) as Timing;
}

/** The modules importing the entry evaluates: baton's own, and how many of each package. */
function modulesLoaded(): { dist: number; packages: Record<string, number> } {
  const hook = `export async function load(url, context, next) {
    const loaded = await next(url, context);
    if (url.startsWith("file:")) process.stderr.write("loaded " + url + "\\n");
    return loaded;
  }`;
  const counting = `
import { register } from "node:module";
register("data:text/javascript,${encodeURIComponent(hook)}");
await import(${JSON.stringify(ENTRY)});
const { createRequire } = await import("node:module");
for (const path of Object.keys(createRequire(import.meta.url).cache)) {
  process.stderr.write("loaded file://" + path + "\\n");
}`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", counting], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (child.status !== 0)
    throw new Error(`counting modules exited ${child.status}: ${child.stderr}`);
  const urls = new Set(
    child.stderr
      .split("\n")
      .filter((line) => line.startsWith("loaded "))
      .map((line) => line.slice("loaded ".length)),
  );
  let dist = 0;
  const packages: Record<string, number> = {};
  for (const url of urls) {
    const name = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
    if (name !== undefined) packages[name] = (packages[name] ?? 0) + 1;
    else if (url.startsWith(new URL("../dist/", import.meta.url).href)) dist++;
  }
  return { dist, packages };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const ms = (value: number) => Math.round(value);
const ratio = (value: number, baseline: number) => Math.round((value / baseline) * 100) / 100;

const names = Object.keys(programs) as Program[];
const times = Object.fromEntries(names.map((name) => [name, [] as Timing[]])) as Record<
  Program,
  Timing[]
>;
for (const name of names) timed(name);
for (let round = 0; round < ROUNDS; round++) {
  for (const name of names) times[name].push(timed(name));
}
const modules = modulesLoaded();
const figures: Record<string, unknown> = {
  bench: "import",
  rounds: ROUNDS,
  cores: availableParallelism(),
  load1AtStart: Math.round(loadAtStart * 100) / 100,
  load1: Math.round(loadavg()[0]! * 100) / 100,
};
const of = (name: Program, figure: keyof Timing) => times[name].map((timing) => timing[figure]);
for (const name of names) {
  for (const figure of ["wallMs", "cpuMs"] as const) {
    const values = of(name, figure);
    figures[`${name}${figure === "wallMs" ? "WallMs" : "CpuMs"}`] = ms(median(values));
    figures[`${name}${figure === "wallMs" ? "Wall" : "Cpu"}SpreadMs`] = [
      ms(Math.min(...values)),
      ms(Math.max(...values)),
    ];
  }
}
figures.batonVsBaselineWall = ratio(
  median(of("baton", "wallMs")),
  median(of("baseline", "wallMs")),
);
figures.batonVsBaselineCpu = ratio(median(of("baton", "cpuMs")), median(of("baseline", "cpuMs")));
figures.distModules = modules.dist;
figures.packages = modules.packages;
const line = (name: Program, label: string) => {
  const wall = of(name, "wallMs");
  const cpu = of(name, "cpuMs");
  console.log(
    `${label}: ${ms(median(wall))} ms wall (rounds ${ms(Math.min(...wall))}–${ms(Math.max(...wall))}), ` +
      `${ms(median(cpu))} ms CPU (rounds ${ms(Math.min(...cpu))}–${ms(Math.max(...cpu))})`,
  );
};
line("baseline", "import xstate, ws and pino");
line("baton", 'import "baton" (dist/index.js)');
console.log(
  `baton against the baseline: ${figures.batonVsBaselineWall}× wall, ${figures.batonVsBaselineCpu}× CPU`,
);
console.log(
  `importing baton evaluates ${modules.dist} of its own modules and, of packages: ${Object.entries(
    modules.packages,
  )
    .map(([name, count]) => `${name} (${count})`)
    .join(", ")}`,
);
console.log(
  `load average (1 min): ${figures.load1AtStart} at the start, ${figures.load1} at the end, ` +
    `on ${figures.cores} cores`,
);
console.log(JSON.stringify(figures));
