/**
 * The group machine under any sequence of runtime reports, stops and clock advances (in any
 * order, including ones the runtime never produces), against a small reference model of
 * DESIGN §4's group: the effects it emits match the model, `group.finished` comes at most
 * once, the outcome is the first failure (a launch failure, or a name refused while launching,
 * is never replaced by what the teardown after it does), and a group that succeeded had every
 * rank exit 0.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createActor, SimulatedClock } from "xstate";
import { type GroupEmitted, type GroupEvent, groupMachine } from "../../src/machines/group.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

type Step = { kind: "send"; event: GroupEvent } | { kind: "advance"; ms: number };

const LOAD_TIMEOUT_MS = 1_000;

function stepArbitrary(worldSize: number): fc.Arbitrary<Step> {
  const rank = fc.integer({ min: 0, max: worldSize - 1 });
  const send = (event: fc.Arbitrary<GroupEvent>) =>
    event.map((e) => ({ kind: "send" as const, event: e }));
  return fc.oneof(
    send(fc.constant({ type: "REAPED" as const })),
    send(
      fc.constant({
        type: "REAP_FAILED" as const,
        failure: { code: "DEPLOYMENT_BLOCKED" as const, message: "blocked" },
      }),
    ),
    send(fc.constant({ type: "LAUNCHED" as const })),
    send(fc.constant({ type: "LAUNCH_FAILED" as const, message: "no spawn" })),
    send(fc.constant({ type: "LAUNCH_BLOCKED" as const, message: "held on a host" })),
    { weight: 3, arbitrary: send(rank.map((r) => ({ type: "RANK_READY" as const, rank: r }))) },
    {
      weight: 3,
      arbitrary: send(
        fc
          .tuple(
            rank,
            fc.constantFrom<[number | null, string | null]>(
              [0, null],
              [0, null],
              [3, null],
              [null, "SIGKILL"],
            ),
          )
          .map(([r, [code, signal]]) => ({ type: "RANK_EXITED" as const, rank: r, code, signal })),
      ),
    },
    send(rank.map((r) => ({ type: "RANK_LOST" as const, rank: r, reason: "stale" }))),
    send(fc.constant({ type: "LEASE_LOST" as const, message: "lease not renewed" })),
    send(fc.constant({ type: "STOP" as const, reason: "user" })),
    { weight: 2, arbitrary: send(fc.constant({ type: "TEARDOWN_DONE" as const })) },
    send(fc.constant({ type: "TEARDOWN_FAILED" as const, message: "survivor" })),
    fc.integer({ min: 0, max: 1_500 }).map((ms) => ({ kind: "advance" as const, ms })),
  );
}

/** The reference group: what it emits (types) and the outcome it ends with. */
function model(worldSize: number, steps: Step[]): { types: string[]; outcome: string | undefined } {
  const types: string[] = [];
  let state = "reaping";
  let left = 0;
  const ready = new Set<number>();
  const exits = new Map<number, boolean>(); // rank → exited cleanly
  let failure: string | undefined;
  let stopped = false;
  let outcome: string | undefined;
  const fail = (code: string) => {
    if (failure === undefined && !stopped) failure = code;
  };
  const passed = (r: number) => ready.has(r) || exits.get(r) === true;
  const enter = (next: string) => {
    state = next;
    if (next === "launching") types.push("group.launch");
    if (next === "barrier") {
      left = LOAD_TIMEOUT_MS;
      if ([...Array(worldSize).keys()].every(passed)) enter("running");
    }
    if (next === "running") {
      types.push("group.ready");
      if ([...Array(worldSize).keys()].every((r) => exits.get(r) === true)) enter("stopping");
    }
    if (next === "stopping") types.push("group.teardown");
    if (next === "stopped") {
      types.push("group.finished");
      outcome = failure ?? (stopped ? "stopped" : "succeeded");
    }
  };
  for (const step of steps) {
    if (state === "stopped") break;
    if (step.kind === "advance") {
      if (state === "barrier" && step.ms >= left) {
        fail("BARRIER_TIMEOUT");
        enter("stopping");
      } else left -= step.ms;
      continue;
    }
    const e = step.event;
    // A process exits once: a second exit of the same rank is a stale duplicate, ignored.
    if (e.type === "RANK_EXITED" && exits.has(e.rank)) continue;
    const live = state === "launching" || state === "barrier" || state === "running";
    if (state === "reaping") {
      if (e.type === "REAPED") enter("launching");
      else if (e.type === "REAP_FAILED") {
        fail(e.failure.code);
        enter("stopped");
      } else if (e.type === "STOP") {
        if (failure === undefined) stopped = true;
        enter("stopped");
      }
    } else if (live) {
      if (e.type === "RANK_EXITED") {
        const clean = e.code === 0 && e.signal === null;
        exits.set(e.rank, clean);
        if (!clean) {
          fail("RANK_FAILED");
          enter("stopping");
        } else if (state === "barrier" && [...Array(worldSize).keys()].every(passed)) {
          enter("running");
        } else if (
          state === "running" &&
          [...Array(worldSize).keys()].every((r) => exits.get(r) === true)
        ) {
          enter("stopping");
        }
      } else if (e.type === "RANK_LOST" || e.type === "LEASE_LOST") {
        fail(e.type);
        enter("stopping");
      } else if (e.type === "STOP") {
        if (failure === undefined) stopped = true;
        enter("stopping");
      } else if (e.type === "RANK_READY" && state !== "running") {
        ready.add(e.rank);
        if (state === "barrier" && [...Array(worldSize).keys()].every(passed)) enter("running");
      } else if (e.type === "LAUNCHED" && state === "launching") enter("barrier");
      else if (e.type === "LAUNCH_FAILED" && state === "launching") {
        fail("LAUNCH_FAILED");
        enter("stopping");
      } else if (e.type === "LAUNCH_BLOCKED" && state === "launching") {
        fail("DEPLOYMENT_BLOCKED");
        enter("stopping");
      }
    } else if (state === "stopping") {
      if (e.type === "RANK_EXITED") exits.set(e.rank, e.code === 0 && e.signal === null);
      else if (e.type === "TEARDOWN_DONE") enter("stopped");
      else if (e.type === "TEARDOWN_FAILED") {
        types.push("group.teardownFailed");
        state = "teardownFailed";
      }
    } else if (state === "teardownFailed") {
      if (e.type === "RANK_EXITED") exits.set(e.rank, e.code === 0 && e.signal === null);
      else if (e.type === "STOP") enter("stopping");
    }
  }
  return { types, outcome };
}

const property = fc
  .integer({ min: 1, max: 3 })
  .chain((worldSize) =>
    fc.tuple(fc.constant(worldSize), fc.array(stepArbitrary(worldSize), { maxLength: 40 })),
  );

const check = fc.property(property, ([worldSize, steps]) => {
  const clock = new SimulatedClock();
  const actor = createActor(groupMachine, {
    input: { deployment: "dep-prop", worldSize, loadTimeoutMs: LOAD_TIMEOUT_MS },
    clock,
  });
  const emitted: GroupEmitted[] = [];
  actor.on("*", (event) => emitted.push(event));
  actor.start();
  for (const step of steps) {
    if (actor.getSnapshot().status !== "active") break;
    if (step.kind === "advance") clock.increment(step.ms);
    else actor.send(step.event);
  }
  const expected = model(worldSize, steps);
  expect(emitted.map((event) => event.type)).toEqual(expected.types);
  const finished = emitted.filter((event) => event.type === "group.finished");
  expect(finished.length).toBeLessThanOrEqual(1);
  const outcome = finished[0]?.type === "group.finished" ? finished[0].outcome : undefined;
  const code =
    outcome === undefined
      ? undefined
      : outcome.status === "failed"
        ? outcome.failure.code
        : outcome.status;
  expect(code).toBe(expected.outcome);
  if (outcome?.status === "succeeded") {
    const exits = actor.getSnapshot().context.exits;
    for (let rank = 0; rank < worldSize; rank++)
      expect(exits[rank]).toEqual({ code: 0, signal: null });
  }
});

describe("group machine under any sequence of reports, stops and time", () => {
  it("emits what the model says and ends with the first failure", () => {
    const details = fc.check(check, propertyParameters(propertyRuns(1000)));
    throwIfFailed(details, import.meta.url);
  });
});
