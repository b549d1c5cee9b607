/**
 * `remoteFiles`' exclusive create, and its atomic write beside a temp file a killed creator
 * left, their scripts run by this machine's `/bin/sh` in place of a remote one (the ssh
 * transport is `sshRanks.test.ts`'s): a host whose stdin can be held halfway shows what a
 * reader sees while the data is still arriving.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { remoteFiles } from "../../src/runtime/remoteFiles.ts";
import type { RemoteResult, SshHost, SshRunOptions } from "../../src/runtime/sshHost.ts";

/** The shells started, each killed by its pid after its test if it still runs. */
const shells: ChildProcess[] = [];

/**
 * A host that runs each script with the local `/bin/sh`, `prelude` first. With `holdHalfway`,
 * only the first half of a call's stdin goes in until the promise resolves.
 */
function localHost(prelude = "", holdHalfway?: { reached(): void; until: Promise<void> }): SshHost {
  return {
    target: {
      kind: "ssh",
      user: "test",
      host: "localhost",
      port: undefined,
      spec: "ssh://test@localhost",
    },
    async run(script: string, options: SshRunOptions = {}): Promise<RemoteResult> {
      const shell = spawn("/bin/sh", ["-c", `${prelude}\n${script}`], { stdio: "pipe" });
      shells.push(shell);
      const stdout: Buffer[] = [];
      let stderr = "";
      shell.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
      shell.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const exited = new Promise<number>((resolve) =>
        shell.on("close", (code) => resolve(code ?? -1)),
      );
      // A script that answers before it reads its stdin (the name is taken) closes it: EPIPE.
      shell.stdin.on("error", () => {});
      const input = Buffer.from(options.input ?? "");
      if (holdHalfway === undefined) shell.stdin.end(input);
      else {
        shell.stdin.write(input.subarray(0, input.length / 2));
        holdHalfway.reached();
        await holdHalfway.until;
        shell.stdin.end(input.subarray(input.length / 2));
      }
      return { code: await exited, stdout: Buffer.concat(stdout), stderr };
    },
    sessionArgv: (script) => ["/bin/sh", "-c", script],
    close: async () => {},
  };
}

/** What holds a call's stdin halfway: `halfway` once it is, until `release()`. */
function holdHalfway() {
  let reached = () => {};
  const halfway = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let release = () => {};
  const until = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { reached, until, halfway, release };
}

/** The file's text, or undefined once it is gone. */
function textOf(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

describe("remoteFiles' exclusive create and a temp file linked to its file", () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "baton-remote-files-"));
  });

  afterEach(async () => {
    for (const shell of shells.splice(0)) {
      if (shell.exitCode === null && shell.signalCode === null) process.kill(shell.pid!, "SIGKILL");
    }
    await rm(dir, { recursive: true, force: true });
  });

  it("shows no file while its data is still arriving, then the whole file, and no temp file", async () => {
    const held = holdHalfway();
    const files = remoteFiles(localHost("", held));
    const path = join(dir, "run", "lease.json");
    const data = '{"format":"baton.lease/1","pid":4242}\n';
    const creating = files.createExclusive(path, data);
    await held.halfway;
    // The script is reading its stdin into a file by now: the temp file, not the lease.
    while (!existsSync(join(dir, "run")) || readdirSync(join(dir, "run")).length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(existsSync(path)).toBe(false);
    held.release();
    expect(await creating).toBe(true);
    expect(readFileSync(path, "utf8")).toBe(data);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, "run"))).toEqual(["lease.json"]);
  });

  it("writes a file atomically without emptying it through a temp file a killed creator left linked to it", async () => {
    const path = join(dir, "lease.json");
    const held = holdHalfway();
    // A creator killed between its link and its unlink, in a shell with this script's pid.
    const prelude = `printf old >'${path}'; ln '${path}' '${dir}/.lease.json.'$$.tmp`;
    const data = "the new lease";
    const writing = remoteFiles(localHost(prelude, held)).writeAtomic(path, data);
    await held.halfway;
    // Until the script's temp file holds the half of the data sent so far (a fixed pause read
    // the lease before a loaded machine's shell had run the prelude that writes it).
    const half = Buffer.from(data)
      .subarray(0, data.length / 2)
      .toString();
    const tempHolds = (text: string) =>
      readdirSync(dir).some((name) => {
        if (!/^\.lease\.json\.\d+\.tmp$/.test(name)) return false;
        // The prelude's link, which the script removes first, may be gone by now.
        return textOf(join(dir, name)) === text;
      });
    while (!tempHolds(half)) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(readFileSync(path, "utf8")).toBe("old");
    held.release();
    await writing;
    expect(readFileSync(path, "utf8")).toBe("the new lease");
  });

  it("syncs a file it creates before its link, unless not durable", async () => {
    const synced = join(dir, "synced");
    // `sync` notes what it was asked to sync instead.
    const files = remoteFiles(localHost(`sync() { printf '%s\\n' "$1" >>'${synced}'; }`));
    const lease = join(dir, "lease");
    expect(await files.createExclusive(lease, "held", 0o600, { durable: false })).toBe(true);
    expect(readFileSync(lease, "utf8")).toBe("held");
    expect(existsSync(synced)).toBe(false);
    expect(await files.createExclusive(join(dir, "secret"), "kept")).toBe(true);
    expect(readFileSync(synced, "utf8")).toMatch(/\/\.secret\.\d+\.tmp\n$/);
  });

  it("creates a file once of two callers at once, never over one, and leaves no temp file", async () => {
    const files = remoteFiles(localHost());
    const path = join(dir, "claim.json");
    const created = await Promise.all(
      ["first", "second"].map((who) => files.createExclusive(path, who)),
    );
    expect(created.filter(Boolean)).toHaveLength(1);
    expect(readFileSync(path, "utf8")).toBe(created[0] ? "first" : "second");
    expect(await files.createExclusive(path, "third", 0o644)).toBe(false);
    expect(readFileSync(path, "utf8")).toBe(created[0] ? "first" : "second");
    expect(readdirSync(dir)).toEqual(["claim.json"]);
  });

  it("creates the file under noclobber and then writes it where link fails (no hard links)", async () => {
    // A shell function stands in for the `link` utility, as vfat answers it.
    const files = remoteFiles(
      localHost('link() { echo "link: Operation not permitted" >&2; return 1; }'),
    );
    const path = join(dir, "marker.json");
    expect(await files.createExclusive(path, '{"format":1}\n', 0o644)).toBe(true);
    expect(readFileSync(path, "utf8")).toBe('{"format":1}\n');
    expect(statSync(path).mode & 0o777).toBe(0o644);
    expect(await files.createExclusive(path, "again")).toBe(false);
    expect(readdirSync(dir)).toEqual(["marker.json"]);
  });

  it("takes a link that made the name but failed (NFS sends a call whose reply was lost again) as made", async () => {
    const files = remoteFiles(
      localHost('link() { command link "$@"; echo "link: File exists" >&2; return 1; }'),
    );
    const path = join(dir, "lease.json");
    expect(await files.createExclusive(path, "mine")).toBe(true);
    expect(await files.createExclusive(path, "late")).toBe(false);
    expect(readFileSync(path, "utf8")).toBe("mine");
    expect(readdirSync(dir)).toEqual(["lease.json"]);
  });

  it("leaves neither the file nor a temp file when the data cannot be written, and says why", async () => {
    // Files that may hold no byte (ulimit -f 0, SIGXFSZ ignored): EFBIG, as a full disk's ENOSPC.
    const files = remoteFiles(localHost("trap '' XFSZ; ulimit -f 0"));
    const path = join(dir, "graph.lock");
    await expect(files.createExclusive(path, "held")).rejects.toThrow(
      new RegExp(`cannot create ${path} \\(exit 1\\): .*(File too large|too large)`),
    );
    expect(readdirSync(dir)).toEqual([]);
  });
});
