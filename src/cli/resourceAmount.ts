import { ConfigError } from "../errors.ts";

/**
 * The most gpus a worker offers: more than any one machine holds (the largest hold 8 or 16,
 * and 7 MIG slices of each); baton cannot count them, so a gpus offer is not checked against
 * the machine as cpus and memory are, and 10^12 was taken unsaid.
 */
export const MOST_GPUS = 1_024;

/**
 * A resource amount given on the command line: a decimal number from 0 to `most` (default
 * 2^53 - 1; `4`, `0.5`), or undefined when absent. What else `Number()` reads (`0x10`, `1e3`,
 * ` 5`) is refused, as a whole-number flag refuses it, and so is a longer number: 400 digits
 * read as Infinity, which the worker's hello frame cannot carry (the coordinator refused it
 * as a protocol violation). Above `most`, `instead` says what to give. `what` names the
 * amount in errors (`--cpus`, `--slurm-resources gpus`).
 *
 * @example
 * ```ts
 * resourceAmount("--cpus", "0.5"); // 0.5
 * resourceAmount("--cpus", "-1"); // ConfigError: --cpus must be a number of 0 or more, such as 4 or 0.5, not "-1"
 * ```
 */
export function resourceAmount(
  what: string,
  text: string | undefined,
  { most, instead }: { most: number; instead: string } = {
    most: Number.MAX_SAFE_INTEGER,
    instead: "",
  },
): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(text)) {
    throw new ConfigError(`${what} must be a number of 0 or more, such as 4 or 0.5, not "${text}"`);
  }
  const value = Number(text);
  if (value > most) {
    throw new ConfigError(
      `${what} ${text} is more than any machine offers: give at most ${most}${instead}`,
    );
  }
  return value;
}
