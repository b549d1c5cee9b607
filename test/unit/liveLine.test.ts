import { describe, expect, it } from "vitest";
import { LiveLine } from "../../src/cli/liveLine.ts";

/** A terminal of `columns` that keeps what is written to it. */
function terminal(columns = 80) {
  const written: string[] = [];
  const out = {
    columns,
    write: (text: string) => written.push(text),
  } as unknown as NodeJS.WriteStream;
  return { out, written };
}

describe("LiveLine", () => {
  it("redraws one line in place, cut to the terminal's width", () => {
    const { out, written } = terminal(10);
    const line = new LiveLine(out);
    line.draw("1/3 done and more");
    line.draw("2/3");
    expect(written).toEqual(["\r\x1b[2K1/3 done ", "\r\x1b[2K2/3"]);
  });

  it("writes nothing when the line it would draw is the one shown", () => {
    const { out, written } = terminal(10);
    const line = new LiveLine(out);
    line.draw("stopping: 2 exited");
    // Cut to the width, a change past it is no change on the terminal either.
    line.draw("stopping: 2 exited · 1.5 s");
    line.draw("stopping");
    expect(written).toEqual(["\r\x1b[2Kstopping:", "\r\x1b[2Kstopping"]);
  });

  it("puts what others write to its stream above itself, and waits out a line they leave open", () => {
    const { out, written } = terminal();
    const line = new LiveLine(out);
    const unadopt = line.adopt([out]);
    line.draw("3/10 done");
    out.write("printed by a handler\n");
    out.write("half");
    line.draw("4/10 done");
    unadopt();
    out.write("after\n");
    expect(written).toEqual([
      "\r\x1b[2K3/10 done",
      "\r\x1b[2K",
      "printed by a handler\n",
      "\r\x1b[2K3/10 done",
      "\r\x1b[2K",
      "half",
      "\n4/10 done",
      "after\n",
    ]);
  });

  it("prints whole lines above itself and draws itself again; clear leaves nothing", () => {
    const { out, written } = terminal();
    const line = new LiveLine(out);
    line.print("before anything\n");
    line.draw("live");
    line.print("a line\n");
    line.clear();
    line.clear();
    expect(written).toEqual([
      "before anything\n",
      "\r\x1b[2Klive",
      "\r\x1b[2K",
      "a line\n",
      "\r\x1b[2Klive",
      "\r\x1b[2K",
    ]);
  });

  it("draws several lines, each cut to the width, and erases them all from the last up", () => {
    const { out, written } = terminal(10);
    const line = new LiveLine(out);
    line.draw("3/10 done and more\n  fetch 3f2a9c: 2/5");
    line.draw("4/10 done");
    line.print("a line\n");
    line.clear();
    expect(written).toEqual([
      "\r\x1b[2K3/10 done\n  fetch 3",
      // Both lines go, the cursor back where the first began, before the one line is drawn.
      "\r\x1b[2K\x1b[1A\x1b[2K4/10 done",
      "\r\x1b[2K",
      "a line\n",
      "\r\x1b[2K4/10 done",
      "\r\x1b[2K",
    ]);
  });
});
