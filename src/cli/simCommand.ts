import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import type { JobSpec } from "../graph/job.ts";
import { checkPlantedBugs } from "../machines/checkPlantedBugs.ts";
import { PLANTED_BUGS, type PlantedBug } from "../machines/plantedBugs.ts";
import { jobJson } from "../runtime/jobJson.ts";
import { exportsJobModuleAsGraph, importUserModule } from "../runtime/userModule.ts";
import { DRAWN_WORLD } from "../sim/drawnRankGroups.ts";
import {
  FAULT_PROFILES,
  type Fault,
  type FaultProfile,
  faultHorizonMs,
  formatFaults,
  parseFaults,
} from "../sim/faultPlan.ts";
import { type SeedThreadData, simulateSeed, threadsFor, yourModules } from "../sim/inSeedOrder.ts";
import { type Shrunk, shrink } from "../sim/shrink.ts";
import { RANK_GROUP_INVARIANTS, SIM_INVARIANTS } from "../sim/simInvariants.ts";
import { SIM_LIMITS } from "../sim/simLimits.ts";
import { type FlaggedSimModules, loadSimModules } from "../sim/simModules.ts";
import {
  type SimProgress,
  type SimulateOptions,
  type SimulationResult,
  simulate,
} from "../sim/simulate.ts";
import { SIMULATE_DEFAULTS } from "../sim/simulateDefaults.ts";
import { type DrawnSimulation, simulateSeeds } from "../sim/simulateSeeds.ts";
import { yourGraph as planned } from "../sim/yourJobs.ts";
import { choiceFlag } from "./choiceFlag.ts";
import { commandCatalog } from "./commandCatalog.ts";
import { FaultsOutrun } from "./faultsOutrun.ts";
import { LAST_EVENTS, lastEvents } from "./lastEvents.ts";
import { LiveLine, terminalStreams } from "./liveLine.ts";
import { parseFlags } from "./parseFlags.ts";
import { printHelp } from "./printHelp.ts";
import { SeedsProgress } from "./seedsProgress.ts";
import { setSeedThreadsV8Flags } from "./seedThreadsV8Flags.ts";
import { SIGNAL_EXIT } from "./signalExit.ts";
import type { ReplayHooks } from "./simDashboard.ts";
import { portGivenToUi, uiPortFlag } from "./uiPortFlag.ts";
import { virtualMsFlag } from "./virtualMsFlag.ts";
import { wholeNumberFlag } from "./wholeNumberFlag.ts";
import { yourJobsFollowed, yourJobsTimelines } from "./yourJobsTimelines.ts";

/** What `baton sim` takes when not told: its seeds, the drawn graph's jobs, its in-process workers. */
export const SIM_DEFAULTS = { seeds: "1..100", ...SIMULATE_DEFAULTS } as const;

export const SIM_USAGE = `usage: ${commandCatalog.sim.usage}

Runs the whole system (coordinator, workers, store) in virtual time from a seed, with a
graph and faults drawn from it, checking baton's invariants (SIM_INVARIANTS) after every
step and that the run finishes once the faults are over. With GRAPH (a graph module, as
baton run takes it) it simulates your graph, on the handlers SIM's default export gives:
a job module, or a function of the simulation's tools ({ sleep, now, random, keep,
invariant }) returning one, as simulate() takes it (README: Simulation); keep(name, make)
holds what outlives a crash, one per seed; invariant(holds, message) fails the seed when
holds is false.

  --handlers SIM         the module of GRAPH's handlers for the simulation (with GRAPH)
  --seed S               one seed (0 to 4294967295)
  --seeds A..B           every seed from A to B (default ${SIM_DEFAULTS.seeds})
  --faults PROFILE       ${FAULT_PROFILES.join(" | ")} (default: default)
  --faults-within T      start every drawn fault within virtual time T (ms, or a duration
                         such as 3s; default ${faultHorizonMs("default") / 1000}s, heavy ${faultHorizonMs("heavy") / 1000}s): about as long as your
                         graph's run takes, or it is over before most of them
  --fault-list LIST      this exact fault plan instead of --faults (as printed by a
                         failure); cancel@AT cancels the run at virtual ms AT, as an
                         operator would
  --jobs N               jobs in the drawn graph (default ${SIM_DEFAULTS.jobs}, at most ${SIM_LIMITS.jobs}; not
                         with GRAPH)
  --workers N            in-process workers (default ${SIM_DEFAULTS.workers}, at most ${SIM_LIMITS.workers})
  --world N              draw rank groups (real launcher and reaper on simulated processes)
                         of up to N ranks beside the graph, at most ${SIM_LIMITS.world}; 0: none (default
                         ${DRAWN_WORLD} with the drawn graph, 0 with GRAPH: their trace is not yours)
  --until T              virtual time by which the run must be over: ms, or a duration
                         such as 90s, 30m or 2h (at most 2592000000 ms: 30 days)
  --fail-fast            cancel the rest of the run once a job has failed for good, as
                         baton run --fail-fast does
  --plant BUG            switch a planted bug on, to prove the checks catch it (repeatable,
                         or BUG,BUG), one of:${PLANTED_BUGS.map((bug, n) => `${n % 2 === 0 ? `\n${" ".repeat(25)}` : " "}${bug}`).join(",")}
  --threads N            threads simulating seeds side by side (default: the machine's
                         cores, at most 64); a seed's trace is the same on any number
                         of threads
  --check-determinism    run each seed twice and compare the traces byte for byte
  --replay S             run seed S again, as a failure's replay command does: a failure
                         is reported, not shrunk again; not with --seed or --seeds
  --trace                print the whole trace of each seed (a failure's report then
                         leaves out its last events, which the trace ends with)
  --no-shrink            do not minimise a failure (GRAPH's jobs stay: its workers and
                         faults shrink)
  --json                 print one JSON object per seed on stdout, the same fields for a
                         pass or a failure (one seed's has each job's outcome, its value
                         or error, as outcomes; a failure of GRAPH's, the jobs its
                         report follows as yourJobs, the first 4 of yourJobsOf; the
                         first failure's, its smallest reproducer), a range's summary
                         on stderr
  --ui                   with --replay S: open the dashboard on the seed's recorded trace (a
                         time slider and step buttons) until Ctrl-C; not with --json or
                         --check-determinism
  --ui-port P            the dashboard's port (default 0: any free port)
  -h, --help             this help

Exit code: 0 when every seed passed, 1 when one failed, 2 for bad usage, 130 / 143 after
SIGINT / SIGTERM (which say how many seeds were done and the command that runs the rest).`;

/** How often a seed's progress line is drawn again, at most (wall ms). */
const PROGRESS_EVERY_MS = 100;

interface Settings {
  /** Your graph and its handlers, as module paths (`GRAPH --handlers SIM`); none: drawn. */
  modules: FlaggedSimModules | undefined;
  profile: FaultProfile;
  faults: Fault[] | undefined;
  /** Virtual ms within which drawn faults start (undefined: the profile's). */
  faultsWithin: number | undefined;
  jobs: number;
  workers: number;
  /** Largest rank group drawn; 0 leaves rank groups out. */
  world: number;
  until: number | undefined;
  failFast: boolean;
  plantedBugs: readonly PlantedBug[];
}

/** How seeds are checked and reported beside what they simulate: a run of the rest keeps them. */
interface Output {
  checkDeterminism: boolean;
  trace: boolean;
  json: boolean;
  shrink: boolean;
  /** Threads asked for with --threads (undefined: the default). */
  threads: number | undefined;
}

/**
 * `baton sim`: simulates seeds, prints pass/fail per seed and, for a failure, the invariant,
 * the last events, the command that replays it and the smallest reproducer found by shrinking.
 *
 * @example
 * ```ts
 * process.exitCode = await simCommand(["--seeds", "1..500", "--faults", "heavy"]);
 * ```
 */
export async function simCommand(argv: string[]): Promise<number> {
  const { values, positionals, mistake } = parseFlags("sim", {
    args: argv,
    allowPositionals: true,
    options: commandCatalog.sim.flags,
  });
  if (values.help) return printHelp(SIM_USAGE, mistake);
  const portToUi = portGivenToUi(positionals, values.ui === true);
  if (portToUi) throw portToUi;
  const modules = await yourGraph(positionals, values);
  if (values.faults !== undefined && values["fault-list"] !== undefined) {
    throw new ConfigError(
      "give --faults PROFILE or --fault-list LIST, not both: a fault list is the whole plan, and the profile would be ignored",
    );
  }
  if (values["faults-within"] !== undefined && values["fault-list"] !== undefined) {
    throw new ConfigError(
      "--faults-within is when drawn faults start, and --fault-list is a plan whose faults start when it says: leave out one of them",
    );
  }
  const profile = choiceFlag("--faults", values.faults ?? "default", FAULT_PROFILES);
  if (values["faults-within"] !== undefined && profile === "none") {
    throw new ConfigError(
      "--faults-within is when drawn faults start, and --faults none draws none: leave out --faults-within, or give --faults default or heavy",
    );
  }
  const plantedBugs = (values.plant ?? []).flatMap((p) => p.split(","));
  checkPlantedBugs("--plant", plantedBugs);
  const settings: Settings = {
    modules,
    profile,
    faults: values["fault-list"] !== undefined ? parseFaults(values["fault-list"]) : undefined,
    jobs:
      wholeNumberFlag("--jobs", values.jobs, "a number of jobs", { most: SIM_LIMITS.jobs }) ??
      SIM_DEFAULTS.jobs,
    workers:
      wholeNumberFlag("--workers", values.workers, "a number of workers", {
        most: SIM_LIMITS.workers,
      }) ?? SIM_DEFAULTS.workers,
    world:
      wholeNumberFlag("--world", values.world, "a number of ranks", {
        least: 0,
        most: SIM_LIMITS.world,
      }) ?? defaultWorld(modules),
    faultsWithin: virtualMsFlag("--faults-within", values["faults-within"]),
    until: virtualMsFlag("--until", values.until),
    failFast: values["fail-fast"] === true,
    plantedBugs,
  };
  const output: Output = {
    checkDeterminism: values["check-determinism"] === true,
    trace: values.trace === true,
    json: values.json === true,
    shrink: values["no-shrink"] !== true,
    threads: wholeNumberFlag("--threads", values.threads, "a number of threads", {
      most: SIM_LIMITS.threads,
    }),
  };
  const [first, last] = seedRange(values);
  // A path that does not load, or a module without the export asked for: said before any seed.
  // A seed's progress line counts the graph's jobs from the start (it read 0/0 until the
  // coordinator had planned a graph of your own).
  const jobs =
    modules === undefined
      ? settings.jobs
      : planned(([] as readonly JobSpec[]).concat((await loadSimModules(modules)).graph)).jobs;
  /** How a failure is reported: a replay (of a printed command) is not shrunk again. */
  const report: Report = {
    shrink: output.shrink && values.replay === undefined,
    traced: output.trace,
    replaying: values.replay !== undefined,
    ui: values.ui === true,
  };
  const uiPort = uiPortFlag(values["ui-port"], { ui: values.ui === true });
  // A progress line on a terminal: seeds done for a range, jobs and virtual time for one seed.
  const live =
    process.stderr.isTTY === true && !output.json ? new LiveLine(process.stderr) : undefined;
  if (values.ui) {
    // --seed S reports a failure whole and shrinks it (up to a minute) before the dashboard
    // could open; the dashboard is a replay's, as a failure's printed command gives it.
    if (values.replay === undefined) {
      throw new ConfigError(
        values.seed === undefined
          ? "--ui shows one seed: give --replay S"
          : `--ui opens the dashboard on a replay of one seed: give --replay ${values.seed} instead of --seed ${values.seed} (the same run, its failure reported without shrinking)`,
      );
    }
    // The dashboard's run is one simulation, reported as text: these were ignored.
    const ignored = (["json", "check-determinism"] as const).filter((flag) => values[flag]);
    if (ignored.length > 0) {
      throw new ConfigError(
        `--ui replays one run of the seed on the dashboard and reports it as text: leave out --${ignored.join(" and --")}, or --ui`,
      );
    }
    // The seed runs before the dashboard opens on it: minutes, for thousands of jobs.
    const progress = live && { onProgress: seedProgress(first, jobs, live) };
    // A Ctrl-C meanwhile stops as it does without --ui (it ended the process without a word,
    // its progress line left half drawn); once the dashboard is open, it closes the dashboard.
    const again = `${command(`--replay ${first}`, settings, settings.jobs, settings.workers)}${outputFlags(output)} --ui${values["ui-port"] === undefined ? "" : ` --ui-port ${uiPort}`}`;
    const onSignal = (signal: "SIGINT" | "SIGTERM") => {
      live?.clear();
      process.stderr.write(
        `baton sim: ${signal}: stopped after 0 of 1 seed, 0 failed, before the dashboard opened; the rest: ${again}\n`,
      );
      process.exit(SIGNAL_EXIT[signal]);
    };
    const seedEnded = () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    };
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    try {
      // The dashboard's server and its views load only for --ui: a sim without it never opens one.
      const { simDashboard } = await import("./simDashboard.ts");
      return await simDashboard(
        first,
        (hooks) => runSeed(first, settings, { ...hooks, ...progress }),
        {
          port: uiPort,
          report: async (result) => {
            seedEnded();
            live?.clear();
            if (!result.ok) process.exitCode = 1;
            if (output.trace) process.stdout.write(`${result.trace.join("\n")}\n`);
            process.stdout.write(`${verdict(result, settings)}\n`);
            if (!result.ok) await reportFailure(result, settings, report);
          },
        },
      );
    } finally {
      seedEnded();
    }
  }
  const many = last > first;
  const started = performance.now();
  let failures = 0;
  /** The first seed that failed: a summary names it, the one whose failure was reported whole. */
  let firstFailed: number | undefined;
  const threads = threadsFor(last - first + 1, output.threads);
  if (many) setSeedThreadsV8Flags(threads);
  const checks = { checkDeterminism: output.checkDeterminism, traces: output.trace };
  /** A range's line on a terminal: it counts the seeds as they end on every thread. */
  let progress: SeedsProgress | undefined;
  // What your graph's handlers print (console.log, on the simulation's threads) goes above the
  // progress line, where it was written after the line's text.
  const unadopt = live?.adopt(terminalStreams());
  /**
   * Seeds that ended and are not reported yet, whether each passed: they wait for an earlier
   * seed still running on another thread (a slow one), and a
   * Ctrl-C's summary says so (it said "stopped after 0 of 100000 seeds" under a line that
   * read 6 done, one of them failed).
   */
  const unreported = new Map<number, boolean>();
  const seeds = many
    ? simulateSeeds(first, last, drawn(settings), {
        threads,
        ...checks,
        onSeedEnded: (r) => {
          unreported.set(r.seed, r.ok);
          progress?.ended(r.ok);
        },
      })
    : oneSeed(first, { simulation: drawn(settings), ...checks }, jobs, live);
  if (many && live !== undefined) progress = new SeedsProgress(live, first, last, threads);
  // The range's progress line replaces the passes on a terminal; stdout sent elsewhere still gets them.
  const passesShown = !many || live === undefined || process.stdout.isTTY !== true;
  /** The last seed whose result came (they come in order), for a Ctrl-C's summary. */
  let lastDone = first - 1;
  /** Seeds of your graph whose run was over before their drawn faults (said at the end). */
  const outrun =
    settings.modules !== undefined && settings.faults === undefined && settings.profile !== "none"
      ? new FaultsOutrun(settings.faultsWithin ?? faultHorizonMs(settings.profile))
      : undefined;
  /** Passed seeds in which jobs of your graph failed, and the first such job (said at the end). */
  let jobsFailed: { seed: number; seeds: number; first: FailedJob } | undefined;
  // A range's rest, or the one seed (as it was asked for) that a long run stopped in.
  const rest = () =>
    many
      ? `--seeds ${lastDone + 1}..${last}`
      : `--${values.replay !== undefined ? "replay" : "seed"} ${first}`;
  /**
   * How many seeds failed, and the first: after hundreds of seeds the summary said "29 failed"
   * and the failure reported whole (and shrunk) was far up, among the passes.
   */
  const failed = () =>
    `${failures} failed${firstFailed === undefined ? "" : ` (the first in seed ${firstFailed})`}`;
  /** How long the range's `seeds` done so far took, and their rate. */
  const pace = (seeds: number) => {
    const seconds = (performance.now() - started) / 1000;
    return `in ${seconds.toFixed(1)} s (${(seeds / seconds).toFixed(1)} seeds/s on ${threads} thread${threads === 1 ? "" : "s"})`;
  };
  /** The line on the passed seeds in which jobs of your graph failed, if any did. */
  const jobsFailedLine = () => {
    if (jobsFailed === undefined) return "";
    const { seed, seeds, first: job } = jobsFailed;
    return `jobs of your graph failed in ${seeds} passed seed${seeds === 1 ? "" : "s"}, the first in seed ${seed} (${failedJob(job)}): a failed job breaks no invariant; to fail a seed on a check of your own, call the tools' invariant(holds, message); --seed S --json lists a seed's failed jobs\n`;
  };
  const onSignal = (signal: "SIGINT" | "SIGTERM") => {
    progress?.stop();
    live?.clear();
    const done = lastDone - first + 1;
    const runRest =
      lastDone < last
        ? `; the rest${unreported.size > 0 ? " (which runs them again)" : ""}: ${command(rest(), settings, settings.jobs, settings.workers)}${outputFlags(output)}`
        : "";
    // A range's summary of the seeds done, as its end gives it (the jobs of your graph that
    // failed were left out after a Ctrl-C, though the seeds that ran had them).
    process.stderr.write(
      `baton sim: ${signal}: stopped after ${done} of ${last - first + 1} seed${many ? "s" : ""}, ${failed()}${many && done > 0 ? `, ${pace(done)}` : ""}${endedUnreported(unreported, lastDone + 1)}${runRest}\n${jobsFailedLine()}`,
    );
    process.exit(SIGNAL_EXIT[signal]);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    for await (const result of seeds) {
      lastDone = result.seed;
      unreported.delete(result.seed);
      // A failed seed stopped where it broke, not because its run was over.
      if (result.ok) outrun?.add(result.faults, result.virtualMs);
      if (!result.ok) {
        failures++;
        firstFailed ??= result.seed;
        // Set before the failure is written: a reader that closes stdout early (`| head`) ends
        // the command at once with it (bin/baton.js), where a failure it was shown exited 0.
        process.exitCode = 1;
      }
      if (result.ok && settings.modules !== undefined && result.failed.length > 0) {
        jobsFailed ??= { seed: result.seed, seeds: 0, first: result.failed[0]! };
        jobsFailed.seeds++;
      }
      if (output.json) {
        // The first failure is shrunk as the text report's is, its reproducer in its object.
        const smallest =
          !result.ok && failures === 1 && shrinks(result, report)
            ? await smallestReproducer(result, settings)
            : undefined;
        const json = jsonOf(result, settings, output, !many, smallest);
        process.stdout.write(`${JSON.stringify(json)}\n`);
        continue;
      }
      if (output.trace) writeAbove(live, `${result.trace.join("\n")}\n`);
      if (!result.ok || passesShown) writeAbove(live, `${verdict(result, settings)}\n`);
      // The first failure is reported whole and shrunk (up to a minute); each later one by
      // what broke and its replay command, which are enough to take it up.
      if (!result.ok && failures === 1) await reportFailure(result, settings, report, live);
      else if (!result.ok) {
        writeAbove(
          live,
          `seed ${result.seed} failed: ${result.violation!.message}\nreplay: ${replayCommand(result, settings)}\n`,
        );
      }
      progress?.draw();
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    progress?.stop();
    live?.clear();
    unadopt?.();
  }
  if (many) {
    // Under --json, stdout is the objects alone: the summary goes to stderr, where a sweep
    // piped to a file said nothing at all, not even how many seeds failed.
    (output.json ? process.stderr : process.stdout).write(
      `${last - first + 1} seeds, ${failed()}, ${pace(last - first + 1)}\n${jobsFailedLine()}${outrun?.line() ?? ""}`,
    );
  }
  return failures > 0 ? 1 : 0;
}

/** How many seeds a Ctrl-C's summary names by number, at most. */
const NAMED_SEEDS = 10;

/**
 * The clause of a Ctrl-C's summary on the seeds that had ended after `waiting` (the first not
 * reported, still running) and were not reported, naming those that failed; "" when none.
 */
function endedUnreported(unreported: ReadonlyMap<number, boolean>, waiting: number): string {
  if (unreported.size === 0) return "";
  const failed = [...unreported]
    .filter(([, ok]) => !ok)
    .map(([seed]) => seed)
    .sort((a, b) => a - b);
  const named = `${failed.slice(0, NAMED_SEEDS).join(", ")}${failed.length > NAMED_SEEDS ? ", …" : ""}`;
  const failures =
    failed.length === 0
      ? ""
      : ` (${failed.length} failed: seed${failed.length === 1 ? "" : "s"} ${named})`;
  const n = unreported.size;
  return `; ${n} later seed${n === 1 ? "" : "s"} had ended, unreported while seed ${waiting} ran${failures}`;
}

async function runSeed(
  seed: number,
  s: Settings,
  hooks: ReplayHooks & Pick<SimulateOptions, "onProgress">,
): Promise<SimulationResult> {
  return simulate({ ...hooks, seed, ...(await yourModules(drawn(s))) });
}

/**
 * The one seed `baton sim --seed S` (or `--replay S`) asks for, on this thread, with its
 * progress (of its graph's `jobs`) drawn on `live` when there is one (a terminal): a seed of
 * thousands of jobs takes minutes, and showed nothing until it ended.
 */
async function* oneSeed(
  seed: number,
  data: SeedThreadData,
  jobs: number,
  live: LiveLine | undefined,
): AsyncGenerator<SimulationResult> {
  if (live === undefined) {
    yield await simulateSeed(seed, data);
    return;
  }
  const onProgress = seedProgress(seed, jobs, live);
  yield await simulateSeed(seed, data, { onProgress });
}

/**
 * Draws seed `seed`'s progress line on `live` now (none of its `jobs` ended) and returns the
 * `onProgress` that draws it again, at most every `PROGRESS_EVERY_MS`.
 */
function seedProgress(seed: number, jobs: number, live: LiveLine): (p: SimProgress) => void {
  const started = performance.now();
  let drawnAt = Number.NEGATIVE_INFINITY;
  const draw = ({ virtualMs, ended, jobs }: SimProgress) => {
    const now = performance.now();
    if (now - drawnAt < PROGRESS_EVERY_MS) return;
    drawnAt = now;
    const seconds = ((now - started) / 1000).toFixed(0);
    live.draw(`seed ${seed}: ${ended}/${jobs} jobs ended, ${virtualMs} virtual ms (${seconds} s)`);
  };
  draw({ virtualMs: 0, ended: 0, jobs });
  return draw;
}

/**
 * The graph of your own that `positionals` and `--handlers` give (`baton sim GRAPH --handlers
 * SIM`), or none (the drawn graph). Refuses a graph without its handlers (a job module given
 * as the graph, said to be one, which it imports to tell) and the reverse, a second module,
 * and `--jobs` beside a graph, or given a module (`baton run`'s `--jobs FILE`).
 */
async function yourGraph(
  positionals: string[],
  values: { handlers?: string | undefined; jobs?: string | undefined },
): Promise<FlaggedSimModules | undefined> {
  const [graph, ...more] = positionals;
  if (more.length > 0) {
    throw new ConfigError(
      `give one graph module, not ${positionals.length} (${positionals.join(", ")}): GRAPH --handlers SIM (baton sim --help shows how)`,
    );
  }
  if (values.jobs?.match(/[/\\]|\.[cm]?[jt]s$/)) {
    throw new ConfigError(
      `--jobs ${values.jobs}: --jobs N is how many jobs the drawn graph has; your graph's handlers for the simulation go in --handlers SIM (a module whose default export is a job module, or a function of the tools { sleep, now, random, keep, invariant } returning one; README: Simulation)`,
    );
  }
  // `baton sim 42` or `baton sim 1..500`: a seed, not a graph module.
  const seeds =
    graph === undefined || existsSync(graph) ? undefined : /^\d+(\.\.\d+)?$/.exec(graph);
  if (seeds) {
    throw new ConfigError(
      `${graph} is no graph module: to simulate ${seeds[1] === undefined ? `seed ${graph}, give --seed ${graph}` : `seeds ${graph}, give --seeds ${graph}`}`,
    );
  }
  if (graph === undefined) {
    if (values.handlers === undefined) return undefined;
    throw new ConfigError(
      `--handlers ${values.handlers} goes with a graph of your own: give its module first (baton sim GRAPH --handlers SIM), or leave --handlers out to simulate a drawn graph`,
    );
  }
  if (values.handlers === undefined) {
    // A job module given as the graph is told so, not asked for handlers beside it.
    const module = await importUserModule(graph).catch(() => undefined);
    if (module !== undefined && exportsJobModuleAsGraph(module)) {
      throw new ConfigError(
        `${graph} is a job module (its default export is handlers), not a graph module: give the graph module, as baton run takes it, and the handlers the simulation runs instead of yours as --handlers SIM (baton sim GRAPH --handlers SIM; README: Simulation)`,
      );
    }
    throw new ConfigError(
      `${graph}: a graph of your own needs its simulated handlers: add --handlers SIM, a module whose default export is a handler for each kind, or a function of the tools { sleep, now, random, keep, invariant } returning them (README: Simulation)`,
    );
  }
  if (values.jobs !== undefined) {
    throw new ConfigError(
      `--jobs sizes the drawn graph, and you gave a graph of your own (${graph}): leave --jobs out`,
    );
  }
  return { graph, handlers: values.handlers, handlersFlag: "--handlers" };
}

/** The simulation `s` asks for, as `simulate` and `simulateSeeds` take it. */
function drawn(s: Settings): DrawnSimulation {
  return {
    ...(s.modules === undefined ? { jobs: s.jobs } : { modules: s.modules }),
    workers: s.workers,
    ...rankGroups(s),
    faults: s.faults ?? s.profile,
    ...(s.faults === undefined && s.faultsWithin !== undefined && { faultsWithin: s.faultsWithin }),
    ...(s.until !== undefined && { until: s.until }),
    ...(s.failFast && { failFast: true }),
    plantedBugs: s.plantedBugs,
  };
}

/**
 * The largest rank group drawn when `--world` is left out: none beside a graph of your own
 * (`drawsRankGroups`).
 */
function defaultWorld(modules: FlaggedSimModules | undefined): number {
  return modules === undefined ? DRAWN_WORLD : 0;
}

/** `simulate`'s rank-group options for `s`. */
function rankGroups(s: Settings) {
  return s.world === 0 ? { ranks: false } : { world: s.world };
}

/**
 * A seed's line: pass or FAIL, its times and trace hash. A pass of your own graph whose jobs
 * failed says so: a handler that throws breaks no invariant, and a seed whose every job failed
 * read "pass" and nothing more (`--json` alone carried `failed`).
 */
function verdict(r: SimulationResult, s: Settings): string {
  const timing = `${r.virtualMs} virtual ms in ${r.wallMs} ms, trace ${r.traceHash}`;
  if (r.ok) {
    const failed = s.modules === undefined ? [] : r.failed;
    if (failed.length === 0) return `seed ${r.seed}: pass (${timing})`;
    const more =
      failed.length > 1 ? `, first ${failedJob(failed[0]!)}` : `: ${failedJob(failed[0]!)}`;
    return `seed ${r.seed}: pass (${timing}); ${failed.length} of your jobs failed${more}`;
  }
  const { invariant } = r.violation!;
  const name = RANK_GROUP_INVARIANTS.includes(invariant)
    ? ` (rank groups: ${SIM_INVARIANTS[invariant]})`
    : "";
  return `seed ${r.seed}: FAIL invariant ${invariant}${name} (${timing})`;
}

type FailedJob = SimulationResult["failed"][number];

/** How long a failed job's message may be on a seed's line (its first line, cut). */
const FAILED_MESSAGE_CHARS = 120;

/** A failed job of your graph on one line: its kind and the first line of its message, cut. */
function failedJob({ kind, message }: FailedJob): string {
  const line = message.split("\n", 1)[0] ?? "";
  return `${kind}: ${line.length > FAILED_MESSAGE_CHARS ? `${line.slice(0, FAILED_MESSAGE_CHARS)}…` : line}`;
}

/**
 * The command that runs `seeds` (`--replay S`, or `--seeds A..B`) again with `s`, and with
 * `faults` when given.
 */
function command(seeds: string, s: Settings, jobs: number, workers: number, faults?: Fault[]) {
  const parts = ["baton sim"];
  if (s.modules !== undefined) {
    // Absolute: a replay command is pasted from wherever the person is, often another folder.
    const { graph, handlers } = s.modules;
    parts.push(quoted(resolve(graph)), `--handlers ${quoted(resolve(handlers))}`, seeds);
  } else parts.push(seeds, `--jobs ${jobs}`);
  parts.push(`--workers ${workers}`);
  const plan = faults ?? s.faults;
  if (plan === undefined) {
    parts.push(`--faults ${s.profile}`);
    if (s.faultsWithin !== undefined) parts.push(`--faults-within ${s.faultsWithin}`);
  } else if (plan.length === 0) parts.push("--faults none");
  else parts.push(`--fault-list "${formatFaults(plan)}"`);
  if (s.world !== defaultWorld(s.modules)) parts.push(`--world ${s.world}`);
  if (s.until !== undefined) parts.push(`--until ${s.until}`);
  if (s.failFast) parts.push("--fail-fast");
  for (const bug of s.plantedBugs) parts.push(`--plant ${bug}`);
  return parts.join(" ");
}

/**
 * `path` as one word of a shell command line: as it is when it holds only characters no shell
 * reads, else in double quotes, with `"`, `$`, `` ` `` and `\` escaped (a space was quoted,
 * but a `$` in a folder's name was expanded by the shell the command was pasted into).
 */
function quoted(path: string): string {
  if (/^[\w@%+=:,./-]+$/.test(path)) return path;
  return `"${path.replace(/["$`\\]/g, "\\$&")}"`;
}

/**
 * The command that replays the failed seed `r` of `s` with its whole trace (`--replay`: it
 * does not shrink again), or the `smaller` reproducer shrinking found. A seed whose traces
 * differed is replayed with `--check-determinism`, which alone shows it: one that read the
 * real clock fails without it (its replay told a run without the check to add it, and so did
 * one that read it in a run with the check).
 */
function replayCommand(r: SimulationResult, s: Settings, smaller?: Shrunk): string {
  const { jobs, workers } = smaller ?? r;
  const check = r.violation!.tracesDiffer ? " --check-determinism" : "";
  return `${command(`--replay ${r.seed}`, s, jobs, workers, smaller?.faults)}${check} --trace`;
}

/** The flags of `output` that a run of the rest of the seeds keeps. */
function outputFlags(output: Output): string {
  const flags = [
    output.checkDeterminism && "--check-determinism",
    output.trace && "--trace",
    output.json && "--json",
    !output.shrink && "--no-shrink",
    output.threads !== undefined && `--threads ${output.threads}`,
  ];
  return flags.map((flag) => (flag ? ` ${flag}` : "")).join("");
}

/**
 * A seed's line of `--json`: its result (`counts`, `failed`, … as `SimulationResult` has
 * them, a failed seed's too) with the fault plan as a fault list, with the whole trace under
 * `--trace` (never as lines of its own, which no JSON reader takes), and for a failure its
 * last events, the command that replays it and, for the first failure when it was shrunk, the
 * `smallest` reproducer (its command, jobs, workers, faults, and the simulations it took). One
 * seed's (`--seed S`, `--replay S`) has each job's outcome too, as `baton run --json` has
 * them: what your handlers returned (a range's lines leave them out: a seed's graph of jobs
 * each). A failed seed of your own graph has `yourJobs`, the jobs its report follows, and
 * `yourJobsOf`, how many it would follow (more when the list was cut).
 */
function jsonOf(r: SimulationResult, s: Settings, output: Output, one: boolean, smallest?: Shrunk) {
  const { trace, outcomes, ...summary } = r;
  return {
    ...summary,
    faults: formatFaults(r.faults),
    ...(one && { outcomes: [...outcomes.values()].map(jobJson) }),
    ...(!r.ok && s.modules !== undefined && yourJobsJson(r)),
    ...(!r.ok && {
      lastEvents: trace.slice(-LAST_EVENTS),
      replay: replayCommand(r, s),
    }),
    ...(smallest && {
      smallest: {
        replay: replayCommand(r, s, smallest),
        jobs: smallest.jobs,
        workers: smallest.workers,
        faults: formatFaults(smallest.faults),
        tries: smallest.tries,
      },
    }),
    ...(output.trace && { trace }),
  };
}

/**
 * `--json`'s `yourJobs` of a failed seed of your own graph: the jobs its report follows
 * (`yourJobsFollowed`), each with its kind: its outcome's, or the trace's label up to its
 * first space for a job that had not ended (a kind with a space in it is told only by the one).
 * `yourJobsOf` is how many jobs it would follow, of which `yourJobs` has the first 4, as the
 * text's "(4 of 6)" says: a reader could not tell a shortened list from a whole one.
 */
function yourJobsJson(r: SimulationResult) {
  const { of, jobs } = yourJobsFollowed(r.trace, r.violation!.message);
  return {
    yourJobs: jobs.map(({ id, label, ...job }) => ({
      id,
      kind: r.outcomes.get(id)?.kind ?? label.split(" ")[0],
      label,
      ...job,
    })),
    yourJobsOf: of,
  };
}

/** Writes `text` to stdout, clearing the progress line first when there is one. */
function writeAbove(live: LiveLine | undefined, text: string): void {
  live?.clear();
  process.stdout.write(text);
}

/** How `reportFailure` reports a failed seed. */
interface Report {
  /** Minimise it (not for a replay, whose command came from a report that did). */
  shrink: boolean;
  /** Its whole trace was printed (`--trace`), which ends with the last events. */
  traced: boolean;
  /** It is a replay (`--replay`), which needs no command to replay it. */
  replaying: boolean;
  /** The dashboard opens on it (`--ui`): a replay's report need not say how to open it. */
  ui: boolean;
}

/**
 * Prints what failed, the last events (unless the whole trace was printed) and the replay
 * command (unless this is the replay; a replay instead ends with the command that opens the
 * dashboard on it, `--ui`, unless it is open already: a replay's report said nothing of what to
 * do next) at once, then shrinks (up to a minute of simulations) and prints the smallest
 * reproducer: a Ctrl-C while shrinking keeps the replay command on the screen. A replay with
 * `--trace` used to print the last events again after the trace, and shrink again for up to a
 * minute, as the run that printed its command had. A seed whose traces differed
 * (`tracesDiffer`) passes in each run alone, which shrinking and the dashboard make: the
 * report says that it is neither shrunk nor stepped through (an invariant-0 failure of one
 * run was neither, and said nothing of it).
 */
async function reportFailure(r: SimulationResult, s: Settings, how: Report, live?: LiveLine) {
  const alonePasses = `each run of seed ${r.seed} alone passes, only the second run's trace differs`;
  const lines = [
    `seed ${r.seed} failed: ${r.violation!.message}`,
    `faults: ${formatFaults(r.faults) || "none"}`,
    ...(s.modules === undefined ? [] : yourJobsTimelines(r.trace, r.violation!.message)),
    ...(how.traced
      ? []
      : lastEvents(r.trace, s.modules === undefined ? undefined : r.violation!.message)),
    ...(how.replaying ? [] : [`replay: ${replayCommand(r, s)}`]),
    ...(how.replaying && !how.ui
      ? [
          r.violation!.tracesDiffer
            ? `not for the dashboard, which shows one run: ${alonePasses}`
            : `step through it in the dashboard: ${command(`--replay ${r.seed}`, s, r.jobs, r.workers)} --ui`,
        ]
      : []),
    ...(how.shrink && r.violation!.tracesDiffer ? [`not shrunk: ${alonePasses}`] : []),
  ];
  writeAbove(live, `${lines.join("\n")}\n`);
  if (shrinks(r, how)) {
    const small = await smallestReproducer(r, s);
    // A range's progress line went on being drawn while it shrank.
    writeAbove(
      live,
      `smallest reproducer (${small.tries} simulations): ${replayCommand(r, s, small)}\n`,
    );
  }
}

/**
 * Whether the failed seed `r` is minimised: not for a replay, nor for a seed whose traces
 * differed (its every run passes alone). An invariant-0 failure of one run (a read of the real
 * clock, a real timer) is, as any other failure: it was not, nor shown in the dashboard.
 */
function shrinks(r: SimulationResult, how: Pick<Report, "shrink">): boolean {
  return how.shrink && !r.violation!.tracesDiffer;
}

/** The smallest configuration of `s` in which seed `r` fails as it did (up to a minute of simulations). */
async function smallestReproducer(r: SimulationResult, s: Settings): Promise<Shrunk> {
  return shrink(r, {
    ...(s.modules !== undefined && (await loadSimModules(s.modules))),
    ...rankGroups(s),
    plantedBugs: s.plantedBugs,
    ...(s.until !== undefined && { until: s.until }),
    ...(s.failFast && { failFast: true }),
  });
}

/** The seeds the flags ask for, first and last: `--seed S` or `--replay S` is one. */
function seedRange(values: {
  seed?: string | undefined;
  replay?: string | undefined;
  seeds?: string | undefined;
}): [number, number] {
  const given = (["seed", "replay", "seeds"] as const).filter((f) => values[f] !== undefined);
  if (given.length > 1) {
    throw new ConfigError(
      `give one of --seed S, --replay S or --seeds A..B, not ${given.map((f) => `--${f}`).join(" and ")}`,
    );
  }
  const seed = (flag: string, text: string) =>
    wholeNumberFlag(flag, text, "a whole number", { least: 0, most: SIM_LIMITS.seed })!;
  const one = values.seed ?? values.replay;
  if (one !== undefined) {
    const s = seed(values.seed !== undefined ? "--seed" : "--replay", one);
    return [s, s];
  }
  const seeds = values.seeds ?? SIM_DEFAULTS.seeds;
  const m = /^(\d+)\.\.(\d+)$/.exec(seeds);
  if (!m) {
    // Another way to write a range (1-100, 1:100, 1...100, 1 .. 100): the one it meant.
    const range = /^\s*(\d+)\s*(?:-|:|\.{1,3})\s*(\d+)\s*$/.exec(seeds);
    const meant = /^\d+$/.test(seeds)
      ? `; for seed ${seeds} alone, give --seed ${seeds}`
      : range
        ? `; did you mean --seeds ${range[1]}..${range[2]}?`
        : "";
    throw new ConfigError(`--seeds must look like A..B, e.g. 1..1000, not "${seeds}"${meant}`);
  }
  const [first, last] = [seed("--seeds", m[1]!), seed("--seeds", m[2]!)];
  if (first > last) {
    throw new ConfigError(`--seeds must be A..B with A ≤ B, e.g. 1..1000, not "${seeds}"`);
  }
  return [first, last];
}
