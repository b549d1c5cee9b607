import { ConfigError } from "../errors.ts";
import { resourceAmount } from "./resourceAmount.ts";

/** A memory amount written with a unit, as `sbatch --mem` takes it: `16G`, `512M`, `1.5TiB`. */
const WITH_UNIT = /^(\d+(?:\.\d+)?)\s*([KMGT])(?:i?B)?$/i;
/** MiB in one of each unit. */
const MIB_PER = { K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024 } as const;

/**
 * A memory amount given on the command line, in MiB, read as `resourceAmount` reads any
 * amount, or undefined when absent. One written with a unit (`16G`, `512M`, `1.5TiB`, as
 * `sbatch --mem` takes it) is refused, saying its MiB as `spelled` writes the flag with them
 * (`--memory 16384`, `memory=16384`). `what` names the amount in errors.
 *
 * @example
 * ```ts
 * memoryAmount("--memory", "16384", (mib) => `--memory ${mib}`); // 16384
 * memoryAmount("--memory", "16G", (mib) => `--memory ${mib}`);
 * // ConfigError: --memory is in MiB, without a unit: for 16G give --memory 16384
 * ```
 */
export function memoryAmount(
  what: string,
  text: string | undefined,
  spelled: (mib: number) => string,
): number | undefined {
  const unit = text === undefined ? null : WITH_UNIT.exec(text);
  if (unit) {
    const mib = Math.ceil(
      Number(unit[1]) * MIB_PER[unit[2]!.toUpperCase() as keyof typeof MIB_PER],
    );
    throw new ConfigError(`${what} is in MiB, without a unit: for ${text} give ${spelled(mib)}`);
  }
  return resourceAmount(what, text);
}
