import { describe, expect, it } from "vitest";
import { yourJobsTimelines } from "../../src/cli/yourJobsTimelines.ts";
import { A, B, C, TRACE, VIOLATION } from "../fixtures/yourJobsTrace.ts";

describe("yourJobsTimelines", () => {
  it("follows the job the failure names, then those granted again, each with its own lines", () => {
    expect(yourJobsTimelines(TRACE, VIOLATION)).toEqual([
      "your jobs: the one the failure names, then those granted more than once, with their lines of the trace (its replay prints them all):",
      `  reconcile (${B}), 1 attempt:`,
      `    1900 grant ${B} (reconcile) to sim:3 attempt 1`,
      `  charge 1 (${A}), 2 attempts:`,
      `    1 grant ${A} (charge 1) to sim:1 attempt 1`,
      // The run's faults while it ran, and its connection's until its next grant: not another's.
      "    500 fault slow +100 ms for 2000 ms",
      "    900 fault reset sim:1 by client",
      "    900 net sim:1 client closed 1006 connection reset",
      `    900 job ${A} ready`,
      `    900 grant ${A} (charge 1) to sim:2 attempt 2`,
      `    1200 # ${A} (charge) attempt 1: its handler ended 300 ms after its abort (connection closed)`,
      "    1500 fault coordinator-crash coordinator-0, back in 100 ms",
      "    1600 start coordinator-1",
      `    1700 net sim:3 > server result ${A} completed`,
      `    1710 job ${A} completed`,
    ]);
  });

  it("follows the jobs running when it broke, where a race between jobs shows", () => {
    // index read the pages before render "blog" had written its page: the graph ran index
    // after render "home" alone. The report showed index alone.
    const [home, blog, index] = ["1111111111111111", "2222222222222222", "3333333333333333"];
    const trace = [
      `1 grant ${home} (render "home") to sim:2 attempt 1`,
      `1 job ${home} running`,
      `366 grant ${blog} (render "blog") to sim:2 attempt 1`,
      `366 job ${blog} running`,
      `375 job ${home} completed`,
      `375 job ${index} ready`,
      `1298 grant ${index} (index ["home","blog"]) to sim:1 attempt 1`,
      `1298 job ${index} running`,
      `1400 violation 15: invariant 15 (…) violated: job ${index} (index): not rendered yet: blog`,
    ];
    expect(
      yourJobsTimelines(
        trace,
        `invariant 15 (…) violated: job ${index} (index): not rendered yet: blog`,
      ),
    ).toEqual([
      "your jobs: the one the failure names, then those running when it broke, with their lines of the trace (its replay prints them all):",
      `  index ["home","blog"] (${index}), 1 attempt:`,
      `    375 job ${index} ready`,
      `    1298 grant ${index} (index ["home","blog"]) to sim:1 attempt 1`,
      `  render "blog" (${blog}), 1 attempt, running when it broke:`,
      `    366 grant ${blog} (render "blog") to sim:2 attempt 1`,
    ]);
  });

  it("gives nothing when the failure names no job of the trace, none was granted again and none was running", () => {
    const once = TRACE.filter(
      (line) => !line.includes("attempt 2") && !line.includes(B) && !line.includes(C),
    );
    expect(yourJobsTimelines(once, "invariant 6 (…) violated: the run is not over")).toEqual([]);
  });

  it("follows at most 4 jobs, and shows the last 16 lines of each", () => {
    const ids = [...Array(6).keys()].map((n) => `${n}`.repeat(16));
    const trace = ids.flatMap((id, n) =>
      [1, 2].map(
        (attempt) => `${n * 10 + attempt} grant ${id} (work ${n}) to sim:1 attempt ${attempt}`,
      ),
    );
    const lines = yourJobsTimelines(trace, "no job named");
    expect(lines[0]).toBe(
      "your jobs: those granted more than once (4 of 6), with their lines of the trace (its replay prints them all):",
    );
    expect(lines.filter((line) => /^ {2}\S/.test(line))).toHaveLength(4);
    const logged = [...Array(20).keys()].map(
      (n) => `${n + 2} log ${A} (charge) attempt 2 info: ${n}`,
    );
    const mine = TRACE.slice(0, 13).filter((line) => !line.includes(C));
    const long = yourJobsTimelines([...mine, ...logged], "");
    // Its grants, the slow link, the reset and its close, ready: 6 lines and 20 logs.
    expect(long.slice(1, 4)).toEqual([
      `  charge 1 (${A}), 2 attempts, running when it broke:`,
      "    … (10 earlier)",
      `    6 log ${A} (charge) attempt 2 info: 4`,
    ]);
    expect(long).toHaveLength(1 + 1 + 1 + 16);
  });
});
