import { isThenable } from "../runtime/isThenable.ts";
import type { JobModule } from "../runtime/jobModule.ts";
import { onAbort } from "../runtime/onAbort.ts";
import { mapHandlers } from "./mapHandlers.ts";

/**
 * `module` whose handlers say, in a trace note, when one ends at a later virtual time than its
 * attempt was aborted: `<job> (<kind>) attempt <n>: its handler ended <M> ms after its abort
 * (<reason>)`. A timed-out attempt, or one whose worker lost its connection, is given up by the
 * coordinator at once, but its handler runs on in the worker until it notices its AbortSignal
 * (or ends without looking), as a real one does: a timed-out attempt's worker sends its result,
 * and takes its next job, only then, and a lost worker rejoins only then. The trace showed
 * the late result or reconnection with nothing to say why they waited.
 * The handler's value and timing are untouched: the note is taken beside the promise the
 * worker awaits, and an abort listener only reads the clock. The listener is the runner's
 * {@link onAbort} hook: a handler that never reads `ctx.signal` gets no AbortController for it.
 *
 * @example
 * ```ts
 * loadJobs(noteAbandonedHandlers(simJobs(tools), trace.note, () => clock.now()));
 * ```
 */
export function noteAbandonedHandlers(
  module: JobModule,
  note: (note: string) => void,
  now: () => number,
): JobModule {
  return mapHandlers(module, (kind, run) => (input, ctx) => {
    const value = run(input, ctx);
    if (!isThenable(value)) return value;
    let abortedAt: number | undefined;
    let reason: unknown;
    const watching = onAbort(ctx, (why) => {
      abortedAt = now();
      reason = why;
    });
    if (!watching) return value;
    const ended = () => {
      if (abortedAt === undefined || now() === abortedAt) return;
      const why = reason instanceof Error ? reason.message : String(reason);
      note(
        `${ctx.job.id} (${kind}) attempt ${ctx.job.attempt}: its handler ended ${now() - abortedAt} ms after its abort (${why})`,
      );
    };
    void Promise.resolve(value).then(ended, ended);
    return value;
  });
}
