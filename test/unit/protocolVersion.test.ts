import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  describeRange,
  negotiate,
  PROTOCOL,
  type ProtocolRange,
} from "../../src/transport/protocolVersion.ts";

describe("negotiate", () => {
  it.each([
    { ours: [1, 3], theirs: [2, 5], version: 3 },
    { ours: [2, 5], theirs: [1, 3], version: 3 },
    { ours: [1, 5], theirs: [2, 3], version: 3 },
    { ours: [1, 1], theirs: [1, 1], version: 1 },
    { ours: [1, 2], theirs: [2, 9], version: 2 },
    { ours: [1, 1], theirs: [2, 2], version: undefined },
    { ours: [4, 6], theirs: [1, 3], version: undefined },
  ] as { ours: ProtocolRange; theirs: ProtocolRange; version: number | undefined }[])(
    "$ours with $theirs gives $version",
    ({ ours, theirs, version }) => {
      expect(negotiate(ours, theirs)).toBe(version);
    },
  );

  it("agrees with itself on this build's range", () => {
    expect(negotiate(PROTOCOL, PROTOCOL)).toBe(PROTOCOL[1]);
  });

  it("gives the highest version inside both ranges, and undefined iff they are disjoint", () => {
    const range = fc
      .tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 20 }))
      .map(([a, b]): ProtocolRange => (a <= b ? [a, b] : [b, a]));
    const within = (v: number, [min, max]: ProtocolRange) => min <= v && v <= max;
    fc.assert(
      fc.property(range, range, (ours, theirs) => {
        const shared: number[] = [];
        for (let v = 1; v <= 20; v++) if (within(v, ours) && within(v, theirs)) shared.push(v);
        const version = negotiate(ours, theirs);
        if (shared.length === 0) {
          expect(version).toBeUndefined();
        } else {
          expect(version).toBe(Math.max(...shared));
          expect(within(version!, ours) && within(version!, theirs)).toBe(true);
        }
        expect(negotiate(theirs, ours)).toBe(version);
      }),
    );
  });
});

describe("describeRange", () => {
  it("shows a range as min..max, or one version alone", () => {
    expect(describeRange([1, 2])).toBe("1..2");
    expect(describeRange([3, 3])).toBe("3");
    expect(describeRange(PROTOCOL)).toBe("1..8");
  });
});
