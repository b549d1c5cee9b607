import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProtocolError } from "../../src/errors.ts";
import { describeClose } from "../../src/transport/closeCodes.ts";
import {
  encode,
  parseToCoordinator,
  parseToWorker,
  type ToCoordinator,
  type ToWorker,
} from "../../src/transport/frames.ts";

type Parse = (text: string) => ToCoordinator | ToWorker;
type Frame = ToCoordinator | ToWorker;

/**
 * The cases of both sides' tables in one, each led by the side that reads it and followed by
 * that side's parser: `[side, ...case, parse]`, so a `%s` title names the side first.
 */
function bothSides<Case extends unknown[]>(
  coordinator: Case[],
  worker: Case[],
): [side: string, ...Case, parse: Parse][] {
  return [
    ...coordinator.map((c): [string, ...Case, Parse] => ["coordinator", ...c, parseToCoordinator]),
    ...worker.map((c): [string, ...Case, Parse] => ["worker", ...c, parseToWorker]),
  ];
}

function rejection(parse: Parse, text: string): ProtocolError {
  try {
    parse(text);
  } catch (err) {
    if (err instanceof ProtocolError) return err;
    throw err;
  }
  throw new Error(`frame was accepted: ${text}`);
}

function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`valid JSON: ${text}`);
}

const plannedJob = {
  id: "j-need",
  kind: "fetch",
  input: { url: "https://example.org" },
  deps: ["j0", "j1"],
  requires: { cpus: 1, memory: 512 },
  retries: 3,
  backoff: { initialMs: 100, factor: 2, maxMs: 5000 },
  timeoutMs: 60_000,
  ranks: 4,
};

const toCoordinator: ToCoordinator[] = [
  {
    type: "hello",
    protocol: [1, 2],
    worker: "w-1",
    resources: { cpus: 4, gpus: 0, memory: 2048.5 },
    codeHash: "3b9f",
    proof: "a41c",
  },
  { type: "hello", protocol: [1, 1], worker: "w", resources: {}, codeHash: "h", proof: "p" },
  { type: "result", job: "j1", status: "completed", value: { rows: [1, "two", null, true] } },
  { type: "result", job: "j1", status: "completed", value: null },
  { type: "result", job: "j1", status: "failed", error: { message: "" } },
  {
    type: "result",
    job: "j1",
    status: "failed",
    error: { message: "boom", name: "TypeError", stack: "TypeError: boom\n    at x" },
  },
  { type: "result", job: "j1", status: "failed", error: { message: "bad", retryable: false } },
  {
    type: "result",
    job: "j1",
    status: "blocked",
    needs: [
      plannedJob,
      { id: "j-2", kind: "k", input: 0, deps: [], requires: {}, retries: 0 },
      {
        id: "j-3",
        kind: "k",
        input: "x",
        deps: [],
        requires: {},
        retries: 1,
        backoff: { initialMs: 0 },
      },
    ],
  },
  { type: "progress", job: "j1" },
  { type: "progress", job: "j1", done: 3, total: 10.5, message: "parsing" },
  {
    type: "hello",
    protocol: [1, 5],
    worker: "w-1",
    resources: {},
    codeHash: "3b9f",
    proof: "a41c",
    maxFrameBytes: 67_108_864,
  },
  {
    type: "hello",
    protocol: [1, 7],
    worker: "w-1",
    resources: {},
    codeHash: "3b9f",
    proof: "a41c",
    instance: "V1StGXR8_Z5jdHi6B-myT",
  },
  {
    type: "hello",
    protocol: [1, 8],
    worker: "w-1",
    resources: {},
    codeHash: "3b9f",
    proof: "a41c",
    instance: "V1StGXR8_Z5jdHi6B-myT",
    abortGraceMs: 5_000,
  },
];

const toWorker: ToWorker[] = [
  { type: "challenge", nonce: "kq3V9x", protocol: [1, 3] },
  { type: "welcome", protocol: 1, run: "r-7f2a", proof: "9c1e" },
  { type: "job", id: "j2", kind: "parse", input: { strict: true }, deps: {}, attempt: 1 },
  { type: "job", id: "j2", kind: "parse", input: [1], deps: { j1: "<html>", j0: [] }, attempt: 4 },
  { type: "cancel", job: "j2" },
  { type: "cancel", job: "j2", reason: "job j2 ran longer than its timeout of 500 ms" },
  { type: "welcome", protocol: 1, run: "r-7f2a", proof: "9c1e", heartbeatMs: 5000 },
  { type: "welcome", protocol: 4, run: "r-7f2a", proof: "9c1e", maxFrameBytes: 67_108_864 },
];

/** A frame as a case: its first 60 characters of JSON to name it, and the frame. */
const validCase = (frame: Frame): [string, Frame] => [JSON.stringify(frame).slice(0, 60), frame];

describe("valid frames", () => {
  it.each(bothSides(toCoordinator.map(validCase), toWorker.map(validCase)))(
    "%s accepts %s",
    (_side, _name, frame, parse) => {
      expect(parse(encode(frame))).toEqual(frame);
    },
  );

  it("accepts ids of exactly 200 characters", () => {
    const id = "x".repeat(200);
    expect(parseToWorker(encode({ type: "cancel", job: id }))).toEqual({ type: "cancel", job: id });
  });
});

const hello = toCoordinator[0]!;
const blocked = toCoordinator.find((f) => f.type === "result" && f.status === "blocked")!;
const long = "x".repeat(201);
const withNeed = (patch: object) => ({ ...blocked, needs: [{ ...plannedJob, ...patch }] });
const withoutNeed = (field: string) => ({
  ...blocked,
  needs: [Object.fromEntries(Object.entries(plannedJob).filter(([key]) => key !== field))],
});

const badForCoordinator: [string, unknown, string][] = [
  ["array", [1], "frame must be a JSON object (got array)"],
  ["string", "hi", "frame must be a JSON object (got string)"],
  ["null", null, "frame must be a JSON object (got null)"],
  ["no type", {}, 'frame has no "type" field; expected one of hello, result, progress'],
  [
    "numeric type",
    { type: 3 },
    'frame field "type" must be a string (got number); expected one of hello, result, progress',
  ],
  [
    "unknown type",
    { type: "x" },
    'unknown frame type "x"; expected one of hello, result, progress',
  ],
  [
    "frame for workers",
    { type: "job" },
    'frame type "job" goes to workers, not to the coordinator; expected one of hello, result, progress',
  ],
  [
    "long unknown type",
    { type: "t".repeat(100) },
    `unknown frame type "${"t".repeat(60)}"… (100 characters); expected one of hello, result, progress`,
  ],
  [
    "numeric job",
    { type: "result", job: 7, status: "completed", value: 1 },
    'result frame: field "job" must be a non-empty string (got number)',
  ],
  [
    "empty job",
    { type: "result", job: "", status: "completed", value: 1 },
    'result frame: field "job" must be a non-empty string (got "")',
  ],
  [
    "long job",
    { type: "result", job: long, status: "completed", value: 1 },
    'result frame: field "job" must be at most 200 characters long (got a string of 201 characters)',
  ],
  [
    "missing job",
    { type: "result", status: "completed", value: 1 },
    'result frame: field "job" is missing; it must be a non-empty string',
  ],
  [
    "unknown status",
    { type: "result", job: "j", status: "done" },
    'result frame: field "status" must be one of "completed", "failed", "blocked" (got "done")',
  ],
  [
    "missing status",
    { type: "result", job: "j" },
    'result frame: field "status" is missing; it must be one of "completed", "failed", "blocked"',
  ],
  [
    "missing value",
    { type: "result", job: "j", status: "completed" },
    'result frame: field "value" is missing; it must be a JSON value',
  ],
  [
    "error on a completed result",
    { type: "result", job: "j", status: "completed", value: 1, error: { message: "x" } },
    'result frame: unknown field "error"; allowed fields are type, job, status, value',
  ],
  [
    "error that is a string",
    { type: "result", job: "j", status: "failed", error: "boom" },
    'result frame: field "error" must be an object (got string)',
  ],
  [
    "numeric error message",
    { type: "result", job: "j", status: "failed", error: { message: 5 } },
    'result frame: field "error.message" must be a string (got number)',
  ],
  [
    "error with a code",
    { type: "result", job: "j", status: "failed", error: { message: "x", code: "E" } },
    'result frame: unknown field "error.code"; allowed fields are message, name, stack, retryable',
  ],
  [
    "an error said to be retryable",
    { type: "result", job: "j", status: "failed", error: { message: "x", retryable: true } },
    'result frame: field "error.retryable" must be false or absent (got true)',
  ],
  [
    "no needs",
    { ...blocked, needs: [] },
    'result frame: field "needs" must be a non-empty array of planned jobs (got an array of 0 items)',
  ],
  [
    "needs that is an object",
    { ...blocked, needs: {} },
    'result frame: field "needs" must be a non-empty array of planned jobs (got object)',
  ],
  [
    "need without kind",
    withoutNeed("kind"),
    'result frame: field "needs[0].kind" is missing; it must be a non-empty string',
  ],
  [
    "need without input",
    withoutNeed("input"),
    'result frame: field "needs[0].input" is missing; it must be a JSON value',
  ],
  [
    "need that is a number",
    { ...blocked, needs: [plannedJob, 5] },
    'result frame: field "needs[1]" must be an object (got number)',
  ],
  [
    "numeric dep",
    withNeed({ deps: ["a", 5] }),
    'result frame: field "needs[0].deps[1]" must be a non-empty string (got number)',
  ],
  [
    "deps that is a string",
    withNeed({ deps: "a" }),
    'result frame: field "needs[0].deps" must be an array of ids (got string)',
  ],
  [
    "unknown resource",
    withNeed({ requires: { disk: 1 } }),
    'result frame: unknown field "needs[0].requires.disk"; allowed fields are cpus, gpus, memory',
  ],
  [
    "negative retries",
    withNeed({ retries: -1 }),
    'result frame: field "needs[0].retries" must be a non-negative integer (got -1)',
  ],
  [
    "fractional retries",
    withNeed({ retries: 1.5 }),
    'result frame: field "needs[0].retries" must be a non-negative integer (got 1.5)',
  ],
  [
    "zero backoff factor",
    withNeed({ backoff: { initialMs: 1, factor: 0 } }),
    'result frame: field "needs[0].backoff.factor" must be a finite positive number (got 0)',
  ],
  [
    "backoff without initialMs",
    withNeed({ backoff: { maxMs: 1 } }),
    'result frame: field "needs[0].backoff.initialMs" is missing; it must be a finite non-negative number',
  ],
  [
    "zero timeoutMs",
    withNeed({ timeoutMs: 0 }),
    'result frame: field "needs[0].timeoutMs" must be a finite positive number (got 0)',
  ],
  [
    "zero ranks",
    withNeed({ ranks: 0 }),
    'result frame: field "needs[0].ranks" must be a positive integer (got 0)',
  ],
  [
    "protocol with min above max",
    { ...hello, protocol: [2, 1] },
    'hello frame: field "protocol" must have min ≤ max (got [2, 1])',
  ],
  [
    "protocol from 0",
    { ...hello, protocol: [0, 1] },
    'hello frame: field "protocol[0]" must be a positive integer (got 0)',
  ],
  [
    "fractional protocol max",
    { ...hello, protocol: [1, 1.5] },
    'hello frame: field "protocol[1]" must be a positive integer (got 1.5)',
  ],
  [
    "protocol of one version",
    { ...hello, protocol: [1] },
    'hello frame: field "protocol" must be a [min, max] pair of positive integers (got an array of 1 item)',
  ],
  [
    "protocol as a string",
    { ...hello, protocol: "1" },
    'hello frame: field "protocol" must be a [min, max] pair of positive integers (got string)',
  ],
  [
    "long worker id",
    { ...hello, worker: long },
    'hello frame: field "worker" must be at most 200 characters long (got a string of 201 characters)',
  ],
  [
    "negative cpus",
    { ...hello, resources: { cpus: -1 } },
    'hello frame: field "resources.cpus" must be a finite non-negative number (got -1)',
  ],
  [
    "fractional maxFrameBytes",
    { ...hello, maxFrameBytes: 1.5 },
    'hello frame: field "maxFrameBytes" must be a positive integer (got 1.5)',
  ],
  [
    "zero maxFrameBytes",
    { ...hello, maxFrameBytes: 0 },
    'hello frame: field "maxFrameBytes" must be a positive integer (got 0)',
  ],
  [
    "an empty instance",
    { ...hello, instance: "" },
    'hello frame: field "instance" must be a non-empty string (got "")',
  ],
  [
    "an instance that is no string",
    { ...hello, instance: 7 },
    'hello frame: field "instance" must be a non-empty string (got number)',
  ],
  [
    "zero abortGraceMs",
    { ...hello, abortGraceMs: 0 },
    'hello frame: field "abortGraceMs" must be a positive integer (got 0)',
  ],
  [
    "abortGraceMs as a string",
    { ...hello, abortGraceMs: "5s" },
    'hello frame: field "abortGraceMs" must be a positive integer (got string)',
  ],
  [
    "resources as an array",
    { ...hello, resources: [] },
    'hello frame: field "resources" must be an object (got array)',
  ],
  [
    "unknown resource",
    { ...hello, resources: { disk: 1 } },
    'hello frame: unknown field "resources.disk"; allowed fields are cpus, gpus, memory',
  ],
  [
    "extra field",
    { ...hello, token: "s3cret" },
    'hello frame: unknown field "token"; allowed fields are type, protocol, worker, resources, codeHash, proof, maxFrameBytes, instance, abortGraceMs',
  ],
  [
    "long extra field",
    { ...hello, ["f".repeat(70)]: 1 },
    `hello frame: unknown field "${"f".repeat(60)}"… (70 characters); allowed fields are type, protocol, worker, resources, codeHash, proof, maxFrameBytes, instance, abortGraceMs`,
  ],
  [
    "done as a string",
    { type: "progress", job: "j", done: "3" },
    'progress frame: field "done" must be a finite non-negative number (got string)',
  ],
  [
    "numeric message",
    { type: "progress", job: "j", message: 5 },
    'progress frame: field "message" must be a string (got number)',
  ],
];

const badForWorker: [string, unknown, string][] = [
  [
    "frame for the coordinator",
    { type: "hello" },
    'frame type "hello" goes to the coordinator, not to workers; expected one of challenge, welcome, job, cancel',
  ],
  [
    "unknown type",
    { type: "stop" },
    'unknown frame type "stop"; expected one of challenge, welcome, job, cancel',
  ],
  [
    "zero attempt",
    { ...toWorker[2], attempt: 0 },
    'job frame: field "attempt" must be a positive integer (got 0)',
  ],
  [
    "fractional attempt",
    { ...toWorker[2], attempt: 1.5 },
    'job frame: field "attempt" must be a positive integer (got 1.5)',
  ],
  [
    "deps as an array",
    { ...toWorker[2], deps: [] },
    'job frame: field "deps" must be an object (got array)',
  ],
  [
    "long kind",
    { ...toWorker[2], kind: long },
    'job frame: field "kind" must be at most 200 characters long (got a string of 201 characters)',
  ],
  [
    "job without input",
    { type: "job", id: "j", kind: "k", deps: {}, attempt: 1 },
    'job frame: field "input" is missing; it must be a JSON value',
  ],
  [
    "zero protocol",
    { ...toWorker[1], protocol: 0 },
    'welcome frame: field "protocol" must be a positive integer (got 0)',
  ],
  [
    "zero maxFrameBytes",
    { ...toWorker[1], maxFrameBytes: 0 },
    'welcome frame: field "maxFrameBytes" must be a positive integer (got 0)',
  ],
  [
    "zero heartbeatMs",
    { ...toWorker[1], heartbeatMs: 0 },
    'welcome frame: field "heartbeatMs" must be a positive integer (got 0)',
  ],
  [
    "fractional heartbeatMs",
    { ...toWorker[1], heartbeatMs: 2.5 },
    'welcome frame: field "heartbeatMs" must be a positive integer (got 2.5)',
  ],
  [
    "heartbeatMs as a string",
    { ...toWorker[1], heartbeatMs: "5000" },
    'welcome frame: field "heartbeatMs" must be a positive integer (got string)',
  ],
  [
    "null heartbeatMs",
    { ...toWorker[1], heartbeatMs: null },
    'welcome frame: field "heartbeatMs" must be a positive integer (got null)',
  ],
  [
    "challenge without nonce",
    { type: "challenge", protocol: [1, 1] },
    'challenge frame: field "nonce" is missing; it must be a non-empty string',
  ],
  [
    "protocol of three versions",
    { type: "challenge", nonce: "n", protocol: [1, 2, 3] },
    'challenge frame: field "protocol" must be a [min, max] pair of positive integers (got an array of 3 items)',
  ],
  [
    "cancel with a reason that is not text",
    { type: "cancel", job: "j", reason: 7 },
    'cancel frame: field "reason" must be a string (got number)',
  ],
];

describe("bad frames", () => {
  it.each(bothSides(badForCoordinator, badForWorker))(
    "%s rejects %s",
    (_side, _name, frame, message, parse) => {
      const err = rejection(parse, JSON.stringify(frame));
      expect(err.message).toBe(message);
      expect(err.code).toBe("BAD_FRAME");
      expect(err.closeCode).toBe(4000);
    },
  );

  it.each(['{"type":"result","job":', "", "{'type':'cancel'}", "[1,]"])(
    "rejects malformed JSON %j with the parser's message",
    (text) => {
      const message = `frame is not valid JSON: ${jsonError(text)}`;
      expect({
        coordinator: rejection(parseToCoordinator, text).message,
        worker: rejection(parseToWorker, text).message,
      }).toEqual({ coordinator: message, worker: message });
    },
  );

  it("rejects numbers that overflow to Infinity", () => {
    const text = '{"type":"progress","job":"j","total":1e999}';
    expect(rejection(parseToCoordinator, text).message).toBe(
      'progress frame: field "total" must be a finite non-negative number (got Infinity)',
    );
  });

  it("closes with a code a person can read", () => {
    const err = rejection(parseToWorker, "{}");
    expect(describeClose(err.closeCode)).toMatch(/^protocol violation: /);
  });
});

/** What crosses the wire: `-0` becomes `0`, as it does through `encode`. */
const wire = <T>(value: T): T => JSON.parse(JSON.stringify(value));

const json = fc.jsonValue().map(wire);
const id = fc.string({ minLength: 1, maxLength: 200 });
const amount = fc.double({ min: 0, max: 1e12, noNaN: true });
const positive = fc.integer({ min: 1, max: 1000 });
const range = fc
  .tuple(positive, positive)
  .map(([a, b]): [number, number] => (a <= b ? [a, b] : [b, a]));
const resources = fc.record({ cpus: amount, gpus: amount, memory: amount }, { requiredKeys: [] });
const backoff = fc.record(
  { initialMs: amount, factor: fc.double({ min: 0.001, max: 10, noNaN: true }), maxMs: amount },
  { requiredKeys: ["initialMs"] },
);
const planned = fc.record(
  {
    id,
    kind: id,
    input: json,
    deps: fc.array(id, { maxLength: 3 }),
    requires: resources,
    retries: fc.nat(10),
    backoff,
    timeoutMs: fc.double({ min: 0.001, max: 1e9, noNaN: true }),
    ranks: positive,
  },
  { requiredKeys: ["id", "kind", "input", "deps", "requires", "retries"] },
);
const error = fc.record(
  { message: fc.string(), name: fc.string(), stack: fc.string() },
  { requiredKeys: ["message"] },
);

const arbitraries = {
  hello: fc.record({
    type: fc.constant("hello"),
    protocol: range,
    worker: id,
    resources,
    codeHash: id,
    proof: id,
  }),
  completed: fc.record({
    type: fc.constant("result"),
    job: id,
    status: fc.constant("completed"),
    value: json,
  }),
  failed: fc.record({ type: fc.constant("result"), job: id, status: fc.constant("failed"), error }),
  blocked: fc.record({
    type: fc.constant("result"),
    job: id,
    status: fc.constant("blocked"),
    needs: fc.array(planned, { minLength: 1, maxLength: 3 }),
  }),
  progress: fc.record(
    {
      type: fc.constant("progress"),
      job: id,
      done: amount,
      total: amount,
      message: fc.string(),
    },
    { requiredKeys: ["type", "job"] },
  ),
  challenge: fc.record({ type: fc.constant("challenge"), nonce: id, protocol: range }),
  welcome: fc.record(
    { type: fc.constant("welcome"), protocol: positive, run: id, proof: id, heartbeatMs: positive },
    { requiredKeys: ["type", "protocol", "run", "proof"] },
  ),
  job: fc.record({
    type: fc.constant("job"),
    id,
    kind: id,
    input: json,
    deps: fc.dictionary(fc.string(), json, { maxKeys: 3 }),
    attempt: positive,
  }),
  cancel: fc.record(
    { type: fc.constant("cancel"), job: id, reason: fc.string() },
    { requiredKeys: ["type", "job"] },
  ),
};

/** An object inside a frame whose fields the parsers check: where it is and which fields it has. */
interface Target {
  name: string;
  frames: fc.Arbitrary<Frame>;
  parse: Parse;
  path: (string | number)[];
  required: string[];
  allowed: string[];
}

/** A target as the table writes it: `path` defaults to the frame, `required` and `allowed` to none. */
type TargetSpec = Pick<Target, "name"> &
  Partial<Pick<Target, "path" | "required" | "allowed">> & { frames: fc.Arbitrary<unknown> };

/** The targets of the frames `parse` reads. */
function targetsOf(parse: Parse, specs: TargetSpec[]): Target[] {
  return specs.map((spec) => ({
    path: [],
    required: [],
    allowed: [],
    ...spec,
    frames: spec.frames as fc.Arbitrary<Frame>,
    parse,
  }));
}

const resourceFields = ["cpus", "gpus", "memory"];
const plannedRequired = ["id", "kind", "input", "deps", "requires", "retries"];
const targets: Target[] = [
  ...targetsOf(parseToCoordinator, [
    {
      name: "hello",
      frames: arbitraries.hello,
      required: ["type", "protocol", "worker", "resources", "codeHash", "proof"],
    },
    {
      name: "hello resources",
      frames: arbitraries.hello,
      path: ["resources"],
      allowed: resourceFields,
    },
    {
      name: "completed result",
      frames: arbitraries.completed,
      required: ["type", "job", "status", "value"],
    },
    {
      name: "failed result",
      frames: arbitraries.failed,
      required: ["type", "job", "status", "error"],
    },
    {
      name: "failed result error",
      frames: arbitraries.failed,
      path: ["error"],
      required: ["message"],
      allowed: ["name", "stack"],
    },
    {
      name: "blocked result",
      frames: arbitraries.blocked,
      required: ["type", "job", "status", "needs"],
    },
    {
      name: "planned job",
      frames: arbitraries.blocked,
      path: ["needs", 0],
      required: plannedRequired,
      allowed: ["backoff", "timeoutMs", "ranks"],
    },
    {
      name: "planned job requires",
      frames: arbitraries.blocked,
      path: ["needs", 0, "requires"],
      allowed: resourceFields,
    },
    {
      name: "planned job backoff",
      frames: arbitraries.blocked.filter((f) => f.needs[0]!.backoff !== undefined),
      path: ["needs", 0, "backoff"],
      required: ["initialMs"],
      allowed: ["factor", "maxMs"],
    },
    {
      name: "progress",
      frames: arbitraries.progress,
      required: ["type", "job"],
      allowed: ["done", "total", "message"],
    },
  ]),
  ...targetsOf(parseToWorker, [
    { name: "challenge", frames: arbitraries.challenge, required: ["type", "nonce", "protocol"] },
    {
      name: "welcome",
      frames: arbitraries.welcome,
      required: ["type", "protocol", "run", "proof"],
      allowed: ["heartbeatMs"],
    },
    {
      name: "job",
      frames: arbitraries.job,
      required: ["type", "id", "kind", "input", "deps", "attempt"],
    },
    {
      name: "cancel",
      frames: arbitraries.cancel,
      required: ["type", "job"],
      allowed: ["reason"],
    },
  ]),
];

/** The object at `path` inside a deep copy of `frame`, and the copy. */
function dig(frame: Frame, path: (string | number)[]): [Record<string, unknown>, unknown] {
  const copy: unknown = structuredClone(frame);
  let at = copy as Record<string | number, unknown>;
  for (const step of path) at = at[step] as Record<string | number, unknown>;
  return [at, copy];
}

function fieldPath(path: (string | number)[], key: string): string {
  let text = "";
  for (const step of path) text += typeof step === "number" ? `[${step}]` : `${text && "."}${step}`;
  return text === "" ? key : `${text}.${key}`;
}

describe("properties", () => {
  const frameShaped = fc.dictionary(
    fc.constantFrom("type", "job", "status", "value", "error", "needs", "protocol", "worker", "id"),
    fc.oneof(
      fc.constantFrom("hello", "result", "progress", "completed", "failed", "blocked", "job"),
      json,
    ),
  );

  it.each([
    ["arbitrary strings", fc.string()],
    ["arbitrary JSON", json.map((v) => JSON.stringify(v))],
    ["frame-shaped JSON", frameShaped.map((v) => JSON.stringify(v))],
  ] as const)("for %s a parser returns a frame or throws ProtocolError", (_, texts) => {
    fc.assert(
      fc.property(
        texts,
        fc.constantFrom<Parse>(parseToCoordinator, parseToWorker),
        (text, parse) => {
          let frame: Frame;
          try {
            frame = parse(text);
          } catch (err) {
            expect(err).toBeInstanceOf(ProtocolError);
            expect((err as ProtocolError).code).toBe("BAD_FRAME");
            return;
          }
          expect(parse(encode(frame))).toEqual(wire(frame));
        },
      ),
      { numRuns: 500 },
    );
  });

  it.each(targets.filter((t) => t.path.length === 0).map((t) => [t.name, t] as const))(
    "every valid %s frame round-trips",
    (_, { frames, parse }) => {
      fc.assert(
        fc.property(frames.map(wire), (frame) => {
          expect(parse(encode(frame))).toEqual(frame);
        }),
        { numRuns: 100 },
      );
    },
  );

  it.each(targets.filter((t) => t.required.length > 0).map((t) => [t.name, t] as const))(
    "deleting a required field of a %s is rejected naming the field",
    (_, { frames, parse, path, required }) => {
      fc.assert(
        fc.property(frames.map(wire), fc.constantFrom(...required), (frame, key) => {
          const [object, copy] = dig(frame, path);
          delete object[key];
          const err = rejection(parse, JSON.stringify(copy));
          expect(err.message).toContain(JSON.stringify(fieldPath(path, key)));
        }),
        { numRuns: 100 },
      );
    },
  );

  it.each(targets.map((target) => [target.name, target] as const))(
    "adding an unknown field to a %s is rejected naming the field",
    (_, { frames, parse, path, required, allowed }) => {
      const known = new Set([...required, ...allowed]);
      const unknown = fc.string({ maxLength: 20 }).filter((key) => !known.has(key));
      fc.assert(
        fc.property(frames.map(wire), unknown, json, (frame, key, value) => {
          const [object, copy] = dig(frame, path);
          Object.defineProperty(object, key, { value, enumerable: true });
          const err = rejection(parse, JSON.stringify(copy));
          expect(err.message).toContain(`unknown field ${JSON.stringify(fieldPath(path, key))}`);
        }),
        { numRuns: 100 },
      );
    },
  );
});
