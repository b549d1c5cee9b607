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
