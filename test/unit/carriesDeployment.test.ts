import { describe, expect, it } from "vitest";
import { carriesDeployment } from "../../src/machines/carriesDeployment.ts";

const DEP = "dep-abc123";

describe("carriesDeployment", () => {
  it("accepts the deployment in the environment, whatever the argv", () => {
    expect(carriesDeployment(["python", "train.py"], { BATON_DEPLOYMENT: DEP }, DEP)).toBe(true);
  });

  it("rejects another deployment's environment and an unreadable one", () => {
    expect(carriesDeployment(["python"], { BATON_DEPLOYMENT: "dep-other" }, DEP)).toBe(false);
    expect(carriesDeployment(["python"], undefined, DEP)).toBe(false);
    expect(carriesDeployment([], {}, DEP)).toBe(false);
  });

  it.each([
    [DEP],
    [`--deployment=${DEP}`],
    [`/srv/.baton/run/${DEP}/rank-0.marker.json`],
    [`name:${DEP} other`],
  ])("finds the id as a whole word in %s", (arg) => {
    expect(carriesDeployment(["prog", arg], undefined, DEP)).toBe(true);
  });

  it.each([[`${DEP}2`], [`x${DEP}`], [`${DEP}.log`], [`my_${DEP}`], ["dep-abc12"]])(
    "does not take %s for the id",
    (arg) => {
      expect(carriesDeployment(["prog", arg], undefined, DEP)).toBe(false);
    },
  );

  it("finds a whole-word occurrence after a partial one in the same argument", () => {
    expect(carriesDeployment([`${DEP}x,${DEP}`], undefined, DEP)).toBe(true);
  });
});
