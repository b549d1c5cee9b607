/**
 * What the ranks left running is named when the group's teardown stops it: a child a rank
 * started and forgot, still in the rank's process group after the rank exited 0, and one that
 * left that group, by pid, command line and rank; the children of a rank the teardown stopped
 * went with their rank and are not. Simulated processes, files and clock.
 */
import { expect, it } from "vitest";
import { OUTCOME_FORMAT } from "../../src/rank/outcomeFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import type { GroupExit } from "../../src/runtime/rankGroup.ts";
import { simGroup } from "../fixtures/simGroup.ts";

it("names what the ranks left running when every rank exited 0: pid, command line, rank", async () => {
  // Rank 0 forgets a child in its group; rank 1 one that leaves its group (setsid).
  const { group, files, settle } = simGroup(2, (spawn) => ({
    main: (self) => {
      const leaves = spawn.env?.RANK === "1";
      const child = self.fork({
        argv: ["sleep", leaves ? "31" : "30"],
        ...(leaves && { setsidAfterMs: 1 }),
      });
      forgotten.set(Number(spawn.env?.RANK), child.pid);
      self.clock.setTimeout(() => self.exit(0), 10);
    },
  }));
  const forgotten = new Map<number, number>();
  const exit = (await settle(group.wait())) as GroupExit;
  expect(exit.status).toBe("succeeded");
  const left = [
    { pid: forgotten.get(0), rank: 0, program: "sleep", outsideGroup: false },
    { pid: forgotten.get(1), rank: 1, program: "sleep", outsideGroup: true },
  ];
  expect(exit.leftRunning).toEqual(left);
  // The outcome record keeps it for `baton status` and whoever reads it later.
  const outcome = await readStateFile(files, OUTCOME_FORMAT, `${group.dir}/outcome.json`);
  expect(outcome?.ended).toMatchObject({ status: "succeeded", leftRunning: left });
});

it("does not name the children of ranks it stopped: they went with their rank", async () => {
  const { group, clock, settle } = simGroup(1, () => ({
    main: (self) => void self.fork({ argv: ["sleep", "30"] }),
  }));
  await settle(
    new Promise<void>((started) => {
      const look = () => (group.pids().length > 0 ? started() : clock.setTimeout(look, 5));
      look();
    }),
  );
  const exit = (await settle(group.stop("test over").then(() => group.wait()))) as GroupExit;
  expect(exit.status).toBe("stopped");
  expect(exit.leftRunning).toEqual([]);
});
