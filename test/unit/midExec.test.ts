/**
 * A process in the middle of an exec shows no arguments and an empty environment though it
 * runs (its new memory has neither yet): `midExec` tells it from a process running its exit, a
 * zombie or a kernel thread, and `readAfterExec` reads it again once the exec is over. The
 * windows below are those a loop of fork, exec and a reader of /proc recorded on Linux 6.18.
 */
import { describe, expect, it } from "vitest";
import { ENVIRONMENT_LOOKS, midExec, readAfterExec } from "../../src/runtime/midExec.ts";
import { parseStat } from "../../src/runtime/procStat.ts";

const PID = 4711;
/** `/proc/4711/stat` with the process's name, state letter, parent and flags. */
const stat = (comm: string, state: string, { ppid = 7, flags = 0x400000 } = {}) =>
  `${PID} (${comm}) ${state} ${ppid} ${PID} ${PID} 0 -1 ${flags} 96 0 0 0 0 0 0 0 20 0 1 0 123456`;
const EXITING = 0x400004;

interface Window {
  stat?: string;
  cmdline?: string;
  environ?: string;
}

/** Before the exec: the forked copy of its parent, `sh`. */
const FORKED: Window = {
  stat: stat("sh", "R"),
  cmdline: "sh\0-c\0sleep 30 & exit 0\0",
  environ: "RANK=0\0",
};
/** In the middle of the exec: running, named after the new program, its memory empty. */
const EXECING: Window = { stat: stat("sleep", "R"), cmdline: "", environ: "" };
/** After the exec. */
const SLEEPING: Window = {
  stat: stat("sleep", "S"),
  cmdline: "sleep\u000030\u0000",
  environ: "RANK=0\0",
};
/** Running its exit: its memory released, not yet a zombie. */
const EXITING_NOW: Window = {
  stat: stat("sleep", "R", { flags: EXITING }),
  cmdline: "",
  environ: undefined,
};
const ZOMBIE: Window = {
  stat: stat("sleep", "Z", { flags: EXITING }),
  cmdline: "",
  environ: undefined,
};

/** A process that is in `windows[n]` from its nth pause on; the pauses it took. */
function process(windows: readonly Window[]) {
  let at = 0;
  return {
    read: (file: keyof Window) => windows[Math.min(at, windows.length - 1)]?.[file],
    pause: () => {
      at++;
    },
    get pauses() {
      return at;
    },
  };
}

describe("midExec", () => {
  it("is a live process that is not exiting, not a kernel thread, with no arguments", () => {
    expect(midExec(parseStat(PID, stat("sleep", "R")), "")).toBe(true);
    expect(midExec(parseStat(PID, stat("sleep", "D")), "")).toBe(true);
    expect(midExec(parseStat(PID, stat("sleep", "R")), "sleep\u0000")).toBe(false);
    expect(midExec(parseStat(PID, stat("sleep", "R", { flags: EXITING })), "")).toBe(false);
    expect(midExec(parseStat(PID, stat("sleep", "Z")), "")).toBe(false);
    expect(midExec(parseStat(PID, stat("kworker/0:1", "I", { ppid: 2 })), "")).toBe(false);
    expect(
      midExec(parseStat(2, stat("kthreadd", "S", { ppid: 0 }).replace(`${PID} `, "2 ")), ""),
    ).toBe(false);
  });
});

describe("readAfterExec", () => {
  it("reads the arguments and environment of the program a process mid-exec became", () => {
    for (const file of ["cmdline", "environ"] as const) {
      const proc = process([EXECING, EXECING, SLEEPING]);
      expect(readAfterExec(PID, file, proc.read, proc.pause)).toBe(SLEEPING[file]);
      expect(proc.pauses).toBe(2);
    }
  });

  it("reads once, without a pause, a process that shows its arguments, before or after its exec", () => {
    for (const window of [FORKED, SLEEPING]) {
      const proc = process([window]);
      expect(readAfterExec(PID, "cmdline", proc.read, proc.pause)).toBe(window.cmdline);
      expect(proc.pauses).toBe(0);
    }
  });

  it("reads the environment the exec is writing once it is written", () => {
    // The arguments are written first: for a while they read, and the environment does not.
    const writing: Window = { ...SLEEPING, environ: "" };
    const proc = process([writing, writing, SLEEPING]);
    expect(readAfterExec(PID, "environ", proc.read, proc.pause)).toBe(SLEEPING.environ);
    expect(proc.pauses).toBe(2);
  });

  it("takes an environment that stays empty beside arguments for empty, after a few looks", () => {
    const proc = process([{ ...SLEEPING, environ: "" }]);
    expect(readAfterExec(PID, "environ", proc.read, proc.pause)).toBe("");
    expect(proc.pauses).toBe(ENVIRONMENT_LOOKS);
  });

  it("does not wait for a process that reads empty for another reason", () => {
    for (const [window, file] of [
      [EXITING_NOW, "cmdline"],
      [ZOMBIE, "cmdline"],
      [{}, "cmdline"],
      [{ ...EXITING_NOW, environ: "" }, "environ"],
    ] as const) {
      const proc = process([window]);
      expect(readAfterExec(PID, file, proc.read, proc.pause)).toBe(window[file]);
      expect(proc.pauses).toBe(0);
    }
  });

  it("reads what the process shows once it ends mid-exec", () => {
    const proc = process([EXECING, EXITING_NOW]);
    expect(readAfterExec(PID, "cmdline", proc.read, proc.pause)).toBe("");
    expect(proc.pauses).toBe(1);
  });

  it("returns the arguments it saw once the exec was over, of a process that at once execs again", () => {
    // A shell that execs itself: between two reads of the same look it may be in its next exec.
    const NEXT_EXEC: Window = { stat: stat("sh", "R"), cmdline: "", environ: "" };
    const RAN: Window = { stat: stat("sh", "R"), cmdline: "sh\0-c\0exec sh\0", environ: "A=1\0" };
    /** Each file's reads, in order: the last one read again from then on. */
    const script =
      (reads: Record<keyof Window, Window[]>) =>
      (file: keyof Window): string | undefined => {
        const windows = reads[file];
        return (windows.length > 1 ? windows.shift() : windows[0])?.[file];
      };
    const running = [RAN];
    expect(
      readAfterExec(
        PID,
        "cmdline",
        script({ stat: running, cmdline: [NEXT_EXEC, RAN, NEXT_EXEC], environ: running }),
        () => {},
      ),
    ).toBe(RAN.cmdline);
    // Its environment, read empty past the looks for one being written, as the next exec begins.
    let pauses = 0;
    const environ = readAfterExec(
      PID,
      "environ",
      script({
        stat: running,
        cmdline: [RAN, RAN, RAN, RAN, NEXT_EXEC, RAN],
        environ: [NEXT_EXEC, NEXT_EXEC, NEXT_EXEC, NEXT_EXEC, NEXT_EXEC, RAN],
      }),
      () => pauses++,
    );
    expect(environ).toBe(RAN.environ);
    expect(pauses).toBe(ENVIRONMENT_LOOKS + 1);
  });

  it("stops looking after `looks` pauses at an exec that does not end", () => {
    const proc = process([EXECING]);
    expect(readAfterExec(PID, "cmdline", proc.read, proc.pause, 5)).toBe("");
    expect(proc.pauses).toBe(5);
  });
});
