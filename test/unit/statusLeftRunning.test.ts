/**
 * `baton status`, in process, on an ended deployment whose outcome record names what its ranks
 * left running: the table says what baton stopped, worded as `baton launch` said it, and
 * `--json` carries the list; a record that names nothing says nothing of it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { statusCommand } from "../../src/cli/statusCommand.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { type LeftRunning, OUTCOME_FORMAT } from "../../src/rank/outcomeFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import { capturedOutput } from "../fixtures/capturedOutput.ts";

const dirs: string[] = [];

afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A state dir with one deployment that ended (`succeeded`), its record naming `leftRunning`. */
function succeeded(
  deployment: string,
  leftRunning: LeftRunning[] | undefined,
  status: "succeeded" | "reaped" = "succeeded",
): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-status-left-"));
  dirs.push(dir);
  const paths = deploymentPaths(dir, deployment);
  mkdirSync(paths.dir);
  const now = Date.now();
  writeFileSync(
    paths.outcome,
    encodeStateFile(OUTCOME_FORMAT, {
      deployment,
      launcher: { pid: 4242, token: "t" },
      worldSize: 2,
      argv: ["python3", "train.py"],
      startedAt: now - 60_000,
      ranks: [0, 1].map((rank) => ({
        rank,
        host: "local",
        pid: 4243 + rank,
        exit: { at: now - 2_000, code: 0 },
      })),
      ended: { at: now - 1_000, status, ...(leftRunning && { leftRunning }) },
    }),
  );
  return dir;
}

const LEFT: LeftRunning[] = [
  { pid: 4250, rank: 0, program: "sleep", outsideGroup: false },
  { pid: 4251, rank: 1, host: "ssh://alice@gpu-2", program: "python3", outsideGroup: true },
  { pid: 4252, program: "sleep", outsideGroup: true },
];

it("says what the ranks of an ended deployment left running and baton stopped, as baton launch did", async () => {
  const dir = succeeded("dep-leaky0000000", LEFT);
  const out = capturedOutput();
  expect(await statusCommand(["--state-dir", dir])).toBe(0);
  const lines = out.text.split("\n");
  expect(lines[0]).toMatch(/^dep-leaky0000000 {2}ended \(succeeded\) {2}world 2 {2}ran /);
  expect(lines[4]).toBe(
    "  baton stopped 3 processes they left running: pid 4250 (sleep) of rank 0; pid 4251 (python3) of rank 1 on ssh://alice@gpu-2, which had left its process group; pid 4252 (sleep), which had left its process group",
  );

  const json = capturedOutput();
  expect(await statusCommand(["--state-dir", dir, "--json"])).toBe(0);
  const [dep] = JSON.parse(json.text).deployments;
  expect(dep.ended.leftRunning).toEqual(LEFT);
});

it("says nothing of it when the record names nothing left running", async () => {
  const dir = succeeded("dep-tidy00000000", undefined);
  const out = capturedOutput();
  expect(await statusCommand(["--state-dir", dir])).toBe(0);
  expect(out.text).not.toContain("left running");
  const json = capturedOutput();
  expect(await statusCommand(["--state-dir", dir, "--json"])).toBe(0);
  expect(JSON.parse(json.text).deployments[0].ended.leftRunning).toEqual([]);
});

it("tells a reaped deployment whose reap stopped nothing its ranks left running from one whose reap did not record it", async () => {
  const none = succeeded("dep-reaped000000", [], "reaped");
  const out = capturedOutput();
  expect(await statusCommand(["--state-dir", none])).toBe(0);
  expect(out.text).not.toContain("left running");
  const json = capturedOutput();
  expect(await statusCommand(["--state-dir", none, "--json"])).toBe(0);
  expect(JSON.parse(json.text).deployments[0].ended.leftRunning).toEqual([]);

  // An older baton's reap recorded nothing of it: not "none".
  const older = succeeded("dep-reapedold000", undefined, "reaped");
  const said = capturedOutput();
  expect(await statusCommand(["--state-dir", older])).toBe(0);
  expect(said.text).toContain(
    "\n  what its ranks left running was not recorded (the reap that ended it was an older baton's)\n",
  );
  const unknown = capturedOutput();
  expect(await statusCommand(["--state-dir", older, "--json"])).toBe(0);
  expect(JSON.parse(unknown.text).deployments[0].ended.leftRunning).toBeNull();
});
