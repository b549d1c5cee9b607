import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, RemoteHostError } from "../errors.ts";
import { checkSshHostArguments } from "./checkSshHostArguments.ts";
import { nodeProcs } from "./nodeProcs.ts";
import { shellQuote } from "./shellQuote.ts";
import { isMaster, makeControlDir } from "./sshControlDir.ts";
import type { SshTarget } from "./sshTarget.ts";

/** How long one ssh call may take by default (`SshHostOptions.timeoutMs`). */
export const SSH_CALL_TIMEOUT_MS = 30_000;
/** How long connecting may take by default (`SshHostOptions.connectTimeoutMs`). */
export const SSH_CONNECT_TIMEOUT_MS = 10_000;
/** How long an idle shared connection outlives its last call by default (`controlPersistMs`). */
export const SSH_CONTROL_PERSIST_MS = 300_000;

/** What `sshHost` takes beside its target: how `ssh` reaches the host. */
export interface SshHostOptions {
  /** An ssh_config file (`ssh -F`); default: the user's own (~/.ssh/config). */
  configFile?: string | undefined;
  /** More ssh settings as `Key=Value` (each passed as `-o Key=Value`), e.g. `IdentityFile=…`. */
  options?: readonly string[] | undefined;
  /** How long connecting may take (`ConnectTimeout`, rounded up to seconds; default 10 s). */
  connectTimeoutMs?: number | undefined;
  /** How long one call may take before its ssh client is killed (default 30 s). */
  timeoutMs?: number | undefined;
  /** Share one connection between calls (ControlMaster; default true). */
  multiplex?: boolean | undefined;
  /** How long an idle shared connection outlives its last call (`ControlPersist`; default 300 s). */
  controlPersistMs?: number | undefined;
  /** The ssh program (default `ssh` on PATH). */
  program?: string | undefined;
}

/** What a remote script did: its exit code and output. */
export interface RemoteResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** What one `SshHost.run` call takes: its stdin, and its own timeout. */
export interface SshRunOptions {
  /** Bytes for the script's stdin (file contents travel this way, never in argv). */
  input?: string | Uint8Array | undefined;
  /** This call's timeout (default: the host's `timeoutMs`). */
  timeoutMs?: number | undefined;
}

/** A remote host reached through the system `ssh` client. */
export interface SshHost {
  readonly target: SshTarget;
  /**
   * Runs `script` with `/bin/sh` on the host and resolves with its exit code and output,
   * whatever the code. Rejects with `RemoteHostError` when ssh cannot connect
   * (`SSH_UNREACHABLE`) or the call outlives its timeout (`SSH_TIMEOUT`: the local client
   * is killed by pid, and the remote script's process group too).
   */
  run(script: string, options?: SshRunOptions): Promise<RemoteResult>;
  /**
   * The argv of an ssh client that runs `script` with `/bin/sh` on the host over a
   * connection of its own (never the shared one), without a terminal: the remote session
   * lives exactly as long as that client and its connection.
   */
  sessionArgv(script: string): [string, ...string[]];
  /** Stops the shared connection (`ssh -O exit`, then by pid) and removes its private dir. */
  close(): Promise<void>;
}

/** The line every script prints first on stderr: the remote shell's pid (and process group). */
const PID_LINE = /^baton-remote-shell (\d+)\n/;
const OPTION = /^[A-Za-z]+=[^\n]*$/;

/**
 * A remote host over the system `ssh` client: `BatchMode=yes` (never a prompt), the user's
 * keys, known_hosts and ssh_config (or `configFile`), `ConnectTimeout`, and keepalives that
 * notice a dead peer within 15 s. Every call runs a POSIX sh script, has a timeout and is
 * killed by pid when it expires; stdout and stderr are captured; data travels on stdin, never
 * in argv. Calls share one multiplexed connection (ControlMaster, a control socket in a
 * private 0700 directory, `ControlPersist` so an abandoned master ends by itself), started on
 * first use; `close()` stops it. A target that is not one `parseRankHost` gives, or options it
 * cannot take, are a `ConfigError` (`checkSshHostArguments`), before anything is made.
 *
 * @example
 * ```ts
 * const host = sshHost(parseRankHost("ssh://alice@gpu-2") as SshTarget);
 * const { code, stdout } = await host.run("uname -r", { timeoutMs: 5_000 });
 * await host.close();
 * ```
 */
export function sshHost(target: SshTarget, options: SshHostOptions = {}): SshHost {
  checkSshHostArguments(target, options);
  const program = options.program ?? "ssh";
  const timeoutMs = options.timeoutMs ?? SSH_CALL_TIMEOUT_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? SSH_CONNECT_TIMEOUT_MS;
  const multiplex = options.multiplex ?? true;
  for (const option of options.options ?? []) {
    if (!OPTION.test(option)) {
      throw new ConfigError(
        `ssh option ${JSON.stringify(option)} must be written Key=Value (as after ssh -o)`,
      );
    }
  }
  const base = [
    ...reachFlags(target, options),
    "-l",
    target.user,
    ...givenOptions(options),
    "-o",
    `ConnectTimeout=${Math.max(1, Math.ceil(connectTimeoutMs / 1000))}`,
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",
    "-o",
    "LogLevel=ERROR",
    "-T",
  ];
  const advice = reachAdvice(program, target, options);
  const dir = multiplex ? makeControlDir() : undefined;
  const controlPath = dir === undefined ? undefined : join(dir, "master");
  const control = (master: "yes" | "no") =>
    controlPath === undefined
      ? ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
      : ["-o", `ControlMaster=${master}`, "-o", `ControlPath=${controlPath}`];
  const remote = (script: string) => `exec /bin/sh -c ${shellQuote(script)}`;
  let master: Promise<void> | undefined;
  /** The running master's pid, once it is up. */
  let masterAt: number | undefined;
  let closed = false;

  const fail = (code: "SSH_UNREACHABLE" | "SSH_TIMEOUT", why: string): RemoteHostError =>
    new RemoteHostError(code, `${target.spec}: ${why}`, target.spec);

  /** Runs ssh with `args`, capturing output; kills it by pid after `limitMs`. */
  const invoke = (args: string[], input: string | Uint8Array | undefined, limitMs: number) =>
    new Promise<{ code: number | null; stdout: Buffer; stderr: string; timedOut: boolean }>(
      (resolve, reject) => {
        const child = spawn(program, args, {
          stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        let timedOut = false;
        const finish = (code: number | null) => {
          clearTimeout(timer);
          resolve({
            code,
            stdout: Buffer.concat(out),
            stderr: Buffer.concat(err).toString("utf8"),
            timedOut,
          });
        };
        const timer = setTimeout(() => {
          timedOut = true;
          if (child.pid !== undefined && child.exitCode === null) {
            process.kill(child.pid, "SIGKILL");
          }
          // A multiplexed client hands its stdio to the master, which keeps our pipes open
          // until the remote command ends: do not wait for them to close.
          child.once("exit", () => finish(null));
        }, limitMs);
        child.stdout?.on("data", (chunk: Buffer) => out.push(chunk));
        child.stderr?.on("data", (chunk: Buffer) => err.push(chunk));
        child.once("error", (error) => {
          clearTimeout(timer);
          reject(new Error(`cannot run ${program}: ${error.message}; install an OpenSSH client`));
        });
        child.once("close", finish);
        child.stdin?.on("error", () => {});
        child.stdin?.end(input);
      },
    );

  const startMaster = async (): Promise<void> => {
    if (dir === undefined) return;
    const log = join(dir, "master.log");
    const fd = openSync(log, "a", 0o600);
    // With ControlPersist the master puts itself in the background once connected and this
    // client exits 0; the background master holds only the log file, never our pipes.
    const child = spawn(
      program,
      [
        ...base,
        ...control("yes"),
        "-o",
        `ControlPersist=${Math.ceil((options.controlPersistMs ?? SSH_CONTROL_PERSIST_MS) / 1000)}`,
        "-N",
        "--",
        target.host,
      ],
      { stdio: ["ignore", "ignore", fd] },
    );
    closeSync(fd);
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, "SIGKILL");
      }, connectTimeoutMs + 5_000);
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(new Error(`cannot run ${program}: ${error.message}; install an OpenSSH client`));
      });
      child.once("exit", (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    if (code !== 0) {
      const said = readFileSync(log, "utf8").trim();
      throw fail(
        code === null ? "SSH_TIMEOUT" : "SSH_UNREACHABLE",
        `cannot connect: ${said.replace(/\.$/, "") || `ssh exited with ${code}`}. ${advice}`,
      );
    }
  };

  const masterPid = async (): Promise<number | undefined> => {
    const { stderr } = await invoke(
      [...base, ...control("no"), "-O", "check", "--", target.host],
      undefined,
      5_000,
    );
    const match = /pid=(\d+)/.exec(stderr);
    return match === null ? undefined : Number(match[1]);
  };

  return {
    target,

    async run(script, runOptions = {}) {
      if (closed) throw new Error(`${target.spec}: the ssh host was closed`);
      // A master that ended (idle past ControlPersist, or killed) is started again.
      if (
        master !== undefined &&
        masterAt !== undefined &&
        controlPath !== undefined &&
        !isMaster(masterAt, controlPath)
      ) {
        rmSync(controlPath, { force: true });
        master = undefined;
      }
      if (master === undefined) {
        masterAt = undefined;
        master = startMaster().then(
          async () => {
            masterAt = await masterPid();
          },
          (error: unknown) => {
            master = undefined;
            throw error;
          },
        );
      }
      await master;
      const limitMs = runOptions.timeoutMs ?? timeoutMs;
      const result = await invoke(
        [
          ...base,
          ...control("no"),
          "--",
          target.host,
          remote(`printf 'baton-remote-shell %s\\n' "$$" >&2\n${script}`),
        ],
        runOptions.input,
        limitMs,
      );
      const pidLine = PID_LINE.exec(result.stderr);
      const stderr = pidLine === null ? result.stderr : result.stderr.slice(pidLine[0].length);
      if (result.timedOut) {
        // The remote shell leads its own process group (sshd starts it in a new session).
        if (pidLine !== null) {
          await invoke(
            [
              ...base,
              ...control("no"),
              "--",
              target.host,
              remote(`kill -s KILL -- -${pidLine[1]}`),
            ],
            undefined,
            5_000,
          ).catch(() => undefined);
        }
        throw fail("SSH_TIMEOUT", `a remote command outlived its ${limitMs} ms and was killed`);
      }
      if (result.code === 255 || result.code === null) {
        throw fail(
          "SSH_UNREACHABLE",
          `ssh failed: ${stderr.trim().replace(/\.$/, "") || `exit ${result.code}`}. ${advice}`,
        );
      }
      return { code: result.code, stdout: result.stdout, stderr };
    },

    sessionArgv(script) {
      return [
        program,
        ...base,
        "-o",
        "ControlMaster=no",
        "-o",
        "ControlPath=none",
        "--",
        target.host,
        remote(script),
      ];
    },

    async close() {
      if (closed) return;
      closed = true;
      const started = master;
      master = undefined;
      if (dir === undefined) return;
      try {
        if (started !== undefined && (await started.then(() => true).catch(() => false))) {
          const pid = masterAt;
          await invoke(
            [...base, ...control("no"), "-O", "exit", "--", target.host],
            undefined,
            5_000,
          );
          if (pid !== undefined) await stopMaster(pid, controlPath as string);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * What to try when the host cannot be reached: the ssh command that reaches it as baton does
 * (its config file, port, user and options), to run by hand.
 */
function reachAdvice(program: string, target: SshTarget, options: SshHostOptions): string {
  const command = [
    program,
    ...reachFlags(target, options),
    ...givenOptions(options),
    `${target.user}@${target.host}`,
    "true",
  ].map((word) => (/^[\w./:@=,+-]+$/.test(word) ? word : shellQuote(word)));
  return `Check that \`${command.join(" ")}\` works from this machine: sshd must answer there, the host key must be in known_hosts and a key must be offered (ssh-agent or IdentityFile)`;
}

/**
 * The flags of every ssh command baton runs that say how it reaches the host, which the
 * command it advises to run by hand repeats: never a prompt, the config file, the port.
 */
function reachFlags(target: SshTarget, options: SshHostOptions): string[] {
  return [
    "-o",
    "BatchMode=yes",
    ...(options.configFile === undefined ? [] : ["-F", options.configFile]),
    ...(target.port === undefined ? [] : ["-p", String(target.port)]),
  ];
}

/** The ssh options the user gave (`Key=Value`), each after its `-o`. */
function givenOptions(options: SshHostOptions): string[] {
  return (options.options ?? []).flatMap((option) => ["-o", option]);
}

/** Waits up to 2 s for the master `pid` to end, then kills it if it is still our master. */
async function stopMaster(pid: number, controlPath: string): Promise<void> {
  for (let waited = 0; waited < 2_000 && isMaster(pid, controlPath); waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (isMaster(pid, controlPath)) nodeProcs().signal(pid, "SIGKILL");
}
