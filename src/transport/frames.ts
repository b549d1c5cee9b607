/**
 * Protocol frames: the JSON objects coordinator and workers exchange, one per WebSocket
 * message, discriminated on `type`. Frames from the other side are untrusted, so each is
 * parsed and checked field by field; a bad frame is a `ProtocolError` ("BAD_FRAME", close
 * code 4000) whose message names the frame type, the field path and what was expected.
 *
 * @example
 * ```ts
 * link.onFrame((text) => {
 *   const frame = parseToCoordinator(text);
 *   if (frame.type === "result") console.log(frame.job, frame.status);
 * });
 * link.send(encode({ type: "cancel", job: "j1" }));
 * ```
 */
import { ProtocolError } from "../errors.ts";
import type { Json, PlannedJob, Resources } from "../graph/job.ts";
import { RESOURCE_NAMES } from "../graph/resourceNames.ts";
import { CloseCode } from "./closeCodes.ts";
import type { ProtocolRange } from "./protocolVersion.ts";

/**
 * Coordinator → worker, first frame on a connection: a nonce for the worker to prove the run
 * secret over, and the protocol versions the coordinator speaks.
 *
 * @example
 * ```ts
 * const frame: ChallengeFrame = { type: "challenge", nonce: "kq3V9x", protocol: [1, 1] };
 * ```
 */
export interface ChallengeFrame {
  type: "challenge";
  nonce: string;
  protocol: ProtocolRange;
}

/**
 * Coordinator → worker: the handshake succeeded. `protocol` is the negotiated version and
 * `proof` shows the coordinator knows the run secret too. `heartbeatMs` (protocol version 2 on,
 * absent in version 1) is how often the coordinator pings this connection: by default the
 * worker gives up on a coordinator it has not heard from (no frame, no ping) for 4 times
 * that. Without it (a version 1 connection) the worker keeps no such watchdog.
 *
 * @example
 * ```ts
 * const frame: WelcomeFrame = {
 *   type: "welcome", protocol: 2, run: "r-7f2a", proof: "9c1e…", heartbeatMs: 5000,
 * };
 * ```
 */
export interface WelcomeFrame {
  type: "welcome";
  protocol: number;
  run: string;
  proof: string;
  /** The coordinator's ping interval on this connection, in ms (a positive integer). */
  heartbeatMs?: number;
  /** The largest frame the coordinator accepts, in bytes (version 4 on). */
  maxFrameBytes?: number;
}

/**
 * Coordinator → worker: run this job. `deps` maps each dependency's id to its result;
 * `attempt` counts from 1.
 *
 * @example
 * ```ts
 * const frame: JobFrame = {
 *   type: "job", id: "j2", kind: "parse", input: { strict: true }, deps: { j1: "<html>" }, attempt: 1,
 * };
 * ```
 */
export interface JobFrame {
  type: "job";
  id: string;
  kind: string;
  input: Json;
  deps: Record<string, Json>;
  attempt: number;
  /** For a rank job (a job with `ranks`): how many ranks its group has. */
  ranks?: number;
}

/**
 * Coordinator → worker: abort the job with this id. `reason` (protocol version 3 on) says
 * why, for the handler's AbortSignal.
 *
 * @example
 * ```ts
 * const frame: CancelFrame = { type: "cancel", job: "j2", reason: "the run was cancelled" };
 * ```
 */
export interface CancelFrame {
  type: "cancel";
  job: string;
  reason?: string;
}

/**
 * Worker → coordinator, answer to the challenge: the versions the worker speaks, its id,
 * what it offers, the hash of its job module and its proof of the run secret. From protocol
 * version 7 it also gives its `instance`, which tells the coordinator whether a hello under a
 * connected worker's name comes from that same worker process connecting again (it replaces
 * its old connection, closed with 4008) or from another process (refused with 4010). From
 * version 8 it gives its `abortGraceMs`, how long the coordinator waits for a job it told to
 * stop after its timeout.
 *
 * @example
 * ```ts
 * const frame: HelloFrame = {
 *   type: "hello", protocol: [1, 1], worker: "w-1", resources: { cpus: 4 }, codeHash: "3b9f…", proof: "a41c…",
 * };
 * ```
 */
export interface HelloFrame {
  type: "hello";
  protocol: ProtocolRange;
  worker: string;
  resources: Resources;
  codeHash: string;
  proof: string;
  /** The largest frame the worker accepts, in bytes (version 5 on; absent: no limit known). */
  maxFrameBytes?: number;
  /**
   * The worker process's instance id (version 7 on): drawn at random once per `baton worker`
   * process, or per worker slot of an in-process pool, and the same on each of its connections.
   * Not a secret (the proof guards the hello), but never logged. Absent: the coordinator takes
   * the hello under any name, as before version 7.
   */
  instance?: string;
  /**
   * How long, in ms, the worker gives an aborted handler to return before it goes on without
   * it (its `--abort-grace`; version 8 on). A job that ran past its timeout and is still held
   * this long (and a second more) after its cancel is given up at once (4005) and runs again.
   * Absent: its lease expires once it has gone unrenewed for the lease timeout (20 s).
   */
  abortGraceMs?: number;
}

/**
 * An error as it crosses the wire.
 *
 * @example
 * ```ts
 * const error: SerializedError = { message: "timed out", name: "TimeoutError" };
 * ```
 */
export interface SerializedError {
  message: string;
  name?: string;
  stack?: string;
  /**
   * `false` when the handler said another attempt cannot help (it threw a `NonRetryableError`,
   * or any error with `retryable: false`): the coordinator fails the job for good at once.
   * Protocol version 6.
   */
  retryable?: false;
}

/**
 * Worker → coordinator: how a job attempt ended. `blocked` means the handler called
 * `ctx.need(...)`: the job runs again once the jobs in `needs` have completed.
 *
 * @example
 * ```ts
 * const done: ResultFrame = { type: "result", job: "j2", status: "completed", value: [1, 2] };
 * const failed: ResultFrame = { type: "result", job: "j2", status: "failed", error: { message: "boom" } };
 * ```
 */
export type ResultFrame =
  | { type: "result"; job: string; status: "completed"; value: Json }
  | { type: "result"; job: string; status: "failed"; error: SerializedError }
  | { type: "result"; job: string; status: "blocked"; needs: PlannedJob[] };

/**
 * Worker → coordinator: progress of the running job, all parts optional.
 *
 * @example
 * ```ts
 * const frame: ProgressFrame = { type: "progress", job: "j2", done: 30, total: 120, message: "parsing" };
 * ```
 */
export interface ProgressFrame {
  type: "progress";
  job: string;
  done?: number;
  total?: number;
  message?: string;
}

/**
 * Every frame a worker can receive.
 *
 * @example
 * ```ts
 * function onFrame(frame: ToWorker) {
 *   if (frame.type === "job") run(frame.kind, frame.input);
 * }
 * ```
 */
export type ToWorker = ChallengeFrame | WelcomeFrame | JobFrame | CancelFrame;

/**
 * Every frame a coordinator can receive.
 *
 * @example
 * ```ts
 * function onFrame(frame: ToCoordinator) {
 *   if (frame.type === "hello") authenticate(frame.worker, frame.proof);
 * }
 * ```
 */
export type ToCoordinator = HelloFrame | ResultFrame | ProgressFrame;

type Obj = { readonly [key: string]: unknown };

/** Longest id, kind, worker id, instance, run id, nonce, proof or code hash accepted. */
const MAX_ID = 200;
/** Longest untrusted text quoted verbatim in an error message. */
const MAX_QUOTED = 60;

const TO_COORDINATOR_TYPES: readonly string[] = ["hello", "result", "progress"];
const TO_WORKER_TYPES: readonly string[] = ["challenge", "welcome", "job", "cancel"];

const HELLO_FIELDS: readonly string[] = [
  "type",
  "protocol",
  "worker",
  "resources",
  "codeHash",
  "proof",
  "maxFrameBytes",
  "instance",
  "abortGraceMs",
];
const COMPLETED_FIELDS: readonly string[] = ["type", "job", "status", "value"];
const FAILED_FIELDS: readonly string[] = ["type", "job", "status", "error"];
const BLOCKED_FIELDS: readonly string[] = ["type", "job", "status", "needs"];
const PROGRESS_FIELDS: readonly string[] = ["type", "job", "done", "total", "message"];
const CHALLENGE_FIELDS: readonly string[] = ["type", "nonce", "protocol"];
const WELCOME_FIELDS: readonly string[] = [
  "type",
  "protocol",
  "run",
  "proof",
  "heartbeatMs",
  "maxFrameBytes",
];
const JOB_FIELDS: readonly string[] = ["type", "id", "kind", "input", "deps", "attempt", "ranks"];
const CANCEL_FIELDS: readonly string[] = ["type", "job", "reason"];
const ERROR_FIELDS: readonly string[] = ["message", "name", "stack", "retryable"];
const RESOURCE_FIELDS: readonly string[] = RESOURCE_NAMES;
const BACKOFF_FIELDS: readonly string[] = ["initialMs", "factor", "maxMs"];
const PLANNED_JOB_FIELDS: readonly string[] = [
  "id",
  "kind",
  "input",
  "deps",
  "requires",
  "retries",
  "backoff",
  "timeoutMs",
  "ranks",
];

/**
 * Parses and checks a frame a worker sent. Ids, kinds, the worker id, code hash and proof are
 * non-empty and at most 200 characters; numbers are finite; unknown fields are rejected.
 *
 * @throws ProtocolError with code "BAD_FRAME" and close code 4000 when the frame is not valid.
 * @example
 * ```ts
 * parseToCoordinator('{"type":"progress","job":"j1","done":3}');
 * // { type: "progress", job: "j1", done: 3 }
 * parseToCoordinator('{"type":"result","job":7}');
 * // throws: result frame: field "job" must be a non-empty string (got number)
 * ```
 */
export function parseToCoordinator(text: string): ToCoordinator {
  const o = parseObject(text);
  switch (o.type) {
    case "result":
      return checkResult(o);
    case "progress":
      return checkProgress(o);
    case "hello":
      return checkHello(o);
    default:
      throw badType(
        o.type,
        TO_COORDINATOR_TYPES,
        TO_WORKER_TYPES,
        "to workers, not to the coordinator",
      );
  }
}

/**
 * Parses and checks a frame the coordinator sent. Ids, kinds, nonce, run id and proof are
 * non-empty and at most 200 characters; unknown fields are rejected.
 *
 * @throws ProtocolError with code "BAD_FRAME" and close code 4000 when the frame is not valid.
 * @example
 * ```ts
 * parseToWorker('{"type":"cancel","job":"j1"}'); // { type: "cancel", job: "j1" }
 * parseToWorker('{"type":"hello"}');
 * // throws: frame type "hello" goes to the coordinator, not to workers; expected one of …
 * ```
 */
export function parseToWorker(text: string): ToWorker {
  const o = parseObject(text);
  switch (o.type) {
    case "job":
      return checkJob(o);
    case "cancel":
      return checkCancel(o);
    case "challenge":
      return checkChallenge(o);
    case "welcome":
      return checkWelcome(o);
    default:
      throw badType(
        o.type,
        TO_WORKER_TYPES,
        TO_COORDINATOR_TYPES,
        "to the coordinator, not to workers",
      );
  }
}

/**
 * Serialises a frame for sending.
 *
 * @example
 * ```ts
 * link.send(encode({ type: "progress", job: "j1", done: 3, total: 10 }));
 * ```
 */
export function encode(frame: ToWorker | ToCoordinator): string {
  return JSON.stringify(frame);
}

function checkHello(o: Obj): HelloFrame {
  onlyFields(o, HELLO_FIELDS, "hello", "");
  requireRange(o, "protocol", "hello");
  requireId(o, "worker", "hello", "");
  requireResources(o, "resources", "hello", "");
  requireId(o, "codeHash", "hello", "");
  requireId(o, "proof", "hello", "");
  if (o.maxFrameBytes !== undefined) requirePositiveInteger(o, "maxFrameBytes", "hello", "");
  if (o.instance !== undefined) requireId(o, "instance", "hello", "");
  if (o.abortGraceMs !== undefined) requirePositiveInteger(o, "abortGraceMs", "hello", "");
  return o as unknown as HelloFrame;
}

function checkResult(o: Obj): ResultFrame {
  const status = o.status;
  if (status === "completed") {
    onlyFields(o, COMPLETED_FIELDS, "result", "");
    requireId(o, "job", "result", "");
    requirePresent(o, "value", "result", "");
  } else if (status === "failed") {
    onlyFields(o, FAILED_FIELDS, "result", "");
    requireId(o, "job", "result", "");
    requireError(o);
  } else if (status === "blocked") {
    onlyFields(o, BLOCKED_FIELDS, "result", "");
    requireId(o, "job", "result", "");
    requireNeeds(o);
  } else {
    throw fieldError(
      "result",
      "",
      "status",
      status,
      'one of "completed", "failed", "blocked"',
      "string",
    );
  }
  return o as unknown as ResultFrame;
}

/**
 * Checks a progress frame before it is sent, as the coordinator will on arrival: a handler's
 * bad `ctx.progress` call then fails in the handler, instead of breaking the protocol and
 * losing the worker.
 *
 * @throws ProtocolError with code "BAD_FRAME" naming the field at fault.
 * @example
 * ```ts
 * checkProgressFrame({ type: "progress", job: "j1", done: Number.NaN });
 * // throws: progress frame: field "done" must be a finite non-negative number (got number)
 * ```
 */
export function checkProgressFrame(frame: ProgressFrame): ProgressFrame {
  return checkProgress(frame as unknown as Obj);
}

function checkProgress(o: Obj): ProgressFrame {
  onlyFields(o, PROGRESS_FIELDS, "progress", "");
  requireId(o, "job", "progress", "");
  if (o.done !== undefined) requireAmount(o, "done", "progress", "");
  if (o.total !== undefined) requireAmount(o, "total", "progress", "");
  if (o.message !== undefined) requireString(o, "message", "progress", "");
  return o as unknown as ProgressFrame;
}

function checkChallenge(o: Obj): ChallengeFrame {
  onlyFields(o, CHALLENGE_FIELDS, "challenge", "");
  requireId(o, "nonce", "challenge", "");
  requireRange(o, "protocol", "challenge");
  return o as unknown as ChallengeFrame;
}

function checkWelcome(o: Obj): WelcomeFrame {
  onlyFields(o, WELCOME_FIELDS, "welcome", "");
  requirePositiveInteger(o, "protocol", "welcome", "");
  requireId(o, "run", "welcome", "");
  requireId(o, "proof", "welcome", "");
  if (o.heartbeatMs !== undefined) requirePositiveInteger(o, "heartbeatMs", "welcome", "");
  if (o.maxFrameBytes !== undefined) requirePositiveInteger(o, "maxFrameBytes", "welcome", "");
  return o as unknown as WelcomeFrame;
}

function checkJob(o: Obj): JobFrame {
  onlyFields(o, JOB_FIELDS, "job", "");
  requireId(o, "id", "job", "");
  requireId(o, "kind", "job", "");
  requirePresent(o, "input", "job", "");
  requireObject(o, "deps", "job", "");
  requirePositiveInteger(o, "attempt", "job", "");
  if (o.ranks !== undefined) requirePositiveInteger(o, "ranks", "job", "");
  return o as unknown as JobFrame;
}

function checkCancel(o: Obj): CancelFrame {
  onlyFields(o, CANCEL_FIELDS, "cancel", "");
  requireId(o, "job", "cancel", "");
  if (o.reason !== undefined) requireString(o, "reason", "cancel", "");
  return o as unknown as CancelFrame;
}

function requireError(o: Obj): void {
  const error = requireObject(o, "error", "result", "");
  onlyFields(error, ERROR_FIELDS, "result", "error");
  requireString(error, "message", "result", "error");
  if (error.name !== undefined) requireString(error, "name", "result", "error");
  if (error.stack !== undefined) requireString(error, "stack", "result", "error");
  if (error.retryable !== undefined && error.retryable !== false) {
    throw fieldError("result", "error", "retryable", error.retryable, "false or absent", "boolean");
  }
}

function requireNeeds(o: Obj): void {
  const needs = o.needs;
  if (!Array.isArray(needs) || needs.length === 0) {
    throw fieldError("result", "", "needs", needs, "a non-empty array of planned jobs", "array");
  }
  for (let i = 0; i < needs.length; i++) {
    const at = `needs[${i}]`;
    const job = requireObject(needs, i, "result", "needs");
    onlyFields(job, PLANNED_JOB_FIELDS, "result", at);
    requireId(job, "id", "result", at);
    requireId(job, "kind", "result", at);
    requirePresent(job, "input", "result", at);
    requireIdList(job, "deps", "result", at);
    requireResources(job, "requires", "result", at);
    requireNonNegativeInteger(job, "retries", "result", at);
    if (job.backoff !== undefined) requireBackoff(job, at);
    if (job.timeoutMs !== undefined) requirePositiveAmount(job, "timeoutMs", "result", at);
    if (job.ranks !== undefined) requirePositiveInteger(job, "ranks", "result", at);
  }
}

function requireBackoff(job: Obj, at: string): void {
  const path = `${at}.backoff`;
  const backoff = requireObject(job, "backoff", "result", at);
  onlyFields(backoff, BACKOFF_FIELDS, "result", path);
  requireAmount(backoff, "initialMs", "result", path);
  if (backoff.factor !== undefined) requirePositiveAmount(backoff, "factor", "result", path);
  if (backoff.maxMs !== undefined) requireAmount(backoff, "maxMs", "result", path);
}

function requireResources(o: Obj, key: string, frame: string, at: string): void {
  const resources = requireObject(o, key, frame, at);
  const path = at === "" ? key : `${at}.${key}`;
  onlyFields(resources, RESOURCE_FIELDS, frame, path);
  if (resources.cpus !== undefined) requireAmount(resources, "cpus", frame, path);
  if (resources.gpus !== undefined) requireAmount(resources, "gpus", frame, path);
  if (resources.memory !== undefined) requireAmount(resources, "memory", frame, path);
}

function requireRange(o: Obj, key: string, frame: string): void {
  const range = o[key];
  if (!Array.isArray(range) || range.length !== 2) {
    throw fieldError(frame, "", key, range, "a [min, max] pair of positive integers", "array");
  }
  const min: unknown = range[0];
  const max: unknown = range[1];
  if (!isPositiveInteger(min)) {
    throw fieldError(frame, "", `${key}[0]`, min, "a positive integer", "number");
  }
  if (!isPositiveInteger(max)) {
    throw fieldError(frame, "", `${key}[1]`, max, "a positive integer", "number");
  }
  if (min > max) {
    throw badFrame(`${frame} frame: field "${key}" must have min ≤ max (got [${min}, ${max}])`);
  }
}

function requireIdList(o: Obj, key: string, frame: string, at: string): void {
  const list = o[key];
  if (!Array.isArray(list)) throw fieldError(frame, at, key, list, "an array of ids", "array");
  const path = at === "" ? key : `${at}.${key}`;
  for (let i = 0; i < list.length; i++) requireId(list, i, frame, path);
}

function requireId(
  o: Obj | readonly unknown[],
  key: string | number,
  frame: string,
  at: string,
): void {
  const v = (o as Obj)[key];
  if (typeof v === "string" && v.length !== 0 && v.length <= MAX_ID) return;
  throw typeof v === "string" && v.length > MAX_ID
    ? fieldError(frame, at, key, v, `at most ${MAX_ID} characters long`, "string")
    : fieldError(frame, at, key, v, "a non-empty string", "string");
}

function requireString(o: Obj, key: string, frame: string, at: string): void {
  const v = o[key];
  if (typeof v !== "string") throw fieldError(frame, at, key, v, "a string", "string");
}

function requireAmount(o: Obj, key: string, frame: string, at: string): void {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
    throw fieldError(frame, at, key, v, "a finite non-negative number", "number");
  }
}

function requirePositiveAmount(o: Obj, key: string, frame: string, at: string): void {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw fieldError(frame, at, key, v, "a finite positive number", "number");
  }
}

function requirePositiveInteger(o: Obj, key: string, frame: string, at: string): void {
  const v = o[key];
  if (!isPositiveInteger(v)) throw fieldError(frame, at, key, v, "a positive integer", "number");
}

function requireNonNegativeInteger(o: Obj, key: string, frame: string, at: string): void {
  const v = o[key];
  if (!Number.isSafeInteger(v) || (v as number) < 0) {
    throw fieldError(frame, at, key, v, "a non-negative integer", "number");
  }
}

function requirePresent(o: Obj, key: string, frame: string, at: string): void {
  if (o[key] === undefined) throw missing(frame, at === "" ? key : `${at}.${key}`, "a JSON value");
}

function requireObject(
  o: Obj | readonly unknown[],
  key: string | number,
  frame: string,
  at: string,
): Obj {
  const v = (o as Obj)[key];
  if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Obj;
  throw fieldError(frame, at, key, v, "an object", "object");
}

function isPositiveInteger(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) > 0;
}

/** Rejects the first key of `o` that is not in `allowed`. */
function onlyFields(o: Obj, allowed: readonly string[], frame: string, at: string): void {
  for (const key in o) {
    if (!allowed.includes(key)) {
      const path = quote(at === "" ? key : `${at}.${key}`);
      throw badFrame(
        `${frame} frame: unknown field ${path}; allowed fields are ${allowed.join(", ")}`,
      );
    }
  }
}

function parseObject(text: string): Obj {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw badFrame(`frame is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw badFrame(`frame must be a JSON object (got ${typeName(v)})`);
  }
  return v as Obj;
}

function badType(
  type: unknown,
  expected: readonly string[],
  otherWay: readonly string[],
  direction: string,
): ProtocolError {
  const oneOf = `expected one of ${expected.join(", ")}`;
  if (type === undefined) return badFrame(`frame has no "type" field; ${oneOf}`);
  if (typeof type !== "string") {
    return badFrame(`frame field "type" must be a string (got ${typeName(type)}); ${oneOf}`);
  }
  if (otherWay.includes(type)) {
    return badFrame(`frame type ${quote(type)} goes ${direction}; ${oneOf}`);
  }
  return badFrame(`unknown frame type ${quote(type)}; ${oneOf}`);
}

/**
 * `<frame> frame: field "<path>" must be <expected> (got <what>)`, or "is missing" when `v`
 * is undefined. `type` is the JSON type expected: when `v` has another, `<what>` names its
 * type, else it shows the value.
 */
function fieldError(
  frame: string,
  at: string,
  key: string | number,
  v: unknown,
  expected: string,
  type: string,
): ProtocolError {
  const field = typeof key === "number" ? `${at}[${key}]` : at === "" ? key : `${at}.${key}`;
  if (v === undefined) return missing(frame, field, expected);
  return badFrame(
    `${frame} frame: field ${quote(field)} must be ${expected} (got ${shown(v, type)})`,
  );
}

function missing(frame: string, field: string, expected: string): ProtocolError {
  return badFrame(`${frame} frame: field ${quote(field)} is missing; it must be ${expected}`);
}

function shown(v: unknown, type: string): string {
  const actual = typeName(v);
  if (actual !== type) return actual;
  if (typeof v === "string") {
    return v.length > MAX_QUOTED ? `a string of ${v.length} characters` : JSON.stringify(v);
  }
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? "" : "s"}`;
  return String(v);
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function quote(name: string): string {
  return name.length > MAX_QUOTED
    ? `${JSON.stringify(name.slice(0, MAX_QUOTED))}… (${name.length} characters)`
    : JSON.stringify(name);
}

function badFrame(message: string): ProtocolError {
  return new ProtocolError("BAD_FRAME", message, CloseCode.protocolViolation);
}
