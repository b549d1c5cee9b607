/**
 * A gate that runs the calls given to it with at most `limit` in flight and the rest in the
 * order they came. A finished call hands its slot straight to the next one waiting. The
 * waiting line may grow long (every result of a run, while the disk is slow), so it is an
 * array read from a moving head, compacted now and then, not `shift()`ed.
 *
 * @example
 * ```ts
 * const limit = inFlightLimit(4);
 * const texts = await Promise.all(paths.map((path) => limit(() => files.read(path))));
 * ```
 */
export function inFlightLimit(limit: number): <T>(call: () => Promise<T>) => Promise<T> {
  let active = 0;
  let waiting: (() => void)[] = [];
  let head = 0;
  const wakeNext = () => {
    if (head === waiting.length) {
      active--;
      return;
    }
    const wake = waiting[head++]!;
    // Let woken entries go: at once when the line is empty, else once they are half of it.
    if (head === waiting.length || (head > 1024 && head * 2 > waiting.length)) {
      waiting = waiting.slice(head);
      head = 0;
    }
    wake();
  };
  return async (call) => {
    if (active < limit) active++;
    else await new Promise<void>((wake) => waiting.push(wake));
    try {
      return await call();
    } finally {
      wakeNext();
    }
  };
}
