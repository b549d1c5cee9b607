#!/usr/bin/env node
// A baton rank in Node, on baton's rank library (src/rank/startRank.ts); same behaviour and
// flags as rank.py beside it. It loads the library from this checkout's sources, so that it
// runs without a build and never a stale dist/; a rank of yours, in a project that installed
// baton, imports it: `import { BatonError, cancelCovers, startRank } from "baton"`.
// The launcher sets RANK, WORLD_SIZE, BATON_DEPLOYMENT, BATON_STATE_DIR, BATON_LAUNCHER_PID,
// BATON_MARKER_HEARTBEAT_MS and BATON_LEASE_STALE_MS.
//
//   baton launch --world 2 -- node examples/ranks/rank.mjs --steps 20 --step-ms 100
//
//   --steps N        run N steps, then exit 0 (default 0: run until stopped or orphaned)
//   --step-ms M      length of one step in ms (default 100)
//   --load-ms L      time spent loading before `ready` (default 0)
//   --fail-at K      exit with --exit-code at step K (0: while loading, before `ready`)
//   --exit-code C    the exit code of --fail-at (default 3)
//   --hold N         hold N requests in flight (ids r<RANK>-1 .. r<RANK>-N) until cancelled
//   --ignore-cancel  ack cancels without ending the requests they cover (a misbehaving rank)
//   --ignore-term    trap SIGTERM and keep running (only SIGKILL stops it)
//   --watch-ms W     how often the launcher's pid and lease are checked (default 1000)
//
// Exit codes: 0 after --steps, 1 when the launcher is gone or its lease stale, 2 for a missing
// or malformed environment or bad flags, --exit-code for --fail-at.
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { register } from "tsx/esm/api";

register();
const { startRank } = await import("../../src/rank/startRank.ts");
const { cancelCovers } = await import("../../src/rank/cancelFormat.ts");
const { BatonError } = await import("../../src/errors.ts");

const say = (message) => process.stdout.write(`rank ${process.env.RANK ?? "?"}: ${message}\n`);

let flags;
try {
  flags = parseArgs({
    options: {
      steps: { type: "string", default: "0" },
      "step-ms": { type: "string", default: "100" },
      "load-ms": { type: "string", default: "0" },
      "fail-at": { type: "string" },
      "exit-code": { type: "string", default: "3" },
      hold: { type: "string", default: "0" },
      "ignore-cancel": { type: "boolean", default: false },
      "ignore-term": { type: "boolean", default: false },
      "watch-ms": { type: "string", default: "1000" },
    },
  }).values;
} catch (error) {
  process.stderr.write(`rank.mjs: ${error.message}\n`);
  process.exit(2);
}
const number = (name) => {
  const value = Number(flags[name]);
  if (!Number.isInteger(value) || value < 0) {
    process.stderr.write(`rank.mjs: --${name} must be an integer ≥ 0, not ${flags[name]}\n`);
    process.exit(2);
  }
  return value;
};
const steps = number("steps");
const stepMs = number("step-ms");
const failAt = flags["fail-at"] === undefined ? undefined : number("fail-at");
const exitCode = number("exit-code");

if (flags["ignore-term"]) process.on("SIGTERM", () => say("ignoring SIGTERM"));

let rank;
try {
  rank = await startRank({ watchEveryMs: number("watch-ms") });
} catch (error) {
  if (!(error instanceof BatonError)) throw error;
  process.stderr.write(`rank.mjs: ${error.message}\n`);
  process.exit(2);
}
say(`loading (pid ${process.pid}, world ${rank.env.worldSize}, watermark ${rank.epoch})`);
if (failAt === 0) {
  say(`failing while loading with exit code ${exitCode}`);
  process.exit(exitCode);
}
await sleep(number("load-ms"));
for (let i = 1; i <= number("hold"); i += 1) rank.begin(`r${rank.env.rank}-${i}`);
await rank.ready();
say("ready");

const apply = (cancel) => {
  const covered = rank
    .inFlight()
    .sort()
    .filter((id) => cancelCovers(cancel, id));
  if (!flags["ignore-cancel"]) for (const id of covered) rank.end(id);
  say(
    `applied cancel epoch ${cancel.epoch} (${cancel.scope} ${JSON.stringify(cancel.ids)}, ${cancel.reason}): ` +
      `ended ${JSON.stringify(flags["ignore-cancel"] ? [] : covered)}, active ${rank.active}`,
  );
};

let step = 0;
// A ref'd timer per step keeps the process alive; the library's own timers do not.
while (steps === 0 || step < steps) {
  step += 1;
  await rank.step(apply);
  if (failAt === step) {
    say(`failing at step ${step} with exit code ${exitCode}`);
    process.exit(exitCode);
  }
  await sleep(stepMs);
}
await rank.step(apply);
await rank.close();
say(`done after ${step} steps`);
