import { describe, expect, it } from "vitest";
import { carriesDeployment, envCarries } from "../../src/machines/carriesDeployment.ts";

const DEP = "dep-abc123";
const STATE_DIR = "/srv/app/.baton/run";
const ID = { deployment: DEP, stateDir: STATE_DIR };

describe("carriesDeployment", () => {
  it("accepts the deployment in the environment, whatever the argv", () => {
    const env = { BATON_DEPLOYMENT: DEP, BATON_STATE_DIR: STATE_DIR };
    expect(carriesDeployment(["python", "train.py"], env, ID)).toBe(true);
    expect(envCarries(env, ID)).toBe(true);
  });

  it("rejects the same name launched from another state dir, even when an argument names it", () => {
    const env = { BATON_DEPLOYMENT: DEP, BATON_STATE_DIR: "/home/other/.baton/run" };
    expect(carriesDeployment(["python", `--deployment=${DEP}`], env, ID)).toBe(false);
    expect(envCarries(env, ID)).toBe(false);
  });

  it("takes the name without a state dir as the deployment's, but not as its environment", () => {
    const env = { BATON_DEPLOYMENT: DEP };
    expect(carriesDeployment(["python", "train.py"], env, ID)).toBe(true);
    expect(envCarries(env, ID)).toBe(false);
  });

  it("rejects another deployment's environment and an unreadable one", () => {
    expect(carriesDeployment(["python"], { BATON_DEPLOYMENT: "dep-other" }, ID)).toBe(false);
    expect(carriesDeployment(["python"], undefined, ID)).toBe(false);
    expect(carriesDeployment([], {}, ID)).toBe(false);
  });

  it.each([
    [DEP],
    [`--deployment=${DEP}`],
    [`/srv/.baton/run/${DEP}/rank-0.marker.json`],
    [`name:${DEP} other`],
  ])("finds the id as a whole word in %s", (arg) => {
    expect(carriesDeployment(["prog", arg], undefined, ID)).toBe(true);
  });

  it.each([[`${DEP}2`], [`x${DEP}`], [`${DEP}.log`], [`my_${DEP}`], ["dep-abc12"]])(
    "does not take %s for the id",
    (arg) => {
      expect(carriesDeployment(["prog", arg], undefined, ID)).toBe(false);
    },
  );

  it("finds a whole-word occurrence after a partial one in the same argument", () => {
    expect(carriesDeployment([`${DEP}x,${DEP}`], undefined, ID)).toBe(true);
  });
});
