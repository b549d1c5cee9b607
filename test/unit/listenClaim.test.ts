import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { listenClaim } from "../../src/runtime/listenClaim.ts";

describe("listenClaim", () => {
  it("lets one run at a time hold a fixed address, in either form, until it gives it back", () => {
    for (const address of ["0.0.0.0:7000", "ws://127.0.0.1:7000", "ws://[::1]:7000/"]) {
      const claim = listenClaim(address);
      claim.claim("a");
      expect(() => claim.claim("b")).toThrow(ConfigError);
      expect(() => claim.claim("b")).toThrow(`listen ${address} is held by run a of this engine`);
      // Only the holder gives it back.
      claim.release("b");
      expect(() => claim.claim("b")).toThrow(ConfigError);
      claim.release("a");
      claim.claim("b");
    }
  });

  it("claims nothing for port 0 or no address: each run listens on a port of its own", () => {
    for (const address of ["127.0.0.1:0", "ws://[::1]:0/", "0.0.0.0:00", undefined]) {
      const claim = listenClaim(address);
      claim.claim("a");
      claim.claim("b");
    }
  });
});
