/**
 * A connection whose worker gave its abort grace (protocol 8) under any sequence of grants,
 * results, cancels (for a timeout or not), lease expiries, link closes, releases and clock
 * advances, against a small reference model: a job that ran past its timeout and is still
 * held `abortGraceMs + ABORT_GRACE_SLACK_MS` after its cancel is given up (4005) then and
 * only then, however the other events race with that deadline, and WORKER_LOST is sent
 * once when the connection leaves `registered`, never otherwise.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ABORT_GRACE_SLACK_MS } from "../../src/machines/connection.ts";
import { openConnection } from "../fixtures/connectionOnClock.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

type Job = "j1" | "j2";
type Step =
  | { kind: "grant"; job: Job }
  | { kind: "result"; job: Job }
  | { kind: "cancel"; job: Job; timedOut: boolean }
  | { kind: "expire"; job: Job; back: number }
  | { kind: "closed" }
  | { kind: "release" }
  | { kind: "advance"; ms: number }
  /** Advance to the end of the last timed-out cancel's grace, or to a millisecond before. */
  | { kind: "toGraceEnd"; early: 0 | 1 };

const job = fc.constantFrom<Job>("j1", "j2");
const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: job.map((j) => ({ kind: "grant" as const, job: j })) },
  { weight: 2, arbitrary: job.map((j) => ({ kind: "result" as const, job: j })) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(job, fc.boolean())
      .map(([j, timedOut]) => ({ kind: "cancel" as const, job: j, timedOut })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(job, fc.integer({ min: 0, max: 2 }))
      .map(([j, back]) => ({ kind: "expire" as const, job: j, back })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "closed" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "release" as const }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom<0 | 1>(0, 1)
      .map((early) => ({ kind: "toGraceEnd" as const, early })),
  },
  {
    weight: 4,
    // Whole seconds and a millisecond either side end advances on a grace's last millisecond.
    arbitrary: fc
      .oneof(fc.integer({ min: 0, max: 8_000 }), fc.constantFrom(1, 999, 1_000, 1_001, 2_000))
      .map((ms) => ({ kind: "advance" as const, ms })),
  },
);

/**
 * A close the connection emitted: its code, whether it gave a timed-out job up, and the clock
 * when it was emitted (a simulated clock reads the end of the advance that fired a timer).
 */
interface Close {
  code: number;
  givenUp: boolean;
  at: number;
}

type Concrete = Exclude<Step, { kind: "toGraceEnd" }>;

/** `steps` with each `toGraceEnd` made the advance it stands for (none before any cancel). */
function concrete(graceMs: number, steps: Step[]): Concrete[] {
  let now = 0;
  let cancelledAt: number | undefined;
  return steps.map((step) => {
    if (step.kind === "cancel" && step.timedOut) cancelledAt = now;
    if (step.kind !== "toGraceEnd" && step.kind !== "advance") return step;
    const ms =
      step.kind === "advance"
        ? step.ms
        : cancelledAt === undefined
          ? 0
          : Math.max(0, cancelledAt + graceMs + ABORT_GRACE_SLACK_MS - step.early - now);
    now += ms;
    return { kind: "advance", ms };
  });
}

/** The reference: the closes the steps should emit, and whether the connection is left. */
function expected(graceMs: number, steps: Concrete[]): { closes: Close[]; left: boolean } {
  const closes: Close[] = [];
  let state: "idle" | "busy" | "left" = "idle";
  let held = { job: "", attempt: 0 };
  let attempts = 0;
  /** When the held attempt was last told to stop for its timeout. */
  let cancelledAt: number | undefined;
  let now = 0;
  for (const step of steps) {
    if (state === "left" && step.kind !== "grant") {
      if (step.kind === "advance") now += step.ms;
      continue;
    }
    switch (step.kind) {
      case "advance": {
        const due =
          cancelledAt === undefined ? undefined : cancelledAt + graceMs + ABORT_GRACE_SLACK_MS;
        if (state === "busy" && due !== undefined && due <= now + step.ms) {
          closes.push({ code: 4005, givenUp: true, at: now + step.ms });
          state = "left";
        }
        now += step.ms;
        break;
      }
      case "grant":
        attempts++;
        if (state !== "idle") break;
        state = "busy";
        held = { job: step.job, attempt: attempts };
        cancelledAt = undefined;
        break;
      case "result":
        if (state === "busy" && step.job === held.job) {
          state = "idle";
          cancelledAt = undefined;
        }
        break;
      case "cancel":
        if (state === "busy" && step.job === held.job && step.timedOut) cancelledAt = now;
        break;
      case "expire":
        if (state === "busy" && step.job === held.job && attempts - step.back === held.attempt) {
          closes.push({ code: 4005, givenUp: false, at: now });
          state = "left";
        }
        break;
      case "closed":
        state = "left";
        break;
      case "release":
        closes.push({ code: 1000, givenUp: false, at: now });
        state = "left";
        break;
    }
  }
  return { closes, left: state === "left" };
}

const property = fc.property(
  // Whole seconds let the advances end on a grace's last millisecond, or one before.
  fc.oneof(fc.constantFrom(1_000, 2_000), fc.integer({ min: 1, max: 10_000 })),
  fc.array(stepArbitrary, { maxLength: 40 }),
  (graceMs, drawn) => {
    const steps = concrete(graceMs, drawn);
    const { actor, clock, coordinator, send, lost } = openConnection({
      protocol: [1, 8],
      heartbeatMs: 5_000,
      // No ping goes unanswered for long enough to close the connection in these steps.
      deadAfterMs: 1e9,
    });
    const closes: Close[] = [];
    actor.on("close", ({ code, reason }) =>
      closes.push({ code, givenUp: reason.includes("abort grace"), at: clock.now() }),
    );
    send({
      type: "HELLO",
      frame: {
        type: "hello",
        protocol: [1, 8],
        worker: "w1",
        resources: {},
        codeHash: "h",
        proof: "p",
        abortGraceMs: graceMs,
      },
      authentic: true,
      welcomeProof: "wp",
      holders: [],
    });
    let attempts = 0;
    for (const step of steps) {
      if (step.kind === "grant") attempts++;
      if (actor.getSnapshot().status !== "active") continue;
      switch (step.kind) {
        case "advance":
          clock.increment(step.ms);
          break;
        case "grant": {
          const frame = { type: "job" as const, id: step.job, kind: "k", input: null, deps: {} };
          send({ type: "GRANT", job: step.job, frame: { ...frame, attempt: attempts }, bytes: 1 });
          break;
        }
        case "result":
          send({
            type: "RESULT",
            frame: { type: "result", job: step.job, status: "completed", value: 1 },
          });
          break;
        case "cancel":
          send({
            type: "CANCEL_JOB",
            job: step.job,
            reason: "r",
            ...(step.timedOut && { timedOut: true }),
          });
          break;
        case "expire":
          send({ type: "EXPIRE", job: step.job, attempt: attempts - step.back });
          break;
        case "closed":
          send({ type: "CLOSED", code: 1006, reason: "" });
          break;
        case "release":
          send({ type: "RELEASE" });
          break;
      }
    }
    // Whatever grace was pending ends now, if it still can.
    const final: Concrete = { kind: "advance", ms: graceMs + ABORT_GRACE_SLACK_MS };
    clock.increment(final.ms);
    const model = expected(graceMs, [...steps, final]);
    expect(closes).toEqual(model.closes);
    expect(lost()).toHaveLength(model.left ? 1 : 0);
    actor.stop();
    coordinator.stop();
  },
);

describe("a connection's abort grace under any sequence of work, cancels, closes and time", () => {
  it("gives a timed-out job up at its grace's end and only then, and loses its worker once", () => {
    const details = fc.check(property, propertyParameters(propertyRuns(1000)));
    throwIfFailed(details, import.meta.url);
  });
});
