import { parseArgs } from "node:util";
import { ConfigError, RankGroupError, TeardownError } from "../errors.ts";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import { launchGroup } from "../runtime/launchGroup.ts";
import { createLogger, LOG_LEVELS, type LogLevel } from "../runtime/logger.ts";

export const LAUNCH_USAGE = `usage: baton launch --world N [options] -- command [args…]

Starts N ranks of the command on this machine, like torchrun, and waits for them. Each rank
gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (a free port),
BATON_DEPLOYMENT, BATON_STATE_DIR and BATON_LAUNCHER_PID, and writes its output to
STATE_DIR/DEPLOYMENT/rank-R.log. Orphans of launchers that died are reaped first.

  --world N            number of ranks (required)
  --state-dir DIR      state directory (default: ${DEFAULT_STATE_DIR})
  --name NAME          deployment name (default: dep- and 12 random characters)
  --grace-ms MS        after SIGTERM, how long ranks get before SIGKILL (default 10000)
  --load-timeout-ms MS every rank must be ready within this (default 1800000: 30 min)
  --log-level L        ${LOG_LEVELS.join(" | ")} (default: warn)
  -h, --help           this help

Exit code: 0 when every rank exited 0; the first failing rank's code (128 + the signal's
number when it was killed) when one failed, after the others were stopped; 1 when the
launch failed or the ranks could not all be stopped; 2 for bad usage; 130 / 143 after
SIGINT / SIGTERM, once every rank is verified gone (Ctrl-C stops the ranks; it never leaves
one behind).`;

/**
 * `baton launch --world N -- cmd args…`: launches a rank group, reports where its logs are,
 * and exits with the group's code. SIGINT and SIGTERM stop the group with a verified
 * teardown before the command returns.
 *
 * @example
 * ```ts
 * process.exitCode = await launchCommand(["--world", "2", "--", "python3", "train.py"]);
 * ```
 */
export async function launchCommand(argv: string[]): Promise<number> {
  const split = argv.indexOf("--");
  const own = split === -1 ? argv : argv.slice(0, split);
  const { values, positionals } = parseOptions(own);
  if (values.help) {
    process.stdout.write(`${LAUNCH_USAGE}\n`);
    return 0;
  }
  const command = split === -1 ? positionals : [...positionals, ...argv.slice(split + 1)];
  if (command.length === 0) {
    throw new ConfigError(`baton launch needs a command after --\n\n${LAUNCH_USAGE}`);
  }
  const world = Number(values.world);
  if (values.world === undefined || !Number.isInteger(world) || world < 1) {
    throw new ConfigError(
      `--world must be a whole number of at least 1, not "${values.world ?? ""}"`,
    );
  }
  const level = values["log-level"] as LogLevel;
  if (!LOG_LEVELS.includes(level)) {
    throw new ConfigError(`--log-level must be one of ${LOG_LEVELS.join(", ")}, not "${level}"`);
  }
  const graceMs = milliseconds("--grace-ms", values["grace-ms"]);
  const loadTimeoutMs = milliseconds("--load-timeout-ms", values["load-timeout-ms"]);
  const group = launchGroup({
    argv: command,
    worldSize: world,
    ...(values["state-dir"] !== undefined && { stateDir: values["state-dir"] }),
    ...(values.name !== undefined && { name: values.name }),
    ...(graceMs !== undefined && { teardown: { termGraceMs: graceMs } }),
    ...(loadTimeoutMs !== undefined && { timeouts: { loadTimeoutMs } }),
    logger: createLogger({ level }),
  });
  const say = (line: string) => process.stderr.write(`baton launch: ${line}\n`);
  say(
    `deployment ${group.deployment}: ${world} rank${world === 1 ? "" : "s"} of ${command.join(" ")}; logs in ${group.dir}/rank-*.log`,
  );
  group.ready.then(
    () => say(`all ${world} ranks ready`),
    () => {},
  );

  let signalled: "SIGINT" | "SIGTERM" | undefined;
  let stopping: Promise<unknown> | undefined;
  const onSignal = (signal: "SIGINT" | "SIGTERM") => {
    if (signalled !== undefined) {
      say(`${signal}: still stopping the ranks (a teardown is verified before baton exits)`);
      return;
    }
    signalled = signal;
    say(`${signal}: stopping every rank of ${group.deployment}`);
    stopping = group.stop(`${signal} to the launcher`).catch((error: unknown) => error);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const exit = await group.wait();
    if (signalled !== undefined) {
      await stopping;
      say(`stopped; every rank is gone (verified in ${exit.teardown.elapsedMs} ms)`);
      return signalled === "SIGINT" ? 130 : 143;
    }
    say(`every rank exited 0`);
    return 0;
  } catch (error) {
    if (error instanceof TeardownError) {
      say(error.message);
      return 1;
    }
    if (!(error instanceof RankGroupError)) throw error;
    if (error.code === "STOPPED" || signalled !== undefined) {
      const stopped = await stopping;
      if (stopped instanceof Error) {
        say(stopped.message);
        return 1;
      }
      return signalled === "SIGTERM" ? 143 : 130;
    }
    say(`${error.message} [${error.code}]`);
    return error.details.exitCode ?? 1;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        world: { type: "string" },
        "state-dir": { type: "string" },
        name: { type: "string" },
        "grace-ms": { type: "string" },
        "load-timeout-ms": { type: "string" },
        "log-level": { type: "string", default: "warn" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (error) {
    throw new ConfigError(
      `${(error as Error).message}; put the command after -- (baton launch --world 2 -- cmd --its-flags)\n\n${LAUNCH_USAGE}`,
    );
  }
}

/** A duration flag: a whole number of ms ≥ 1, or undefined when absent. */
function milliseconds(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigError(`${flag} must be a whole number of milliseconds ≥ 1, not "${text}"`);
  }
  return value;
}
