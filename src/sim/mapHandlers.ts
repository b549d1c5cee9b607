import type { Handler, HandlerDefinition, JobModule } from "../runtime/jobModule.ts";

/**
 * `module` with each handler (a function, or a definition's `run`) replaced by what `wrap`
 * makes of it; other entries kept as they are, for `loadJobs` to refuse or take. What the
 * simulation puts around your handlers and the drawn ones (`RealWorkWatch.wrap`,
 * `noteAbandonedHandlers`).
 *
 * @example
 * ```ts
 * mapHandlers({ double: (n: number) => n * 2 }, (kind, run) => (input, ctx) => run(input, ctx));
 * ```
 */
export function mapHandlers(
  module: JobModule,
  wrap: (kind: string, run: Handler) => Handler,
): JobModule {
  return Object.fromEntries(
    Object.entries(module).map(([kind, entry]) => {
      if (typeof entry === "function") return [kind, wrap(kind, entry)];
      if (
        typeof entry === "object" &&
        entry !== null &&
        typeof Reflect.get(entry, "run") === "function"
      )
        return [kind, { ...entry, run: wrap(kind, (entry as HandlerDefinition).run) }];
      return [kind, entry];
    }),
  );
}
