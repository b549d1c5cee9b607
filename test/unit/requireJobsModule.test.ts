import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { type LocalWorkersOptions, localPool } from "../../src/runtime/localPool.ts";
import { type SlurmPoolOptions, slurmPool } from "../../src/runtime/slurmPool.ts";

describe("a pool of worker processes without a job module path", () => {
  it.each([
    [undefined, "not undefined"],
    ["", 'not "" (an empty path)'],
    [{ double: () => 2 }, "not an object (give the module's path, not the module)"],
  ])("is refused when it is made, jobsModule %o", (jobsModule, why) => {
    // Each used to start workers with `--jobs undefined` (or the current directory), which
    // exited 2 and failed the run as workers that cannot start.
    const local = () => localPool({ jobsModule, count: 1 } as unknown as LocalWorkersOptions);
    expect(local).toThrow(ConfigError);
    expect(local).toThrow(
      `localPool: jobsModule must be the path of the job module file its workers load, such as "jobs.ts", ${why}`,
    );
    const slurm = () => slurmPool({ jobsModule } as unknown as SlurmPoolOptions);
    expect(slurm).toThrow(`slurmPool: jobsModule must be the path of the job module file`);
  });

  it("takes a path", () => {
    expect(localPool({ jobsModule: "jobs.ts", count: 0 }).jobsModule).toBe("jobs.ts");
    expect(slurmPool({ jobsModule: "/shared/jobs.ts" }).jobsModule).toBe("/shared/jobs.ts");
  });
});
