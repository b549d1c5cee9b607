/**
 * The ownership tests as `baton` exports them: arguments a JavaScript caller may give that
 * are no argv, environment or deployment identity are a `ConfigError` naming the argument,
 * where `carriesDeployment("python dep-abc", …)` was "argv.some is not a function",
 * `envCarries(env)` a TypeError about destructuring, and a relative state dir (or a
 * deployment as a number) answered false for the deployment's own processes.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { carriesDeployment, envCarries } from "../../src/index.ts";

const id = { deployment: "dep-abc", stateDir: "/srv/app/.baton/run" };
const env = { BATON_DEPLOYMENT: "dep-abc", BATON_STATE_DIR: "/srv/app/.baton/run" };

describe("the exported ownership tests", () => {
  it("answer as before for what they take", () => {
    expect(envCarries(env, id)).toBe(true);
    expect(envCarries(undefined, id)).toBe(false);
    expect(carriesDeployment(["python", "dep-abc"], undefined, id)).toBe(true);
    expect(carriesDeployment(["sleep", "30"], { ...env, BATON_STATE_DIR: "/tmp" }, id)).toBe(false);
  });

  it.each([
    [
      () => carriesDeployment("python dep-abc" as never, undefined, id),
      'carriesDeployment: argv must be a process\'s arguments as a list of strings (["python3", "train.py"], such as ProcInfo.argv), not "python dep-abc"',
    ],
    [
      () => carriesDeployment([5] as never, undefined, id),
      "carriesDeployment: argv must be a process's arguments as a list of strings",
    ],
    [
      () => envCarries("BATON_DEPLOYMENT=dep-abc" as never, id),
      "envCarries: env must be a process's environment as an object ({ BATON_DEPLOYMENT: …, … }, such as Procs.environ(pid) gives), or undefined, not a string",
    ],
    [
      () => carriesDeployment([], ["SECRET=1"] as never, id),
      "carriesDeployment: env must be a process's environment as an object ({ BATON_DEPLOYMENT: …, … }, such as Procs.environ(pid) gives), or undefined, not a list",
    ],
    [
      () => envCarries({ ...env, BATON_STATE_DIR: ["/srv/app/.baton/run"] } as never, id),
      "envCarries: env.BATON_STATE_DIR must be text, as every variable's value is, not a list",
    ],
    [
      () => envCarries(env, undefined as never),
      "envCarries: id must be a deployment and its state dir, { deployment, stateDir }, not undefined",
    ],
    [
      () => envCarries(env, { deployment: 5, stateDir: "/srv" } as never),
      'envCarries: id.deployment must be a deployment id (1 to 64 letters, digits, "_", "." or "-"), not 5',
    ],
    [
      () => carriesDeployment([], env, { deployment: "dep-abc", stateDir: ".baton/run" }),
      'carriesDeployment: id.stateDir must be the absolute path of the state directory, as the launcher gives its ranks BATON_STATE_DIR (resolve(".baton/run")), not ".baton/run"',
    ],
  ])(
    "refuse what they cannot take with a ConfigError naming the argument (%#)",
    (call, message) => {
      expect(call).toThrow(ConfigError);
      expect(call).toThrow(message);
    },
  );

  it("never show an environment given as a string: it holds secrets", () => {
    let message = "";
    try {
      envCarries("TOKEN=hunter2" as never, id);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^envCarries: env must be .*, not a string$/);
  });
});
