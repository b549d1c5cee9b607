import { access, open } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ConfigError } from "../errors.ts";
import { type AbandonedTempsLogger, removeAbandonedTemps } from "./abandonedTemps.ts";
import { errnoReason } from "./errnoReason.ts";
import { isPermissionDenied } from "./fileOwner.ts";
import { nodeEntropy } from "./nodeEntropy.ts";
import { nodeFiles } from "./nodeFiles.ts";
import { permissionAdvice } from "./permissionAdvice.ts";
import type { Entropy, Files } from "./ports.ts";
import { runFileStem } from "./runFiles.ts";

/** Bytes in a run secret written by `writeSecretFile`. */
const SECRET_BYTES = 32;
/** The shortest secret `readSecret` accepts: anything shorter is guessable. */
const MIN_SECRET_BYTES = 16;
/**
 * A temp file of a kept secret nobody wrote for this long, whose writer is gone from this
 * host, was left by a run killed while it made the secret (as long as a graph lock's
 * `LOCK_STALE_MS`: a secret on a folder shared with other hosts may be made from there).
 */
const KEPT_SECRET_STALE_MS = 60_000;
/** The environment variable a worker reads its secret from when no file is given. */
export const SECRET_ENV = "BATON_SECRET";

/**
 * Writes a fresh run secret (32 random bytes, as hex) to a new file in `dir`, atomically and
 * with mode 0600, for workers started with `--secret-file`. The file is named after this
 * process and host (`run-<hex>-<pid>@<host>.secret`, see `sweepAbandonedRunFiles`). The
 * secret is returned as bytes, ready for the coordinator's HMAC checks; it never appears in
 * a log or an error.
 *
 * @example
 * ```ts
 * const { path, secret } = await writeSecretFile(".baton/run");
 * // start workers with: baton worker --connect ws://HOST:PORT --secret-file <path> --jobs jobs.ts
 * ```
 */
export async function writeSecretFile(
  dir: string,
  ports: { files?: Files; entropy?: Entropy } = {},
): Promise<{ path: string; secret: Uint8Array }> {
  const files = ports.files ?? nodeFiles();
  const entropy = ports.entropy ?? nodeEntropy();
  const secret = entropy.bytes(SECRET_BYTES);
  const path = join(dir, `${runFileStem(entropy.bytes(6))}.secret`);
  await files.writeAtomic(path, `${Buffer.from(secret).toString("hex")}\n`, 0o600);
  return { path, secret };
}

/**
 * The secret kept in the file at `path` for run after run (an operator's `baton run
 * --secret-file`): read as `readSecret` reads it, or, when nothing is there, made first (32
 * random bytes as hex, mode 0600, parent folders as needed; `created` is then true). Workers
 * given the same file join every run that keeps it, so a worker started with `--retry-for`
 * outlives a coordinator that is started again. Of runs that make it at once, one makes it
 * and the others read it: it is never seen half written, so an empty file is refused at once.
 * The temp files of it that a run killed while making it left beside it (a second name of the
 * secret, or one never linked) are removed first (`removeAbandonedTemps`: a writer gone from
 * this host, untouched for {@link KEPT_SECRET_STALE_MS}), and `logger` told which. A sweep
 * that fails (a folder this user may not list, an I/O error) is a warning to `logger` (without
 * one, a process warning) saying why, and the secret is read all the same; only a folder that
 * is not there, or is another user's that this user may not list, is passed over quietly.
 *
 * @example
 * ```ts
 * const { secret, created } = await keptSecret("/etc/baton/cluster.secret");
 * ```
 */
export async function keptSecret(
  path: string,
  ports: { files?: Files; entropy?: Entropy; logger?: KeptSecretLogger } = {},
): Promise<{ secret: Uint8Array; created: boolean }> {
  const files = ports.files ?? nodeFiles();
  const entropy = ports.entropy ?? nodeEntropy();
  const name = basename(path);
  await removeAbandonedTemps(dirname(path), {
    files,
    staleMs: KEPT_SECRET_STALE_MS,
    of: (target) => target === name,
    logger: ports.logger,
  }).catch((error: unknown) => sweepFailed(path, error, files, ports.logger));
  const hex = Buffer.from(entropy.bytes(SECRET_BYTES)).toString("hex");
  // The file appears whole (`Files.createExclusive`): one found empty was made so (`touch`).
  const created = await files.createExclusive(path, `${hex}\n`, 0o600);
  return { secret: await readSecret({ secretFile: path }), created };
}

/** The logger `keptSecret` tells what its sweep removed, and why a sweep failed. */
export interface KeptSecretLogger extends AbandonedTempsLogger {
  warn(fields: object, message: string): void;
}

/**
 * What `keptSecret` makes of `error`, the failure of its sweep of the temp files beside the
 * secret file `path`. The sweep is housekeeping: what the run needs is the secret, read right
 * after (and a folder that cannot give it is a `ConfigError` then), and what a failed sweep
 * leaves is at most 0600 temp files of the secret, so it is a warning, never the run's end.
 * Quiet only where there is nothing of this user's to sweep: no folder (`list` answers a
 * missing one with no names; a file in its place, `ENOTDIR`, is for the create or the read to
 * say), or another user's folder this user may not list (an operator's mode 711 folder holding
 * a secret made for this user: who may not list it may not write in it either, as a rule, so
 * no run of this user's left temps there). Anything else (this user's own folder it may not
 * list, an `EIO`, a read-only file system refusing a removal) says what failed, where, and
 * that the secret is read as it is.
 */
async function sweepFailed(
  path: string,
  error: unknown,
  files: Files,
  logger: KeptSecretLogger | undefined,
): Promise<void> {
  const { code, syscall, path: where = dirname(path) } = error as NodeJS.ErrnoException;
  if (code === "ENOTDIR") return;
  const denied = isPermissionDenied(error);
  if (denied && (await files.owner(dirname(path)).catch(() => undefined))?.self === false) return;
  const reason = denied ? permissionAdvice(syscall, where) : errnoReason(error);
  const message = `could not remove the temp files that runs killed while making the secret file ${path} left beside it (${where}: ${reason}); any there stay, and the secret is read as it is`;
  if (logger === undefined) process.emitWarning(message);
  else logger.warn({ secretFile: path, code }, message);
}

/** How long `readSecret` waits for a secret file that does not exist yet, and what it says. */
export interface SecretFileWait {
  ms: number;
  /** The wait as the user gave it, for the messages: "1h (--retry-for)". */
  as: string;
  /** Told once, when the file is first found missing. */
  said: (message: string) => void;
}

/** How often a secret file waited for is looked for. */
const SECRET_FILE_POLL_MS = 200;

/**
 * Reads a worker's run secret from `secretFile` (hex; the file must be private to its owner,
 * mode 0600 or stricter) or, without a file, from `BATON_SECRET` in `env` (hex). Errors
 * name the file or the variable, never what it holds. With `wait`, a file that does not exist
 * yet (the run that makes it not started) is waited for, said once.
 *
 * @example
 * ```ts
 * const secret = await readSecret({ secretFile: "/run/baton/run-3f2a.secret" });
 * const fromEnv = await readSecret({ env: process.env }); // BATON_SECRET
 * const later = await readSecret({
 *   secretFile: "/shared/cluster.secret",
 *   wait: { ms: 3_600_000, as: "1h (--retry-for)", said: console.error },
 * });
 * ```
 */
export async function readSecret(source: {
  secretFile?: string;
  env?: Readonly<Record<string, string | undefined>>;
  wait?: SecretFileWait | undefined;
}): Promise<Uint8Array> {
  const { secretFile, wait } = source;
  if (secretFile !== undefined) {
    const appeared = wait === undefined || (await untilExists(secretFile, wait));
    if (!appeared) {
      throw new ConfigError(
        `gave up: secret file ${secretFile} did not appear within ${wait.as}; start the run that makes it (baton run --secret-file ${secretFile}), or pass the path of the file the current run printed`,
      );
    }
    const text = await readPrivateFile(secretFile);
    // Made by `touch`, or a copy that failed: what is there is of no help, what to put there is.
    if (text.trim() === "") {
      throw new ConfigError(
        `secret file ${secretFile} is empty: it must hold the run's secret, as hex; copy the coordinator's there (the file in the baton worker command baton run prints), or, for baton run --secret-file, remove it and a new one is made`,
      );
    }
    return decode(text, `secret file ${secretFile}`);
  }
  const text = source.env?.[SECRET_ENV];
  if (text === undefined || text === "") {
    throw new ConfigError(
      `no run secret: pass --secret-file FILE (the file the coordinator wrote) or set ${SECRET_ENV}`,
    );
  }
  return decode(text, SECRET_ENV);
}

/**
 * Whether `path` exists within `wait.ms`, looked for every `SECRET_FILE_POLL_MS`; at once for
 * anything but a missing file (what reading it says of that is the error), or a path that looks
 * like a pasted secret (never to be waited for, nor repeated in a message).
 */
async function untilExists(path: string, wait: SecretFileWait): Promise<boolean> {
  if (looksLikeSecret(path)) return true;
  const deadline = Date.now() + wait.ms;
  for (let first = true; ; first = false) {
    try {
      await access(path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") return true;
    }
    if (Date.now() >= deadline) return false;
    if (first) {
      wait.said(
        `secret file ${path} does not exist yet: waiting for the run that makes it (baton run makes it as it starts) for up to ${wait.as}`,
      );
    }
    await sleep(Math.min(SECRET_FILE_POLL_MS, Math.max(0, deadline - Date.now())));
  }
}

/** The text of a file that only its owner may read or write. */
async function readPrivateFile(path: string): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A secret pasted in place of its file's path must not reach a log through this message.
    const named = looksLikeSecret(path) ? "" : ` ${path}`;
    throw new ConfigError(
      code === "ENOENT"
        ? `secret file${named} does not exist; pass the path of the file the coordinator wrote${named ? "" : " (what was given looks like a secret itself, so it is not repeated here)"}. A run makes it as it starts: start the run first, or give baton worker --retry-for DURATION to have the worker wait for it. A run removes the secret file it made up when it ends (one given with baton run --secret-file is kept), so a command printed by an earlier run no longer joins: use the one the current run printed`
        : code === "EACCES" && named
          ? `cannot read secret file${named}: ${permissionAdvice("read", path)}`
          : `cannot read secret file${named} (${code ?? (error as Error).message})`,
    );
  }
  try {
    // The mode of the file that was opened, not of whatever is at the path by now.
    const stats = await handle.stat();
    // Not to be chmod'ed (/dev/null, /tmp): a pipe (`<(pass show run)`) is fine.
    const notAFile = stats.isDirectory()
      ? "a directory"
      : stats.isCharacterDevice() || stats.isBlockDevice()
        ? "a device"
        : undefined;
    if (notAFile !== undefined) {
      throw new ConfigError(
        `secret file ${path} is ${notAFile}; pass the path of the file that holds the secret`,
      );
    }
    const mode = stats.mode & 0o777;
    if ((mode & 0o077) !== 0) {
      const access = (mode & 0o044) !== 0 ? "readable" : "writable";
      throw new ConfigError(
        `secret file ${path} is ${access} by others (mode ${mode.toString(8).padStart(4, "0")}); chmod 600 ${path}`,
      );
    }
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/** Whether `path` is rather a hex secret than a file's path: no slash, 32 hex digits or more. */
function looksLikeSecret(path: string): boolean {
  return /^\s*[0-9a-fA-F]{32,}\s*$/.test(path);
}

/** Hex (surrounding whitespace ignored) to bytes; `what` names the source in errors. */
function decode(text: string, what: string): Uint8Array {
  const hex = text.trim();
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(hex)) {
    throw new ConfigError(`${what} does not hold a hex secret (an even number of 0-9a-f digits)`);
  }
  if (hex.length / 2 < MIN_SECRET_BYTES) {
    throw new ConfigError(
      `${what} holds a secret of ${hex.length / 2} bytes; a run secret has at least ${MIN_SECRET_BYTES}`,
    );
  }
  return new Uint8Array(Buffer.from(hex, "hex"));
}
