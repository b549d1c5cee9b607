/**
 * The rank machine under any sequence of what the launcher observes (spawns, markers of its
 * own pid and of others, fresh and re-read heartbeats, exits, stops) and clock advances,
 * against a small reference model of DESIGN §4's rank: what it emits matches the model, it
 * reports ready at most once and ends at most once (exited or lost), and it is lost exactly
 * when, alive and past its first marker, no newer heartbeat came for `markerStaleMs`, across
 * the step from loading to ready.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createActor, SimulatedClock } from "xstate";
import { type RankEmitted, type RankEvent, rankMachine } from "../../src/machines/rank.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

const STALE_MS = 1_000;
const PID = 100;

type Step =
  | { kind: "send"; event: RankEvent }
  /** A marker whose heartbeat is `delta` after the newest one written so far (0: re-read). */
  | { kind: "marker"; own: boolean; ready: boolean; delta: number }
  | { kind: "advance"; ms: number };

const steps: fc.Arbitrary<Step> = fc.oneof(
  fc.constant<Step>({ kind: "send", event: { type: "SPAWNED", pid: PID, pgid: PID } }),
  fc.constant<Step>({ kind: "send", event: { type: "SPAWN_FAILED", reason: "ENOENT" } }),
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("marker" as const),
      own: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, fc.constant(false)),
      ready: fc.boolean(),
      delta: fc.constantFrom(0, 0, 1, 250),
    }),
  },
  fc
    .constantFrom<[number | null, string | null]>([0, null], [2, null], [null, "SIGKILL"])
    .map(([code, signal]): Step => ({ kind: "send", event: { type: "EXITED", code, signal } })),
  fc.constant<Step>({ kind: "send", event: { type: "STOP" } }),
  {
    weight: 4,
    arbitrary: fc.integer({ min: 0, max: 1_500 }).map((ms) => ({ kind: "advance" as const, ms })),
  },
);

/** The reference rank: what it emits, given the same steps. */
function model(run: Step[]): string[] {
  const emitted: string[] = [];
  let state = "spawning";
  let newest = 0;
  /** The newest heartbeat seen, and how long ago it was first seen. */
  let seen: number | undefined;
  let sinceFresh = 0;
  const final = () => state === "exited" || state === "failed" || state === "lost";
  for (const step of run) {
    if (final()) break;
    const alive = state === "loading" || state === "ready";
    if (step.kind === "advance") {
      if (alive && seen !== undefined && sinceFresh + step.ms >= STALE_MS) {
        state = "lost";
        emitted.push("rank.lost");
      } else sinceFresh += step.ms;
      continue;
    }
    if (step.kind === "marker") {
      newest += step.delta;
      if (!alive || !step.own) continue;
      if (seen === undefined || newest > seen) {
        seen = newest;
        sinceFresh = 0;
      }
      if (state === "loading" && step.ready) {
        state = "ready";
        emitted.push("rank.ready");
      }
      continue;
    }
    const event = step.event;
    if (state === "spawning") {
      if (event.type === "SPAWNED") state = "loading";
      else if (event.type === "SPAWN_FAILED") state = "failed";
      else if (event.type === "STOP") state = "stopping";
    } else if (alive) {
      if (event.type === "EXITED") {
        state = event.code === 0 && event.signal === null ? "exited" : "failed";
        emitted.push("rank.exited");
      } else if (event.type === "STOP") state = "stopping";
    } else if (state === "stopping" && event.type === "EXITED") {
      state = "exited";
      emitted.push("rank.exited");
    }
  }
  return emitted;
}

const check = fc.property(fc.array(steps, { maxLength: 40 }), (run) => {
  const clock = new SimulatedClock();
  const actor = createActor(rankMachine, { input: { rank: 0, markerStaleMs: STALE_MS }, clock });
  const emitted: RankEmitted[] = [];
  actor.on("*", (event) => emitted.push(event));
  actor.start();
  let newest = 0;
  for (const step of run) {
    if (actor.getSnapshot().status !== "active") break;
    if (step.kind === "advance") clock.increment(step.ms);
    else if (step.kind === "send") actor.send(step.event);
    else {
      newest += step.delta;
      actor.send({
        type: "MARKER",
        marker: {
          pid: step.own ? PID : PID + 1,
          phase: step.ready ? "ready" : "loading",
          heartbeatAt: newest,
          active: 0,
          epoch: 0,
        },
      });
    }
  }
  expect(emitted.map((event) => event.type)).toEqual(model(run));
});

describe("rank machine under any sequence of observations and time", () => {
  it("emits what the model says: ready once, one end, lost only on a stale heartbeat", () => {
    const details = fc.check(check, propertyParameters(propertyRuns(1000)));
    throwIfFailed(details, import.meta.url);
  });
});
