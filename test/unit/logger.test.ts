/**
 * baton's logger: pretty lines on stderr when asked (pino-pretty, required only then), JSON
 * lines otherwise. Each case runs the logger in a child Node (its stderr is file descriptor
 * 2), which spawnSync stops with SIGKILL if it outlives its timeout.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const LOGGER = new URL("../../src/runtime/logger.ts", import.meta.url).pathname;

/** What `createLogger(options)` writes on stderr for one info line, in a child process. */
function stderrOf(options: object): string {
  const script = `const { createLogger } = await import(${JSON.stringify(LOGGER)});
createLogger(${JSON.stringify(options)}).info({ jobs: 52 }, "run started");`;
  const result = spawnSync(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", script],
    { encoding: "utf8", timeout: 30_000, killSignal: "SIGKILL" },
  );
  expect(result.status, result.stderr).toBe(0);
  return result.stderr;
}

describe("createLogger", () => {
  it("writes pretty lines with pretty: true", () => {
    expect(stderrOf({ level: "info", pretty: true })).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: run started\n {4}jobs: 52\n$/,
    );
  });

  it("writes JSON lines with pretty: false", () => {
    const line = JSON.parse(stderrOf({ level: "info", pretty: false }));
    expect(line).toMatchObject({ level: 30, msg: "run started", jobs: 52 });
  });
});
