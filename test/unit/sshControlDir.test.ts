import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeControlDir, sweepAbandonedControlDirs } from "../../src/runtime/sshControlDir.ts";
import { deadPid } from "../fixtures/deadPid.ts";

const parents: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      process.kill(child.pid, "SIGKILL");
    }
  }
  for (const parent of parents.splice(0)) rmSync(parent, { recursive: true, force: true });
});

function parentDir(): string {
  const parent = mkdtempSync(join(tmpdir(), "baton-control-dirs-"));
  parents.push(parent);
  return parent;
}

/** A stand-in for an ssh master: a live process whose argv names `controlPath`. */
async function fakeMaster(controlPath: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      "-e",
      "process.stdout.write('up'); setTimeout(() => {}, 60_000)",
      `ControlPath=${controlPath}`,
    ],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  children.push(child);
  await new Promise((resolve) => child.stdout?.once("data", resolve));
  return child;
}

function controlDir(parent: string, maker: number, files = ["master.log"]): string {
  const dir = join(parent, `baton-ssh-${maker}-Ab12Cd`);
  mkdirSync(dir, { mode: 0o700 });
  for (const file of files) writeFileSync(join(dir, file), "");
  return dir;
}

describe("ssh control dirs", () => {
  it("names a new dir after this process and makes it private", () => {
    const parent = parentDir();
    const dir = makeControlDir(parent);
    expect(dir).toMatch(new RegExp(`/baton-ssh-${process.pid}-[A-Za-z0-9]+$`));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it("removes a dir whose maker is gone, and keeps a living maker's and anything else", async () => {
    const parent = parentDir();
    const abandoned = controlDir(parent, await deadPid());
    const living = controlDir(parent, process.pid);
    const unrelated = join(parent, "baton-ssh-Xy12Zw");
    mkdirSync(unrelated);
    const fresh = makeControlDir(parent);
    expect(existsSync(abandoned)).toBe(false);
    expect(existsSync(living)).toBe(true);
    expect(existsSync(unrelated)).toBe(true);
    expect(existsSync(fresh)).toBe(true);
  });

  it("stops the master still serving an abandoned dir's socket before removing the dir", async () => {
    const parent = parentDir();
    const abandoned = controlDir(parent, await deadPid());
    const master = await fakeMaster(join(abandoned, "master"));
    const bystander = await fakeMaster(join(parent, "baton-ssh-1-Other", "master"));
    const ended = new Promise((resolve) => master.once("exit", (_, signal) => resolve(signal)));
    sweepAbandonedControlDirs(parent);
    expect(await ended).toBe("SIGTERM");
    expect(existsSync(abandoned)).toBe(false);
    expect(bystander.exitCode).toBeNull();
    expect(bystander.signalCode).toBeNull();
  });

  it("does nothing when the parent cannot be listed", () => {
    expect(() => sweepAbandonedControlDirs(join(parentDir(), "missing"))).not.toThrow();
  });
});
