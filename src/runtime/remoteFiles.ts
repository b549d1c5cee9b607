import { RemoteHostError } from "../errors.ts";
import type { Files } from "./ports.ts";
import { requireSshHost } from "./requireSshHost.ts";
import { shellQuote } from "./shellQuote.ts";
import type { SshHost } from "./sshHost.ts";

/**
 * Exit code of a script whose answer is no, not an error: the file to read or stat does not
 * exist, or the file to create exclusively does.
 */
const ANSWER_NO = 3;

function checkPath(path: string): string {
  if (!path.startsWith("/")) {
    throw new Error(
      `remote path ${JSON.stringify(path)} must be absolute (a relative one would depend on the remote login directory)`,
    );
  }
  return shellQuote(path);
}

/** The folder of the absolute `path`. */
function dirOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/")) || "/";
}

/** `DIR/.NAME.`, quoted: the start of a temp file's name beside `path` (`$$.tmp` ends it). */
function tempPrefix(path: string): string {
  const slash = path.lastIndexOf("/");
  return shellQuote(`${path.slice(0, slash)}/.${path.slice(slash + 1)}.`);
}

/**
 * The Files port on a remote host, over ssh: the state directory of remote ranks (markers,
 * acks, cancel files, the mirrored lease). `writeAtomic` sends the data on stdin (never in
 * argv) to a temp file beside the target (`.NAME.PID.tmp`, created under umask 077 with the
 * mode set explicitly, default 0600), syncs it and renames it over the target;
 * `createExclusive` writes such a temp file and `link`s it to the name, so the file appears
 * whole (see `Files.createExclusive`). Parent directories are created 0700. Paths must be
 * absolute. Each call is one ssh round trip. A host that is no `SshHost` is a `ConfigError`.
 *
 * @example
 * ```ts
 * const files = remoteFiles(sshHost(target));
 * await files.writeAtomic("/home/alice/.baton/run/dep-4kq9z0c1m2xa/cancel.json", text);
 * const marker = await files.read("/home/alice/.baton/run/dep-4kq9z0c1m2xa/rank-1.marker.json");
 * ```
 */
export function remoteFiles(host: SshHost): Files {
  requireSshHost("remoteFiles", "host", host, ["run"]);
  const run = async (what: string, script: string, input?: string | Uint8Array) => {
    const result = await host.run(`umask 077\n${script}`, { input });
    if (result.code !== 0 && result.code !== ANSWER_NO) {
      throw new RemoteHostError(
        "SSH_REMOTE",
        `${host.target.spec}: cannot ${what} (exit ${result.code}): ${result.stderr.trim()}`,
        host.target.spec,
      );
    }
    return result;
  };

  const read = async (path: string): Promise<string | undefined> => {
    const result = await run(
      `read ${path}`,
      `if [ -e ${checkPath(path)} ]; then exec cat ${checkPath(path)}; fi\nexit ${ANSWER_NO}`,
    );
    return result.code === ANSWER_NO ? undefined : result.stdout.toString("utf8");
  };

  return {
    async writeAtomic(path, data, mode = 0o600) {
      const target = checkPath(path);
      await run(
        `write ${path}`,
        [
          `mkdir -p ${shellQuote(dirOf(path))} || exit 1`,
          `tmp=${tempPrefix(path)}$$.tmp`,
          // A temp file left with this pid by a creator killed after its link is a name of
          // that file: written through, it would be emptied (see createExclusive).
          `rm -f "$tmp"`,
          `if cat >"$tmp" && chmod ${mode.toString(8)} "$tmp" && { sync "$tmp" 2>/dev/null || sync; } && mv -f "$tmp" ${target}; then exit 0; fi`,
          `rm -f "$tmp"; exit 1`,
        ].join("\n"),
        data,
      );
    },

    async createExclusive(path, data, mode = 0o600, { durable = true } = {}) {
      const target = checkPath(path);
      const chmod = `chmod ${mode.toString(8)}`;
      const sync = durable ? ` && { sync "$tmp" 2>/dev/null || sync; }` : "";
      // The data goes whole into a temp file, synced unless not `durable` (removed first: one a killed creator left
      // with this pid after its link is a name of that file, which `>` would empty), then `link`
      // gives it the name, failing when the name is taken: nobody sees the file empty. A
      // file system without hard links (or a host without `link`) gets the noclobber `>`
      // (O_EXCL) and then the data. A write that fails (a full disk) leaves nothing and says why.
      const result = await run(
        `create ${path}`,
        [
          `mkdir -p ${shellQuote(dirOf(path))} || exit 1`,
          `[ -e ${target} ] && exit ${ANSWER_NO}`,
          `tmp=${tempPrefix(path)}$$.tmp`,
          `rm -f "$tmp"`,
          `if ! { cat >"$tmp" && ${chmod} "$tmp"${sync}; }; then rm -f "$tmp"; exit 1; fi`,
          // Over NFS a link whose reply was lost is sent again and fails: made all the same.
          `if link "$tmp" ${target} 2>/dev/null || [ "$tmp" -ef ${target} ]; then rm -f "$tmp"; exit 0; fi`,
          `if [ -e ${target} ]; then rm -f "$tmp"; exit ${ANSWER_NO}; fi`,
          `set -C`,
          `if ! true >${target}; then rm -f "$tmp"; [ -e ${target} ] && exit ${ANSWER_NO}; exit 1; fi`,
          `if cat "$tmp" >>${target} && ${chmod} ${target}; then rm -f "$tmp"; exit 0; fi`,
          `rm -f "$tmp" ${target}; exit 1`,
        ].join("\n"),
        data,
      );
      return result.code !== ANSWER_NO;
    },

    read,

    async readMany(paths) {
      // One round trip each, one after the other: nothing reads many remote files at once.
      const texts: (string | undefined)[] = [];
      for (const path of paths) texts.push(await read(path));
      return texts;
    },

    async list(dir) {
      const quoted = checkPath(dir);
      const result = await run(
        `list ${dir}`,
        [
          `[ -d ${quoted} ] || exit 0`,
          `cd ${quoted} || exit 1`,
          `for f in * .[!.]* ..?*; do [ -e "$f" ] && printf '%s\\000' "$f"; done`,
          "exit 0",
        ].join("\n"),
      );
      return result.stdout
        .toString("utf8")
        .split("\0")
        .filter((name) => name !== "");
    },

    async modifiedAt(path) {
      const quoted = checkPath(path);
      const result = await run(
        `stat ${path}`,
        // GNU stat, then BSD stat: seconds since the epoch.
        `if [ -e ${quoted} ]; then stat -c %Y ${quoted} 2>/dev/null || stat -f %m ${quoted}; exit; fi\nexit ${ANSWER_NO}`,
      );
      if (result.code === ANSWER_NO) return undefined;
      const printed = result.stdout.toString("utf8").trim();
      const seconds = Number(printed);
      if (printed === "" || !Number.isFinite(seconds)) {
        throw new RemoteHostError(
          "SSH_REMOTE",
          `${host.target.spec}: cannot tell when ${path} was modified: stat printed ${JSON.stringify(printed)}`,
          host.target.spec,
        );
      }
      return seconds * 1000;
    },

    async remove(path) {
      await run(`remove ${path}`, `rm -f ${checkPath(path)}`);
    },

    async removeDir(dir) {
      const quoted = checkPath(dir);
      // rmdir fails on a directory with anything in it: that, or one gone already, is a no.
      const result = await run(
        `remove ${dir}`,
        [
          `rmdir ${quoted} 2>/dev/null && exit 0`,
          `[ ! -e ${quoted} ] && exit ${ANSWER_NO}`,
          `[ -n "$(ls -A ${quoted} 2>/dev/null)" ] && exit ${ANSWER_NO}`,
          `exec rmdir ${quoted}`,
        ].join("\n"),
      );
      return result.code !== ANSWER_NO;
    },

    async owner(path) {
      const quoted = checkPath(path);
      const result = await run(
        `stat ${path}`,
        // GNU stat, then BSD stat: the owner's uid; then this user's.
        `if [ -e ${quoted} ]; then stat -c %u ${quoted} 2>/dev/null || stat -f %u ${quoted}; id -u; exit; fi\nexit ${ANSWER_NO}`,
      );
      if (result.code === ANSWER_NO) return undefined;
      const [uid, self] = result.stdout.toString("utf8").trim().split(/\s+/).map(Number);
      if (!Number.isInteger(uid) || !Number.isInteger(self)) {
        throw new RemoteHostError(
          "SSH_REMOTE",
          `${host.target.spec}: cannot tell who owns ${path}: stat and id printed ${JSON.stringify(result.stdout.toString("utf8").trim())}`,
          host.target.spec,
        );
      }
      return { uid: uid!, self: uid === self };
    },

    async sameFile(a, b) {
      // test's -ef: one device and inode, symlinks followed; false when either is missing.
      const result = await run(
        `compare ${a} and ${b}`,
        `[ ${checkPath(a)} -ef ${checkPath(b)} ] && exit 0\nexit ${ANSWER_NO}`,
      );
      return result.code !== ANSWER_NO;
    },

    async mkdirp(dir) {
      // `mkdir -p` does not say what it made.
      await run(`create ${dir}`, `mkdir -p ${checkPath(dir)}`);
      return undefined;
    },
  };
}
