import { resolve } from "node:path";
import type { ListeningEvent } from "../runtime/run.ts";
import { shellQuote } from "../runtime/shellQuote.ts";

export interface JoinHintOptions {
  /** The run's own workers run their handlers on a thread of their own. */
  handlerThread?: boolean;
  /** The run's own workers' `--abort-grace`, as given. */
  abortGrace?: string | undefined;
  /** The address and secret outlast the run (`--listen` and `--secret-file` both given). */
  lasting?: boolean;
  /** Where workers elsewhere reach the run (`--connect`), in place of where it listens. */
  connect?: string | undefined;
  /** How a shell runs this baton (`batonCommand()`: `baton`, or its path); default `baton`. */
  baton?: string | undefined;
}

/**
 * Where workers join a `baton run` that listens as `listening` says: `--connect` when given,
 * else the address a worker on this or another machine connects to (`address`: this host's
 * name in place of a wildcard); `listenAddress`, the address as bound, only when it is not
 * that one (`ws://0.0.0.0:7000`, for a run listening on every interface). What the run's join
 * command names and what its graph lock tells `baton status`.
 *
 * @example
 * ```ts
 * joinAddress({ address: "ws://login1:7000", listenAddress: "ws://0.0.0.0:7000" });
 * // { address: "ws://login1:7000", listenAddress: "ws://0.0.0.0:7000" }
 * joinAddress({ address: "ws://login1:7000", listenAddress: "ws://0.0.0.0:7000" }, "login1.ib:7000");
 * // { address: "login1.ib:7000" }
 * ```
 */
export function joinAddress(
  { address, listenAddress }: Pick<ListeningEvent, "address" | "listenAddress">,
  connect?: string | undefined,
): { address: string; listenAddress?: string } {
  if (connect !== undefined) return { address: connect };
  return listenAddress === address ? { address } : { address, listenAddress };
}

/**
 * What `baton run` prints when workers are meant to join it (`--workers 0` or `--listen`):
 * the `baton worker` command that joins this run (`baton` as `batonCommand()` names it: the
 * path of this baton when the shell's `baton` is not this one), with the absolute paths of its
 * secret file and job module, and `--handler-thread` and `--abort-grace` when the run's own workers have
 * them; when the address
 * and secret outlast the run, that `--retry-for` keeps a worker for the run started again. The
 * secret itself is never printed. It names the address a worker connects to (`joinAddress`:
 * this machine's name in place of a wildcard host), and for a run listening on every
 * interface says so, with what a worker that knows this machine by another name gives.
 *
 * @example
 * ```ts
 * joinHint({ address: "ws://127.0.0.1:7000", listenAddress: "ws://127.0.0.1:7000", secretFile: ".baton/run/x.secret" }, "jobs.ts");
 * // workers join this run with:
 * //   baton worker --connect 'ws://127.0.0.1:7000' --secret-file '/home/me/.baton/run/x.secret' --jobs '/home/me/jobs.ts'
 * ```
 */
export function joinHint(
  listening: Pick<ListeningEvent, "address" | "listenAddress" | "secretFile">,
  jobsPath: string,
  {
    handlerThread = false,
    abortGrace,
    lasting = false,
    connect,
    baton = "baton",
  }: JoinHintOptions = {},
): string {
  const { secretFile } = listening;
  if (secretFile === undefined) return "";
  const { address, listenAddress } = joinAddress(listening, connect);
  const command = [
    `${baton} worker --connect`,
    shellQuote(address),
    "--secret-file",
    shellQuote(resolve(secretFile)),
    "--jobs",
    shellQuote(resolve(jobsPath)),
    ...(handlerThread ? ["--handler-thread"] : []),
    ...(abortGrace !== undefined ? ["--abort-grace", shellQuote(abortGrace)] : []),
  ].join(" ");
  const elsewhere =
    listenAddress === undefined
      ? ""
      : `  (it listens on every interface, ${listenAddress}: from a machine that knows this one by another name or address, connect to that (or give baton run --connect HOST:PORT); copy the secret file there with mode 0600)\n`;
  const again = lasting
    ? "  (add --retry-for DURATION, such as 1h, and a worker waits for this run, and rejoins it when it is started again)\n"
    : "";
  return `workers join this run with:\n  ${command}\n${elsewhere}${again}`;
}
