/**
 * The exit code of a command stopped by a signal it handles: 128 + the signal's number, as a
 * shell reports a process the signal killed.
 *
 * @example
 * ```ts
 * process.on("SIGTERM", () => process.exit(SIGNAL_EXIT.SIGTERM)); // 143
 * ```
 */
export const SIGNAL_EXIT = { SIGHUP: 129, SIGINT: 130, SIGQUIT: 131, SIGTERM: 143 } as const;

/**
 * The signals on which a command stops what it started before it exits, as on Ctrl-C: `baton
 * launch` its group (verified), `baton run` its run and local workers, `baton worker` its job. Node's
 * default for a hang-up (the terminal closed, the ssh session dropped) and for Ctrl-\ is to
 * end at once, which left the processes started in process groups of their own (ranks, local
 * workers) running, out of the terminal's reach; torchrun stops its workers on all four. Node
 * resets an ignored SIGHUP at its start, so `nohup` never kept a baton alive through a hang-up
 * either.
 *
 * @example
 * ```ts
 * for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
 * ```
 */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];
