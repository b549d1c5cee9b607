/**
 * How the simulation's runner waits, between two steps, for what a step set off to settle:
 * every microtask queued so far, and every one they queue, has run.
 */

/**
 * Waits for the next turn of the event loop (a `setImmediate`): every microtask and tick has
 * run, and so has whatever else was due, real timers and I/O included. Correct from anywhere.
 */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Waits until every microtask queued so far, and every one they queue, has run, without
 * leaving the turn of the event loop: Node runs `process.nextTick` callbacks only once the
 * microtask queue is empty, so a tick queued from a microtask runs after all of them. Called
 * from anywhere but a microtask (a timer or I/O callback, a module's top level) the tick runs
 * first and the microtasks already queued after it: wait with `nextTurn` there. Ticks,
 * immediates, timers and I/O that others start are not waited for, nor does Node look for
 * unhandled rejections until the queue of ticks is empty.
 *
 * @example
 * ```ts
 * await nextTurn(); // from here on this function runs in a microtask
 * for (let i = 0; i < 3; i++) {
 *   void Promise.resolve().then(() => Promise.resolve()); // work that queues more work
 *   await microtasksSettled(); // all of it has run
 * }
 * ```
 */
export const microtasksSettled = (): Promise<void> =>
  new Promise<void>((resolve) => process.nextTick(resolve));

/**
 * Waits, as `microtasksSettled` does, and also until every tick that code queues, and every
 * microtask those ticks lead to, has run: as a turn of the event loop would, without the turn.
 * `ticked()` says whether that code queued a tick since it was last asked. Node runs every
 * queued tick before the microtasks they queue, so the runner's own tick can run in one batch
 * with another's, and the runner's continuation between that tick's microtasks (a handler
 * whose `await` of a tick ends an async function it was awaited in): the wait is over only
 * once one whole wait saw no tick queued, nor the one before it.
 *
 * @example
 * ```ts
 * let ticked = false;
 * const tickQueued = () => {
 *   const was = ticked;
 *   ticked = false;
 *   return was;
 * };
 * await nextTurn();
 * process.nextTick(() => void Promise.resolve().then(() => Promise.resolve()));
 * ticked = true;
 * await ticksSettled(tickQueued); // the tick, and every microtask after it, has run
 * ```
 */
export async function ticksSettled(ticked: () => boolean): Promise<void> {
  await microtasksSettled();
  for (let quiet = true; ; ) {
    const queued = ticked();
    if (!queued && quiet) return;
    quiet = !queued;
    await microtasksSettled();
  }
}
