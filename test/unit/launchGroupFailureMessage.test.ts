/**
 * The error of a group that failed and whose teardown could not be verified either: it says
 * both, and the rank's log is quoted last, so that nothing reads as the log's last line.
 */
import { expect, it } from "vitest";
import type { RankGroupError } from "../../src/errors.ts";
import { simGroup } from "../fixtures/simGroup.ts";

it("a rank failure whose teardown is not verified names both and quotes the rank's log last", async () => {
  // Rank 1 fails at once; rank 0 ignores TERM and survives every KILL.
  const { group, settle } = simGroup(
    2,
    (spawn) =>
      spawn.env?.RANK === "1"
        ? { main: (self) => self.clock.setTimeout(() => self.exit(3), 10) }
        : { onTerm: "ignore", killsToDie: 1_000 },
    {
      teardown: { termGraceMs: 100, killWaitMs: 100, killAgainWaitMs: 100 },
      ports: { logTail: async () => "The last line of the log:\n  | rank 1 gives up" },
    },
  );
  const error = (await settle(group.wait())) as RankGroupError;
  expect(error.code).toBe("RANK_FAILED");
  expect(error.message).toMatch(
    /rank 1 exited with code 3\. The other ranks were stopped\. The teardown that followed is not verified either: .* Its log is \/sim\/run\/dep-\w+\/rank-1\.log\. The last line of the log:\n {2}\| rank 1 gives up$/s,
  );
});
