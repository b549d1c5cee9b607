import { resolve } from "node:path";
import { WILDCARD_HOSTS } from "../runtime/coordinatorAddress.ts";
import type { ListeningEvent } from "../runtime/run.ts";
import { shellQuote } from "../runtime/shellQuote.ts";
import { parseListenAddress } from "../runtime/wsNet.ts";

export interface JoinHintOptions {
  /** The run's own workers run their handlers on a thread of their own. */
  handlerThread?: boolean;
  /** The run's own workers' `--abort-grace`, as given. */
  abortGrace?: string | undefined;
  /** The address and secret outlast the run (`--listen` and `--secret-file` both given). */
  lasting?: boolean;
  /** Where workers elsewhere reach the run (`--connect`), in place of where it listens. */
  connect?: string | undefined;
}

/**
 * What `baton run` prints when workers are meant to join it (`--workers 0` or `--listen`):
 * the `baton worker` command that joins this run, with the absolute paths of its secret file
 * and job module, and `--handler-thread` and `--abort-grace` when the run's own workers have
 * them; when the address
 * and secret outlast the run, that `--retry-for` keeps a worker for the run started again. The
 * secret itself is never printed. It names the address listened on (`listenAddress`), and for
 * a wildcard host says what a worker on another machine puts in its place.
 *
 * @example
 * ```ts
 * joinHint({ listenAddress: "ws://127.0.0.1:7000", secretFile: ".baton/run/x.secret" }, "jobs.ts");
 * // workers join this run with:
 * //   baton worker --connect 'ws://127.0.0.1:7000' --secret-file '/home/me/.baton/run/x.secret' --jobs '/home/me/jobs.ts'
 * ```
 */
export function joinHint(
  { listenAddress: address, secretFile }: Pick<ListeningEvent, "listenAddress" | "secretFile">,
  jobsPath: string,
  { handlerThread = false, abortGrace, lasting = false, connect }: JoinHintOptions = {},
): string {
  if (secretFile === undefined) return "";
  const command = [
    "baton worker --connect",
    shellQuote(connect ?? address),
    "--secret-file",
    shellQuote(resolve(secretFile)),
    "--jobs",
    shellQuote(resolve(jobsPath)),
    ...(handlerThread ? ["--handler-thread"] : []),
    ...(abortGrace !== undefined ? ["--abort-grace", shellQuote(abortGrace)] : []),
  ].join(" ");
  const { host } = parseListenAddress(address);
  const elsewhere =
    connect === undefined && WILDCARD_HOSTS.has(host)
      ? `  (from another machine, put this machine's name or address in place of ${host} (or give baton run --connect HOST:PORT), and copy the secret file there with mode 0600)\n`
      : "";
  const again = lasting
    ? "  (add --retry-for DURATION, such as 1h, and a worker waits for this run, and rejoins it when it is started again)\n"
    : "";
  return `workers join this run with:\n  ${command}\n${elsewhere}${again}`;
}
