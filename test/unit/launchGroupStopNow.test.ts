/**
 * `stop(reason, { now: true })`, a second Ctrl-C to `baton launch`: ranks that ignore TERM
 * get no more of their grace, and the teardown is verified all the same.
 */
import { expect, it } from "vitest";
import type { GroupExit } from "../../src/runtime/rankGroup.ts";
import { simGroup } from "../fixtures/simGroup.ts";

const GRACE_MS = 600_000;

it("a second stop with now: true KILLs the ranks still in their TERM grace, verified", async () => {
  const { group, clock, procs, settle } = simGroup(2, () => ({ onTerm: "ignore" }), {
    teardown: { termGraceMs: GRACE_MS },
    timeouts: { loadTimeoutMs: 5_000 },
  });
  // The ranks write no marker: they run until stopped.
  await settle(new Promise((resolve) => clock.setTimeout(resolve, 1_000)));
  const pids = group.pids();
  expect(pids).toHaveLength(2);
  const first = group.stop("SIGINT to the launcher");
  await settle(new Promise((resolve) => clock.setTimeout(resolve, 1_000)));
  const hurriedAt = clock.now();
  const second = group.stop("SIGINT to the launcher", { now: true });
  const report = await settle(second);
  expect(await first).toBe(report);
  expect(report).toMatchObject({ verified: true });
  // Without it, KILL came when the 10 min grace was up (600,000 ms from the first stop).
  expect(clock.now() - hurriedAt).toBeLessThan(10_000);
  expect((report as { steps: string[] }).steps.join("\n")).toMatch(
    /hurried: no more waiting for TERM\n.*TERM wait cut short\n.*KILL to groups/,
  );
  expect((await settle(group.wait())) as GroupExit).toMatchObject({ status: "stopped" });
  for (const pid of pids)
    expect(["zombie", "dead", undefined]).toContain(procs.inspect(pid)?.state);
});
