/**
 * Some of `T`'s fields, given to replace their defaults: each is optional and takes
 * `undefined`, which keeps the default as leaving the field out does. Unlike `Partial<T>`,
 * it takes `{ pollMs: maybeMs }` in a project compiled with `exactOptionalPropertyTypes`.
 *
 * @example
 * ```ts
 * const timeouts: Overrides<TeardownTimeouts> = { termGraceMs: 5_000, pollMs: undefined };
 * ```
 */
export type Overrides<T> = { [K in keyof T]?: T[K] | undefined };

/**
 * The fields of `overrides` that hold a value, to spread over the defaults: spread as they
 * are, a field given as `undefined` would replace its default with `undefined`.
 *
 * @example
 * ```ts
 * const timeouts = { ...DEFAULT_TEARDOWN_TIMEOUTS, ...givenOverrides({ pollMs: undefined }) };
 * timeouts.pollMs; // DEFAULT_TEARDOWN_TIMEOUTS.pollMs
 * ```
 */
export function givenOverrides<T extends object>(overrides: Overrides<T>): Partial<T> {
  return Object.fromEntries(
    Object.entries(overrides).filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}
