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
