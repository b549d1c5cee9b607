import { ConfigError } from "../errors.ts";

/**
 * Refuses `value` for the option `name` of `where` unless it is an object with a function for
 * each of `methods`, with a `ConfigError` saying what it must be (`what`) and the first method
 * it lacks: such a value (a `console` as `logger`, a port of the wrong shape) was taken, and
 * the run it was given to rejected with a TypeError from inside baton
 * (`logger.child is not a function`).
 *
 * @example
 * ```ts
 * requireMethods("createEngine", "clock", {}, ["now", "setTimeout"], "a Clock, such as nodeClock()");
 * // ConfigError: createEngine: clock must be a Clock, such as nodeClock(); it has no now()
 * ```
 */
export function requireMethods(
  where: string,
  name: string,
  value: unknown,
  methods: readonly string[],
  what: string,
): void {
  const must = `${where}: ${name} must be ${what}`;
  if ((typeof value !== "object" && typeof value !== "function") || value === null) {
    throw new ConfigError(
      `${must}, not ${typeof value === "string" ? JSON.stringify(value) : String(value)}`,
    );
  }
  const missing = methods.find(
    (method) => typeof (value as Record<string, unknown>)[method] !== "function",
  );
  if (missing !== undefined) throw new ConfigError(`${must}; it has no ${missing}()`);
}
