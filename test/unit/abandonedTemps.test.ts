import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeAbandonedTemps } from "../../src/runtime/abandonedTemps.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

const STALE_MS = 60_000;

/** The pid of a live process other than this one, stopped when the test ends. */
async function livePid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  children.push(child);
  await new Promise((resolve) => child.once("spawn", resolve));
  return child.pid as number;
}

/** Writes `name` in `dir`, last written `ageMs` ago. */
function fileAged(dir: string, name: string, ageMs: number): void {
  const path = join(dir, name);
  writeFileSync(path, "{");
  const at = new Date(Date.now() - ageMs);
  utimesSync(path, at, at);
}

describe("removeAbandonedTemps", () => {
  it("removes the temp files of writers gone from this host that nobody wrote for the stale time, and only those", async () => {
    const dir = tempDir();
    const dead = await deadPid();
    const live = await livePid();
    const old = STALE_MS + 5_000;
    fileAged(dir, `.graph-0123456789abcdef.lock.${dead}.0123456789ab.tmp`, old);
    fileAged(dir, `.format.json.${dead}.tmp`, old); // as remoteFiles names it
    fileAged(dir, `.format.json.${process.pid}.0123456789ab.tmp`, old); // a container's earlier run
    fileAged(dir, `.format.json.${dead}.fedcba987654.tmp`, 1_000); // being written, seen from afar
    fileAged(dir, `.format.json.${live}.0123456789ab.tmp`, old); // a writer running here
    fileAged(dir, "format.json", old);
    // A folder named as a temp file is nobody's write: it stays, and the others go all the same.
    const folder = `.format.json.${dead}.aaaaaaaaaaaa.tmp`;
    mkdirSync(join(dir, folder));
    utimesSync(join(dir, folder), new Date(Date.now() - old), new Date(Date.now() - old));
    const removed = await removeAbandonedTemps(dir, { files: nodeFiles(), staleMs: STALE_MS });
    expect(removed.sort()).toEqual(
      [
        `.graph-0123456789abcdef.lock.${dead}.0123456789ab.tmp`,
        `.format.json.${dead}.tmp`,
        `.format.json.${process.pid}.0123456789ab.tmp`,
      ].sort(),
    );
    expect(readdirSync(dir).sort()).toEqual(
      [
        `.format.json.${dead}.fedcba987654.tmp`,
        `.format.json.${live}.0123456789ab.tmp`,
        folder,
        "format.json",
      ].sort(),
    );
  });

  it("only those of the files `of` accepts, and says which it removed", async () => {
    const dir = tempDir();
    const dead = await deadPid();
    const old = STALE_MS + 5_000;
    const ours = `.format.json.${dead}.0123456789ab.tmp`;
    const others = `.notes.txt.${dead}.0123456789ab.tmp`;
    fileAged(dir, ours, old);
    fileAged(dir, others, old);
    const said: { fields: object; message: string }[] = [];
    const logger = { info: (fields: object, message: string) => said.push({ fields, message }) };
    const removed = await removeAbandonedTemps(dir, {
      files: nodeFiles(),
      staleMs: STALE_MS,
      of: (target) => target === "format.json",
      logger,
    });
    expect(removed).toEqual([ours]);
    expect(existsSync(join(dir, others))).toBe(true);
    expect(said).toEqual([
      {
        fields: { dir, files: [ours] },
        message:
          "removed temp files that writers killed while writing left behind (their processes are gone, and nobody wrote them for over 60 s)",
      },
    ]);
    // Nothing left to remove: nothing said, and a folder that is not there holds none.
    expect(
      await removeAbandonedTemps(dir, {
        files: nodeFiles(),
        staleMs: STALE_MS,
        of: (target) => target === "format.json",
        logger,
      }),
    ).toEqual([]);
    expect(
      await removeAbandonedTemps(join(dir, "none"), { files: nodeFiles(), staleMs: STALE_MS }),
    ).toEqual([]);
    expect(said).toHaveLength(1);
  });
});
