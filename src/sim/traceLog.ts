import pino, { type Logger } from "pino";
import type { JobContext } from "../runtime/jobModule.ts";

/**
 * Your handlers' `ctx.log` in a simulation: each line at `info` or above becomes a line of the
 * trace, `log <job id> (<kind>) attempt <n> <level>: <message>` and its fields as JSON, at the
 * virtual time it was written. The engine's own logger stays silent (its lines would change
 * every seed's trace), so before this a handler's `ctx.log.info` went nowhere, and a person
 * reading the trace of a race could not add a note to it. No time, pid or host is logged:
 * they differ from run to run, and the trace line has the virtual time already.
 *
 * @example
 * ```ts
 * const lines: string[] = [];
 * const withLog = traceLog((line) => lines.push(line));
 * const handler = (input: number, ctx: JobContext) => ctx.log.info({ input }, "read balance");
 * // each handler runs as (input, ctx) => handler(input, withLog(ctx))
 * ```
 */
export function traceLog(add: (line: string) => void): (ctx: JobContext) => JobContext {
  const root = pino(
    { level: "info", base: undefined, timestamp: false },
    {
      write: (json: string) => {
        const { level, msg, job, kind, attempt, ...fields } = JSON.parse(json) as Record<
          string,
          unknown
        >;
        const rest = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : "";
        const name = pino.levels.labels[level as number] ?? String(level);
        add(`log ${job} (${kind}) attempt ${attempt} ${name}: ${msg ?? ""}${rest}`);
      },
    },
  );
  return (ctx) => {
    let log: Logger | undefined;
    // The handler's own ctx for everything else: its getters and methods keep their `this`.
    return new Proxy(ctx, {
      get: (target, property) => {
        if (property !== "log") return Reflect.get(target, property, target);
        log ??= root.child({ job: ctx.job.id, kind: ctx.job.kind, attempt: ctx.job.attempt });
        return log;
      },
    });
  };
}
