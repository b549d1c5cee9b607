import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";

/** How the options are named where they were given: `slurmPool`'s or `baton run`'s. */
const NAMING = {
  slurmPool: {
    given: (option: string) => `slurmPool: sbatchOptions ${JSON.stringify(option)}`,
    resources: "slurmPool's resources (such as { cpus: 4, memory: 16384, gpus: 1 }; memory in MiB)",
  },
  "baton run": {
    given: (option: string) => `--slurm-opt=${option}`,
    resources: "--slurm-resources (such as cpus=4,memory=16384,gpus=1; memory in MiB)",
  },
} as const;

/** The sbatch options a pool sets itself, long names and the short letters that stand for them. */
const SHORT: Readonly<Record<string, string>> = {
  J: "job-name",
  a: "array",
  o: "output",
  e: "error",
  c: "cpus-per-task",
  G: "gpus",
};
/** What each option the pool sets itself sets, and why it does, by long name. */
const LOG =
  "log file, which the pool sets itself (slurm-<id>.log in the run's log folder, which its errors quote)";
const OWN: Readonly<Record<string, string>> = {
  "job-name":
    "job name, which the pool sets itself (baton-<8 hex>: it finds its allocations in the queue by it, and a later run or baton reap cancels a killed run's by it)",
  array: "job array, which the pool makes itself, of the allocations it lacks",
  output: LOG,
  error: LOG,
};
const RESOURCES = new Set([
  "cpus-per-task",
  "mem",
  "mem-per-cpu",
  "mem-per-gpu",
  "gpus",
  "gpus-per-node",
  "gpus-per-task",
]);

/**
 * Refuses, when the pool is made, further sbatch options (`slurmPool`'s `sbatchOptions`,
 * `baton run --slurm-opt`) that are not a list of strings, or that set what the pool sets
 * itself: the job name (`--job-name`, `-J`: the pool finds its allocations in the queue by
 * `baton-<8 hex>`, and a later run or `baton reap` cancels a killed run's by it), the array
 * (`--array`, `-a`), the log files (`--output`, `--error`, `-o`, `-e`: `slurm-<id>.log` in the
 * run's log folder, which its errors quote), or what each allocation gets (`--cpus-per-task`,
 * `-c`, `--mem…`, `--gpus…`, `-G`, a `--gres` of gpus), which the pool asks of Slurm from
 * what each worker offers the jobs' `requires` (`resources`): given here, the allocations
 * would be bigger and the workers would still offer the pool's. `where` says how the message
 * names the option and the way out.
 *
 * @example
 * ```ts
 * checkSbatchOptions(["--time=1:00:00", "--qos=low"], "slurmPool"); // fine
 * checkSbatchOptions(["--cpus-per-task=4"], "baton run");
 * // ConfigError: --slurm-opt=--cpus-per-task=4 sets what each allocation gets, which the pool asks of Slurm from what each worker offers the jobs' requires: give it in --slurm-resources (such as cpus=4,memory=16384,gpus=1; memory in MiB) instead, …
 * ```
 */
export function checkSbatchOptions(options: unknown, where: keyof typeof NAMING): void {
  if (options === undefined) return;
  const naming = NAMING[where];
  if (!Array.isArray(options) || options.some((option) => typeof option !== "string")) {
    throw new ConfigError(
      `slurmPool: sbatchOptions must be a list of sbatch options, each a string, such as ["--time=1:00:00", "--qos=low"], not ${preview(options)}`,
    );
  }
  const list = options as readonly string[];
  list.forEach((option, i) => {
    const long = /^--([\w-]+)(?:=(.*))?$/s.exec(option);
    const name = long ? long[1]! : /^-(\w)/.exec(option)?.[1];
    const full = name === undefined ? undefined : long ? name : SHORT[name];
    if (full === undefined) return;
    const value = long?.[2] ?? list[i + 1] ?? "";
    const own = OWN[full];
    if (own !== undefined) {
      throw new ConfigError(`${naming.given(option)} sets the allocations' ${own}: leave it out`);
    }
    if (RESOURCES.has(full) || (full === "gres" && /gpu/i.test(value))) {
      throw new ConfigError(
        `${naming.given(option)} sets what each allocation gets, which the pool asks of Slurm from what each worker offers the jobs' requires: give it in ${naming.resources} instead, and the workers offer the jobs what their allocations have`,
      );
    }
  });
}
