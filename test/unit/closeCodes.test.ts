import { describe, expect, it } from "vitest";
import { CloseCode, describeClose } from "../../src/transport/closeCodes.ts";

describe("describeClose", () => {
  it("tells both a baton worker user and a library user which job module to give a refused worker", () => {
    const meaning = describeClose(CloseCode.codeMismatch);
    expect(meaning).toMatch(/^job module mismatch: /);
    expect(meaning).toContain("baton worker's --jobs");
    expect(meaning).toContain(
      "a localPool's or slurmPool's jobsModule (the module createEngine's jobs come from)",
    );
  });
});
