/**
 * bin/distCurrent.mjs on a folder of its own (src/ files and a dist/ stamped with their
 * digest): a check that finds dist/ current notes what stat says of src/, and the next check
 * trusts that note instead of reading every file while stat says the same; any write to a
 * file, even of as many bytes with its modification time put back, makes stat differ, so an
 * edited src/ is never taken for the one dist/ was compiled from.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";

interface DistCurrent {
  DIGEST_FILE: string;
  CHECKED_FILE: string;
  sourcesDigest(root: string): string;
  sourcesStat(root: string, now?: number): { stat: string; settled: boolean };
  distIsCurrent(root: string, now?: number): boolean;
}

const { DIGEST_FILE, CHECKED_FILE, sourcesDigest, sourcesStat, distIsCurrent } = (await import(
  pathToFileURL(join(ROOT, "bin/distCurrent.mjs")).href
)) as DistCurrent;

/** Long enough after the files were written for a note to vouch for them. */
const later = () => Date.now() + 10_000;

let root = "";
const note = () => join(root, "dist", CHECKED_FILE);
const source = () => join(root, "src", "cli", "main.ts");

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "baton-dist-current-"));
  mkdirSync(join(root, "src", "cli"), { recursive: true });
  mkdirSync(join(root, "dist"));
  writeFileSync(join(root, "src", "index.ts"), "export const answer = 42;\n");
  writeFileSync(source(), "export const main = () => 0;\n");
  writeFileSync(join(root, "dist", DIGEST_FILE), `${sourcesDigest(root)}\n`);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("distIsCurrent", () => {
  it("notes what stat says of src/ once it found the digest current, and trusts the note while stat says the same", () => {
    expect(distIsCurrent(root, later())).toBe(true);
    expect(readFileSync(note(), "utf8")).toBe(`${sourcesStat(root).stat} ${sourcesDigest(root)}\n`);
    // The note, not the files, decides: one that vouches for the stat of an edited src/ is
    // believed (what only a forged note can do), so the files were not read.
    writeFileSync(source(), "export const main = () => 1;\n");
    expect(distIsCurrent(root, later())).toBe(false);
    const digest = readFileSync(join(root, "dist", DIGEST_FILE), "utf8").trim();
    writeFileSync(note(), `${sourcesStat(root).stat} ${digest}\n`);
    expect(distIsCurrent(root, later())).toBe(true);
  });

  it("an edit of as many bytes, with a new modification time, makes dist/ not current despite the note", () => {
    expect(distIsCurrent(root, later())).toBe(true);
    expect(existsSync(note())).toBe(true);
    const before = statSync(source());
    writeFileSync(source(), "export const main = () => 9;\n");
    const after = new Date(before.mtimeMs + 5_000);
    utimesSync(source(), after, after);
    expect(statSync(source()).size).toBe(before.size);
    expect(distIsCurrent(root, later())).toBe(false);
    expect(distIsCurrent(root, later() + 60_000)).toBe(false);
  });

  it("an edit of as many bytes with its modification time put back (touch -d, cp -p) still makes dist/ not current", () => {
    // A whole second, which utimes puts back exactly (a copy's time, say).
    const copied = Math.floor(Date.now() / 1000) - 3_600;
    utimesSync(source(), copied, copied);
    expect(distIsCurrent(root, later())).toBe(true);
    const before = statSync(source());
    writeFileSync(source(), "export const main = () => 9;\n");
    utimesSync(source(), copied, copied);
    expect(statSync(source())).toMatchObject({ size: before.size, mtimeMs: before.mtimeMs });
    expect(distIsCurrent(root, later())).toBe(false);
  });

  it("a file added or removed makes dist/ not current despite the note", () => {
    expect(distIsCurrent(root, later())).toBe(true);
    writeFileSync(join(root, "src", "added.ts"), "");
    expect(distIsCurrent(root, later())).toBe(false);
    rmSync(join(root, "src", "added.ts"));
    expect(distIsCurrent(root, later())).toBe(true);
    rmSync(join(root, "src", "index.ts"));
    expect(distIsCurrent(root, later())).toBe(false);
  });

  it("leaves no note while a file changed within the last 2 s, which a later write could share its times with", () => {
    expect(sourcesStat(root).settled).toBe(false);
    expect(distIsCurrent(root)).toBe(true);
    expect(existsSync(note())).toBe(false);
    expect(distIsCurrent(root, later())).toBe(true);
    expect(existsSync(note())).toBe(true);
  });

  it("a rebuild's digest outdates the note", () => {
    expect(distIsCurrent(root, later())).toBe(true);
    writeFileSync(join(root, "dist", DIGEST_FILE), `${"0".repeat(64)}\n`);
    expect(distIsCurrent(root, later())).toBe(false);
  });
});
