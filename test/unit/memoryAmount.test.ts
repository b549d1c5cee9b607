/**
 * A memory amount on the command line (`baton worker --memory`, `--slurm-resources memory=`):
 * MiB without a unit, and a unit refused saying the MiB as the flag takes them.
 */
import { describe, expect, it } from "vitest";
import { memoryAmount } from "../../src/cli/memoryAmount.ts";
import { ConfigError } from "../../src/errors.ts";

const asFlag = (mib: number) => `--memory ${mib}`;

describe("memoryAmount", () => {
  it("reads MiB, and is undefined when absent", () => {
    expect(memoryAmount("--memory", "16384", asFlag)).toBe(16384);
    expect(memoryAmount("--memory", "0.5", asFlag)).toBe(0.5);
    expect(memoryAmount("--memory", undefined, asFlag)).toBeUndefined();
  });

  it.each([
    ["16G", "--memory 16384"],
    ["16GiB", "--memory 16384"],
    ["512m", "--memory 512"],
    ["1.5T", "--memory 1572864"],
  ])("refuses %s, saying its MiB as the flag is written", (text, give) => {
    expect(() => memoryAmount("--memory", text, asFlag)).toThrow(
      new ConfigError(`--memory is in MiB, without a unit: for ${text} give ${give}`),
    );
  });

  it("refuses what is no amount as any resource amount is refused", () => {
    expect(() => memoryAmount("--memory", "lots", asFlag)).toThrow(
      '--memory must be a number of 0 or more, such as 4 or 0.5, not "lots"',
    );
  });
});
