/**
 * The shape V8 gives a connection's context. XState copies the context on every assign (a
 * connection's hello, probes and close; a job's held job is written in place), and V8 keeps
 * an object of 20 or more fields in its dictionary form, where each copy costs about ten times
 * as much: protocol 7's `instance`, a
 * twentieth field, cost the simulation about 5% of its CPU. The fixed settings are one field.
 *
 * It runs in a fresh Node process with `--allow-natives-syntax` (through tsx, on src/), which
 * asks V8 whether the context of a connection that has served jobs still has fast properties.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";

const CONNECTION = join(ROOT, "src/machines/connection.ts");

it("a connection's context keeps fast properties after a hello and three jobs", async () => {
  const program = `
import { createActor, fromCallback } from "xstate";
const { connectionMachine } = await import(${JSON.stringify(CONNECTION)});
const coordinator = createActor(fromCallback(() => {})).start();
const actor = createActor(connectionMachine, {
  input: { conn: "c1", coordinator, run: "r1", nonce: "n1", protocol: [1, 7], codeHash: "h" },
}).start();
actor.send({
  type: "HELLO",
  frame: { type: "hello", protocol: [1, 7], worker: "w1", instance: "i1", resources: {}, codeHash: "h", proof: "p" },
  authentic: true,
  welcomeProof: "wp",
  holders: [],
});
for (const job of ["a", "b", "c"]) {
  const frame = { type: "job", id: job, kind: "k", input: null, deps: {}, attempt: 1 };
  actor.send({ type: "GRANT", job, frame, bytes: 100 });
  actor.send({ type: "RESULT", frame: { type: "result", job, status: "completed", value: 1 } });
}
const { value, context } = actor.getSnapshot();
console.log(JSON.stringify({ value, fields: Object.keys(context).length, fast: %HasFastProperties(context) }));
actor.stop();`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--allow-natives-syntax", "--import", "tsx", "--input-type=module", "-e", program],
    { cwd: ROOT, timeout: 60_000 },
  );
  expect(JSON.parse(stdout)).toMatchObject({ value: { registered: "idle" }, fast: true });
}, 60_000);
