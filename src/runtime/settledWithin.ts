import type { Clock } from "./ports.ts";

/**
 * Waits for `promise` (fulfilled or rejected), or `ms` on `clock`, whichever comes first; true
 * when `promise` settled first. The timer is cleared either way. On Node's clock it holds the
 * process open: a promise that can never settle (a handler awaiting one that nothing resolves)
 * would otherwise let Node end the process with code 13 while it waits.
 *
 * @example
 * ```ts
 * if (!(await settledWithin(Promise.all(exits), 5_000, clock))) signalAll("SIGTERM");
 * ```
 */
export async function settledWithin(
  promise: Promise<unknown>,
  ms: number,
  clock: Clock,
): Promise<boolean> {
  let timer: unknown;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = clock.setTimeout(() => resolve(false), ms);
    }),
  ]);
  clock.clearTimeout(timer);
  return settled;
}
