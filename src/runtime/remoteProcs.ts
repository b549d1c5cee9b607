import { RemoteHostError } from "../errors.ts";
import type { DeploymentIdentity } from "../machines/carriesDeployment.ts";
import { checkOptionNames } from "../optionNames.ts";
import { checkDeploymentId } from "../rank/deploymentPaths.ts";
import type { ProcInfo, Signal, SignalOutcome } from "./ports.ts";
import { parseProcStat } from "./procStat.ts";
import { requirePositiveMs } from "./requirePositiveMs.ts";
import { requireSshHost } from "./requireSshHost.ts";
import { shellQuote } from "./shellQuote.ts";
import type { SshHost } from "./sshHost.ts";

/** A remote process table entry, with the part of its environment ownership reads. */
export interface RemoteProc extends ProcInfo {
  /**
   * Its `BATON_DEPLOYMENT` and `BATON_STATE_DIR`, those it has (what `carriesDeployment` and
   * `envCarries` read), and, in a `scan`, its `RANK` (which names the rank of a process a
   * teardown's sweep stops); undefined when the environment cannot be read (another user's
   * process).
   */
  env: Record<string, string> | undefined;
}

/** What `signalIfOwned` did to one pid; `not-owned`: it no longer carries the deployment. */
export type RemoteSignalOutcome = SignalOutcome | "not-owned";

/** How `remoteProcs` talks to its host. */
export interface RemoteProcsOptions {
  /** Timeout of each round trip (default: the host's). */
  timeoutMs?: number | undefined;
}

/** Every option `remoteProcs` takes (the compiler holds this to `RemoteProcsOptions`). */
const REMOTE_PROCS_OPTIONS: Record<keyof RemoteProcsOptions, true> = { timeoutMs: true };

/** The process table of a remote host, seen and acted on through one ssh round trip per call. */
export interface RemoteProcs {
  readonly host: SshHost;
  /**
   * The entries of `pids` that exist on the host (a pid absent from the result is gone; a
   * zombie is reported as one). With `scan`, also every process whose environment has
   * `BATON_DEPLOYMENT=<deployment>`. Each entry's state is read after its arguments and
   * environment, so a process that ends while it is read is reported gone or a zombie, not
   * alive without the arguments and environment it had; one still running its exit then
   * (`exiting`) is alive with its environment unknown (undefined).
   */
  snapshot(
    pids: readonly number[],
    id: DeploymentIdentity,
    options?: { scan?: boolean | undefined },
  ): Promise<RemoteProc[]>;
  /**
   * Signals each pid only if, checked on the host right before its `kill`, it is alive and
   * carries the deployment (as `carriesDeployment` decides locally: its environment carries
   * it, or is not of the same name in another state dir and an argument names it). A zombie
   * or a missing pid is `ESRCH`.
   */
  signalIfOwned(
    pids: readonly number[],
    id: DeploymentIdentity,
    signal: Signal,
  ): Promise<Map<number, RemoteSignalOutcome>>;
}

/** Shell functions both scripts use: the ownership tests, with `dep`, `sd` and `pattern` set. */
function prelude({ deployment, stateDir }: DeploymentIdentity): string {
  // An argument names the deployment as a whole word, as `carriesDeployment` decides locally.
  const word = checkDeploymentId(deployment).replaceAll(".", "[.]");
  return [
    "LC_ALL=C; export LC_ALL",
    `dep=${shellQuote(deployment)}`,
    `sd=${shellQuote(stateDir)}`,
    `pattern=${shellQuote(`(^|[^A-Za-z0-9_.-])${word}([^A-Za-z0-9_.-]|$)`)}`,
    // One line per entry: a newline inside a value becomes \001 first, so no value can fake
    // an entry of its own.
    `entries() { { tr '\\012\\000' '\\001\\012' <"$1"; } 2>/dev/null; }`,
    // What the environment says, as `carriesDeployment` reads it: y the deployment's (its name
    // and state dir), o its name in another state dir, d its name and no state dir, n neither.
    `env_is() {`,
    `  entries "/proc/$1/environ" | grep -Fqx -e "BATON_DEPLOYMENT=$dep" || { echo n; return; }`,
    `  if entries "/proc/$1/environ" | grep -Fqx -e "BATON_STATE_DIR=$sd"; then echo y`,
    `  elif entries "/proc/$1/environ" | grep -q '^BATON_STATE_DIR='; then echo o`,
    "  else echo d; fi; }",
    `argv_carries() { entries "/proc/$1/cmdline" | grep -Eq -e "$pattern"; }`,
    `hex() { { od -An -v -tx1 "$1"; } 2>/dev/null | tr -d ' \\n'; }`,
    // A variable's value in hex and a dot (so an empty one is "."), or - when it is not set.
    `var() { v=$(entries "/proc/$1/environ" | sed -n "/^$2=/{p;q;}"); [ -n "$v" ] || { echo -; return; }`,
    `  printf '%s' "\${v#*=}" | od -An -v -tx1 | tr -d ' \\n'; echo .; }`,
  ].join("\n");
}

/** The pids as words for the script; `min` is 1 to look, 2 to signal (never init). */
function checkPids(pids: readonly number[], min: number): string {
  for (const pid of pids) {
    if (!Number.isSafeInteger(pid) || pid < min) {
      throw new Error(`remote pid ${pid} is not valid here: a pid is an integer ≥ ${min}`);
    }
  }
  return pids.join(" ");
}

const SIGNAL_NAMES: Record<string, string> = {
  SIGTERM: "TERM",
  SIGKILL: "KILL",
  SIGINT: "INT",
  0: "0",
};

const fromHex = (hex: string): string => (hex === "." ? "" : Buffer.from(hex, "hex").toString());

/**
 * The remote process table adapter: `snapshot` reads pid, ppid, pgid and state from
 * /proc/PID/stat, argv from /proc/PID/cmdline and whether the environment carries the
 * deployment, for any number of pids in one ssh round trip of POSIX sh (`od`, `tr`, `grep`);
 * `signalIfOwned` checks ownership on the host immediately before each `kill`, so a remote
 * pid reused by another program is never signalled. The host must be Linux (/proc). A host
 * that is no `SshHost`, an option it does not know and a `timeoutMs` that is no positive
 * number are a `ConfigError`.
 *
 * @example
 * ```ts
 * const table = remoteProcs(sshHost(target));
 * const id = { deployment: "dep-4kq9z0c1m2xa", stateDir: "/home/alice/.baton/run" };
 * const alive = await table.snapshot([4711], id);
 * const outcomes = await table.signalIfOwned([4711], id, "SIGTERM");
 * outcomes.get(4711); // "ok" | "ESRCH" | "EPERM" | "not-owned"
 * ```
 */
export function remoteProcs(host: SshHost, options: RemoteProcsOptions = {}): RemoteProcs {
  requireSshHost("remoteProcs", "host", host, ["run"]);
  checkOptionNames("remoteProcs", options, REMOTE_PROCS_OPTIONS, { shape: "{ timeoutMs }" });
  if (options.timeoutMs !== undefined)
    requirePositiveMs("remoteProcs", "timeoutMs", options.timeoutMs);
  const run = async (script: string): Promise<string[]> => {
    const { code, stdout, stderr } = await host.run(script, { timeoutMs: options.timeoutMs });
    if (code !== 0) {
      throw new RemoteHostError(
        "SSH_REMOTE",
        `${host.target.spec}: reading the process table failed (exit ${code}): ${stderr.trim()}; the host must be Linux with /proc, od, tr and grep`,
        host.target.spec,
      );
    }
    return stdout
      .toString("utf8")
      .split("\n")
      .filter((line) => line !== "");
  };

  return {
    host,

    async snapshot(pids, id, { scan = false } = {}) {
      const script = [
        prelude(id),
        `pids=${shellQuote(checkPids(pids, 1))}`,
        scan
          ? `for f in $(grep -l -F -s -e "BATON_DEPLOYMENT=$dep" /proc/[0-9]*/environ); do p=\${f#/proc/}; pids="$pids \${p%/environ}"; done`
          : "",
        "for p in $pids; do",
        '  [ -e "/proc/$p/stat" ] || continue',
        '  argv=$(hex "/proc/$p/cmdline")',
        // RANK only names what a teardown's sweep (a scan) finds: the quick looks stay as cheap.
        `  if [ -r "/proc/$p/environ" ]; then d=$(var "$p" BATON_DEPLOYMENT); s=$(var "$p" BATON_STATE_DIR); r=${scan ? '$(var "$p" RANK)' : "-"}; else d=u; s=u; r=u; fi`,
        // The state last: a process that ended while its arguments and environment were read
        // is gone or a zombie by then, not an entry alive with neither.
        '  stat=$(hex "/proc/$p/stat"); [ -n "$stat" ] || continue',
        `  printf '%s %s %s %s %s %s\\n' "$p" "$stat" "\${argv:-.}" "$d" "$s" "$r"`,
        "done",
      ].join("\n");
      const seen = new Map<number, RemoteProc>();
      for (const line of await run(script)) {
        const [pidText = "", stat = "", argv = "", deployment = "", stateDir = "", rank = "-"] =
          line.split(" ");
        const pid = Number(pidText);
        if (seen.has(pid)) continue;
        const value = (hexDot: string) => fromHex(hexDot.slice(0, -1) || ".");
        const entry = parseProcStat(pid, fromHex(stat), fromHex(argv));
        seen.set(pid, {
          ...entry,
          // Running its exit, its environment may read empty whatever it was: unknown.
          env:
            deployment === "u" || entry.exiting === true
              ? undefined
              : {
                  ...(deployment !== "-" && { BATON_DEPLOYMENT: value(deployment) }),
                  ...(stateDir !== "-" && { BATON_STATE_DIR: value(stateDir) }),
                  ...(rank !== "-" && { RANK: value(rank) }),
                },
        });
      }
      return [...seen.values()];
    },

    async signalIfOwned(pids, id, signal) {
      const name = SIGNAL_NAMES[String(signal)];
      const script = [
        prelude(id),
        `for p in ${checkPids(pids, 2)}; do`,
        `  if ! { read -r line <"/proc/$p/stat"; } 2>/dev/null; then echo "$p ESRCH"; continue; fi`,
        `  rest=\${line##*') '}; state=\${rest%% *}`,
        `  case $state in Z|X|x) echo "$p ESRCH"; continue ;; esac`,
        `  case $(env_is "$p") in y|d) ;; o) echo "$p not-owned"; continue ;;`,
        `    *) if ! argv_carries "$p"; then echo "$p not-owned"; continue; fi ;; esac`,
        `  if kill -s ${name} "$p" 2>/dev/null; then echo "$p ok"`,
        `  elif [ -e "/proc/$p" ]; then echo "$p EPERM"`,
        `  else echo "$p ESRCH"; fi`,
        "done",
      ].join("\n");
      const outcomes = new Map<number, RemoteSignalOutcome>();
      for (const line of await run(script)) {
        const [pid = "", outcome = ""] = line.split(" ");
        outcomes.set(Number(pid), outcome as RemoteSignalOutcome);
      }
      for (const pid of pids) {
        if (!outcomes.has(pid)) {
          throw new RemoteHostError(
            "SSH_REMOTE",
            `${host.target.spec}: no answer about pid ${pid} when signalling it`,
            host.target.spec,
          );
        }
      }
      return outcomes;
    },
  };
}
