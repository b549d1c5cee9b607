import { describe, expect, it } from "vitest";
import { insteadOfRealWork } from "../../src/sim/insteadOfRealWork.ts";
import { realWorkKind } from "../../src/sim/realWorkKind.ts";
import { describeRealWork } from "../../src/sim/realWorkWatch.ts";

/** The opening words of each piece of advice `insteadOfRealWork` gives. */
const SLEEP = "Wait with the simulation tools' sleep instead";
const READ_SYNC = "Read the file synchronously instead (readFileSync";
const IMPORT = "If it is a dynamic import()";
const STAND_IN = "Stand in for it instead";

describe("one classification of real work, in the words of each consumer", () => {
  it.each([
    ["Timeout", "timer", "a real timer (setTimeout or setInterval)", SLEEP],
    ["FSREQCALLBACK", "fileRead", "real file I/O (FSREQCALLBACK)", READ_SYNC],
    ["FSREQPROMISE", "fileRead", "real file I/O (FSREQPROMISE)", READ_SYNC],
    ["FILEHANDLE", "fileRead", "real file I/O (FILEHANDLE)", READ_SYNC],
    ["FILEHANDLECLOSEREQ", "fileRead", "real file I/O (FILEHANDLECLOSEREQ)", READ_SYNC],
    // A watcher is file I/O to name, but no synchronous read gives what it waits for.
    ["FSEVENTWRAP", "fileWatch", "real file I/O (FSEVENTWRAP)", STAND_IN],
    ["STATWATCHER", "fileWatch", "real file I/O (STATWATCHER)", STAND_IN],
    ["TCPCONNECTWRAP", "network", "real network I/O (TCPCONNECTWRAP)", STAND_IN],
    ["GETADDRINFOREQWRAP", "network", "real network I/O (GETADDRINFOREQWRAP)", STAND_IN],
    ["HTTPCLIENTREQUEST", "network", "real network I/O (HTTPCLIENTREQUEST)", STAND_IN],
    ["TLSWRAP", "network", "real network I/O (TLSWRAP)", STAND_IN],
    ["MESSAGEPORT", "moduleLoad", "real asynchronous work (MESSAGEPORT)", IMPORT],
    ["PROCESSWRAP", "other", "real asynchronous work (PROCESSWRAP)", STAND_IN],
    ["RANDOMBYTESREQUEST", "other", "real asynchronous work (RANDOMBYTESREQUEST)", STAND_IN],
  ])("%s is %s: %s", (type, kind, described, advice) => {
    expect(realWorkKind(type)).toBe(kind);
    expect(describeRealWork(type)).toBe(described);
    expect(insteadOfRealWork(type).startsWith(advice)).toBe(true);
  });
});
