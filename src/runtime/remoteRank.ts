import { spawn } from "node:child_process";
import { closeSync, createWriteStream, fstatSync, openSync } from "node:fs";
import { ConfigError, RemoteHostError } from "../errors.ts";
import { checkRemoteRankOptions } from "./checkRemoteRankOptions.ts";
import type { ProcExit } from "./ports.ts";
import { shellQuote } from "./shellQuote.ts";
import type { SshHost } from "./sshHost.ts";

/** What `spawnRemoteRank` takes: the host, and the rank's program, environment and log. */
export interface RemoteRankOptions {
  host: SshHost;
  /** The rank's program and arguments, as found on the remote host's PATH. */
  argv: [string, ...string[]];
  /**
   * The rank's variables, always set (the rank environment; `BATON_STATE_DIR` is the state
   * dir on the remote host). `BATON_LAUNCHER_PID` is replaced by the remote session's pid.
   * Sent on the session's stdin, never in argv.
   */
  env: Record<string, string>;
  /** Variables set only where the remote login environment does not set them already. */
  envDefaults?: Record<string, string> | undefined;
  /** Remote working directory (default: the remote login directory). */
  cwd?: string | undefined;
  /** Local file that receives the rank's stdout and stderr (appended, mode 0600). */
  logFile: string;
  /** How long the remote guard waits between TERM and KILL when the session drops (default 3 s). */
  guardGraceMs?: number | undefined;
  /**
   * The launcher's lease as mirrored on the remote host (`S/<dep>/lease.json` there, renewed
   * by the launcher through `remoteFiles`). When given, the guard also stops the rank when the
   * file has not changed for `staleAfterMs` (measured on the remote host's own clock), as a
   * frozen or partitioned launcher leaves it. Missing counts as unchanged since the start.
   */
  lease?: { path: string; staleAfterMs: number } | undefined;
  /** How long until the remote side reports the rank's pid (default 30 s). */
  startTimeoutMs?: number | undefined;
}

/** One rank running on a remote host, started through a local `ssh` child. */
export interface RemoteRankHandle {
  /** The host's spec, `ssh://user@host[:port]`. */
  readonly host: string;
  /** The rank's pid on the remote host; it leads its own process group there (pgid = pid). */
  readonly pid: number;
  /** The local ssh client's pid. */
  readonly sshPid: number;
  /** The size of the local log when this rank's output began to go to it (`ProcHandle.logStart`). */
  readonly logStart?: number | undefined;
  /**
   * Settles when the local ssh client ends: the rank's exit code as its remote shell reports
   * it (128 + N for a signal N), or the signal that ended the ssh client itself.
   */
  readonly exited: Promise<ProcExit>;
  /** Ends the session's stdin: the remote guard stops the rank (TERM, grace, KILL). */
  hangUp(): void;
}

/** How long the remote guard waits between TERM and KILL by default (`RemoteRankOptions.guardGraceMs`). */
export const REMOTE_GUARD_GRACE_MS = 3_000;
/** How long the remote side may take to report the rank's pid by default (`startTimeoutMs`). */
export const REMOTE_START_TIMEOUT_MS = 30_000;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SAFE_BYTE = /^[A-Za-z0-9_./:,=@+%-]$/;
const PID_LINE = /^baton-remote-pid (\d+)\n/m;
/**
 * What the guard says when the rank's directory or program is not on the host (exit 126,
 * 127); its words follow the `baton: ` that marks them in the rank's log.
 */
const GUARD_REFUSAL = /^baton: ((?:cannot enter |.*: not found on ).*)$/m;

/** A value on one line of safe characters, each other byte as `\0ooo` for sh's `printf %b`. */
function encodeValue(name: string, value: string): string {
  if (value.includes("\0")) throw new ConfigError(`variable ${name} contains a NUL byte`);
  let out = "";
  for (const byte of Buffer.from(value, "utf8")) {
    const char = String.fromCharCode(byte);
    out += byte < 128 && SAFE_BYTE.test(char) ? char : `\\0${byte.toString(8).padStart(3, "0")}`;
  }
  return out;
}

/** The environment block sent on stdin: `S NAME VALUE` (set) or `D NAME VALUE` (default) lines, then an empty line. */
function envBlock(env: Record<string, string>, defaults: Record<string, string>): string {
  const lines: string[] = [];
  for (const [kind, vars] of [
    ["D", defaults],
    ["S", env],
  ] as const) {
    for (const [name, value] of Object.entries(vars)) {
      if (!NAME.test(name)) {
        throw new ConfigError(
          `${JSON.stringify(name)} is not a variable name a rank on an ssh host can be given (letters, digits and _, not first a digit): rename it in the launch's env`,
        );
      }
      lines.push(`${kind} ${name} ${encodeValue(name, value)}`);
    }
  }
  return `${lines.join("\n")}\n\n`;
}

/** What the guard watches besides its session: the lease file and its staleness, in seconds. */
interface LeaseWatch {
  path: string;
  staleS: number;
}

/**
 * The remote guard: a POSIX sh script that reads the environment block from stdin, starts the
 * rank in a session of its own (`setsid`, so it leads its process group) with stderr joined
 * to stdout, prints `baton-remote-pid PID` on stderr, then waits for the rank. A watcher
 * blocks reading the session's stdin: end of input (the launcher died, its ssh client died,
 * the connection dropped, or `hangUp`) makes it TERM the rank's group, wait `graceS`, and
 * KILL it, whatever the rank does with SIGHUP or SIGTERM. With `lease`, a second watcher does
 * the same when the lease file stays unchanged for `staleS` seconds.
 */
function guardScript(
  argv: readonly string[],
  cwd: string | undefined,
  graceS: number,
  lease: LeaseWatch | undefined,
): string {
  const program = shellQuote(argv[0] as string);
  return [
    "exec 3<&0",
    "baton_env=",
    'while IFS= read -r line; do [ -n "$line" ] || break; baton_env="$baton_env$line',
    '"; done',
    ...(cwd === undefined
      ? []
      : [
          `cd ${shellQuote(cwd)} 2>/dev/null || { printf 'baton: cannot enter %s\\n' ${shellQuote(cwd)} >&2; exit 126; }`,
        ]),
    `command -v ${program} >/dev/null 2>&1 || { printf 'baton: %s: not found on %s\\n' ${program} "$(uname -n)" >&2; exit 127; }`,
    "launcher=$PPID",
    "(",
    "  set -f; IFS='",
    "'",
    "  for entry in $baton_env; do",
    `    kind=\${entry%% *}; rest=\${entry#* }; name=\${rest%% *}; value=\${rest#* }`,
    `    value=$(printf '%bx' "$value"); value=\${value%x}`,
    `    if [ "$kind" = D ]; then eval "[ -n \\"\\\${$name+x}\\" ]" && continue; fi`,
    '    export "$name=$value"',
    "  done",
    "  BATON_LAUNCHER_PID=$launcher; export BATON_LAUNCHER_PID",
    `  exec setsid ${argv.map(shellQuote).join(" ")} 2>&1`,
    ") </dev/null 3<&- &",
    "rank=$!",
    `printf 'baton-remote-pid %s\\n' "$rank" >&2`,
    "stop_rank() {",
    "  trap '' TERM",
    '  kill -s TERM -- "-$rank"',
    "  n=0",
    `  while [ "$n" -lt ${graceS} ] && kill -s 0 -- "-$rank"; do sleep 1; n=$((n + 1)); done`,
    '  kill -s KILL -- "-$rank"',
    "}",
    "( while read -r _; do :; done; stop_rank ) <&3 >/dev/null 2>&1 &",
    "watchers=$!",
    ...(lease === undefined
      ? []
      : [
          "(",
          `  last=$(cat ${shellQuote(lease.path)} 2>/dev/null); quiet=0`,
          `  while [ "$quiet" -lt ${lease.staleS} ]; do`,
          "    sleep 1",
          `    now=$(cat ${shellQuote(lease.path)} 2>/dev/null)`,
          '    if [ "$now" = "$last" ]; then quiet=$((quiet + 1)); else last=$now; quiet=0; fi',
          "  done",
          "  stop_rank",
          ") </dev/null >/dev/null 2>&1 3<&- &",
          'watchers="$watchers $!"',
        ]),
    "exec 3<&-",
    'wait "$rank"; status=$?',
    "kill $watchers 2>/dev/null",
    'exit "$status"',
  ].join("\n");
}

/**
 * Starts one rank on a remote host as a local `ssh` child with a connection of its own (no
 * terminal, not multiplexed): the remote guard (see `ARCHITECTURE.md`, "Remote ranks over
 * SSH") runs `cd CWD && exec setsid env… argv` with the environment sent on stdin, so no value
 * appears in any argv. The rank's stdout and stderr go to `logFile`. Resolves once the remote
 * side reports the rank's pid; rejects with `RemoteHostError` when ssh cannot connect, the
 * directory or program is missing remotely, or no pid comes within `startTimeoutMs`. Options
 * it cannot take throw a `ConfigError` before it opens the log or starts ssh, as a variable
 * name a remote rank cannot be given does (`checkRemoteRankOptions`).
 *
 * The rank does not outlive its launcher: the local ssh client's stdin is a pipe only this
 * process holds, so when the launcher dies (even by SIGKILL), or the ssh client dies, or the
 * connection drops, the remote guard sees end of input and stops the rank's process group
 * with TERM, then KILL after `guardGraceMs`. Ranks using baton's rank library also watch
 * `BATON_LAUNCHER_PID`, which is the remote sshd session's pid.
 *
 * @example
 * ```ts
 * const rank = await spawnRemoteRank({ host, argv: ["python3", "train.py"], logFile: "rank-1.log",
 *   env: { RANK: "1", WORLD_SIZE: "2", BATON_DEPLOYMENT: "dep-4kq9z0c1m2xa", BATON_STATE_DIR: "/home/alice/.baton/run" } });
 * console.log(`rank 1 is pid ${rank.pid} on ${rank.host}`);
 * const { code } = await rank.exited;
 * ```
 */
export function spawnRemoteRank(options: RemoteRankOptions): Promise<RemoteRankHandle> {
  checkRemoteRankOptions(options);
  const { host } = options;
  const graceS = Math.max(1, Math.ceil((options.guardGraceMs ?? REMOTE_GUARD_GRACE_MS) / 1000));
  const startTimeoutMs = options.startTimeoutMs ?? REMOTE_START_TIMEOUT_MS;
  const block = envBlock(options.env, options.envDefaults ?? {});
  const lease =
    options.lease === undefined
      ? undefined
      : {
          path: options.lease.path,
          staleS: Math.max(1, Math.ceil(options.lease.staleAfterMs / 1000)),
        };
  const [command, ...args] = host.sessionArgv(
    guardScript(options.argv, options.cwd, graceS, lease),
  );
  const log = openSync(options.logFile, "a", 0o600);
  const logStart = fstatSync(log).size;
  let child: ReturnType<typeof spawn>;
  try {
    // A session of its own: a Ctrl-C at the launcher's terminal reaches the launcher, which
    // tears the group down in order, not the ssh clients.
    child = spawn(command, args, { stdio: ["pipe", log, "pipe"], detached: true });
  } finally {
    closeSync(log);
  }
  const stderrLog = createWriteStream(options.logFile, { flags: "a", mode: 0o600 });
  const exited = new Promise<ProcExit>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  child.stdin?.on("error", () => {});
  child.stdin?.write(block);

  return new Promise<RemoteRankHandle>((resolve, reject) => {
    let said = "";
    let pid: number | undefined;
    const fail = (
      code: "SSH_UNREACHABLE" | "SSH_TIMEOUT" | "SSH_REMOTE",
      why: string,
      retryable?: false,
      shellCode?: 127,
    ) => {
      clearTimeout(timer);
      const message = `${host.target.spec}: ${why}`;
      reject(new RemoteHostError(code, message, host.target.spec, retryable, shellCode));
    };
    const timer = setTimeout(() => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, "SIGKILL");
      fail("SSH_TIMEOUT", `the rank did not start within ${startTimeoutMs} ms`);
    }, startTimeoutMs);
    child.once("error", (error) =>
      fail("SSH_UNREACHABLE", `cannot run ssh: ${error.message}; install an OpenSSH client`),
    );
    child.stderr?.on("data", (chunk: Buffer) => {
      if (pid !== undefined) {
        stderrLog.write(chunk);
        return;
      }
      said += chunk.toString("utf8");
      const match = PID_LINE.exec(said);
      if (match === null) return;
      pid = Number(match[1]);
      const rest = said.slice(0, match.index) + said.slice(match.index + match[0].length);
      if (rest !== "") stderrLog.write(rest);
      clearTimeout(timer);
      resolve({
        host: host.target.spec,
        pid,
        sshPid: child.pid as number,
        logStart,
        exited,
        hangUp: () => child.stdin?.end(),
      });
    });
    child.stderr?.once("end", () => {
      // A rank that never started: what ssh or the guard said goes to its log as well.
      if (pid === undefined && said !== "") stderrLog.write(said);
      stderrLog.end();
    });
    // "close", not "exit": the pid line may still be in the stderr pipe when ssh exits.
    child.once("close", (code: number | null, signal: string | null) => {
      if (pid !== undefined) return;
      // The guard's own refusal: its directory or program is not on that host, next time too.
      const refusal = code === 126 || code === 127 ? GUARD_REFUSAL.exec(said) : null;
      const missing = refusal !== null;
      const why = said.trim() || `ssh ended with ${signal ?? `exit ${code}`}`;
      fail(
        code === 255 ? "SSH_UNREACHABLE" : "SSH_REMOTE",
        refusal?.[1] ?? `the rank could not be started: ${why}`,
        missing ? false : undefined,
        missing && code === 127 ? 127 : undefined,
      );
    });
  });
}
