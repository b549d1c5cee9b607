/**
 * The error of a group that failed and whose teardown could not be verified either: it says
 * both, and the rank's log is quoted last, so that nothing reads as the log's last line.
 * Simulated processes, files and clock.
 */
import { expect, it } from "vitest";
import type { RankGroupError } from "../../src/errors.ts";
import { launchGroup } from "../../src/runtime/launchGroup.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";

it("a rank failure whose teardown is not verified names both and quotes the rank's log last", async () => {
  const clock = new SimClock();
  const procs = new SimProcs({
    clock,
    programs: {
      // Rank 1 fails at once; rank 0 ignores TERM and survives every KILL.
      "/bin/rank": (spawn) =>
        spawn.env?.RANK === "1"
          ? { main: (self) => self.clock.setTimeout(() => self.exit(3), 10) }
          : { onTerm: "ignore", killsToDie: 1_000 },
    },
  });
  const group = launchGroup({
    argv: ["/bin/rank"],
    worldSize: 2,
    stateDir: "/sim/run",
    operatorEnv: {},
    teardown: { termGraceMs: 100, killWaitMs: 100, killAgainWaitMs: 100 },
    ports: {
      procs,
      clock,
      files: new SimFiles(new SimEntropy(1)).port(clock.scope()),
      entropy: new SimEntropy(2),
      freePort: async () => 29_500,
      logTail: async () => "The last line of the log:\n  | rank 1 gives up",
    },
  });
  let error: RankGroupError | undefined;
  void group.wait().catch((failure: RankGroupError) => {
    error = failure;
  });
  for (let turns = 0; error === undefined && turns < 100_000; turns++) {
    await new Promise((resolve) => setImmediate(resolve));
    clock.fireNext();
  }
  expect(error?.code).toBe("RANK_FAILED");
  expect(error?.message).toMatch(
    /rank 1 exited with code 3\. The other ranks were stopped\. The teardown that followed is not verified either: .* Its log is \/sim\/run\/dep-\w+\/rank-1\.log\. The last line of the log:\n {2}\| rank 1 gives up$/s,
  );
});
