/**
 * A connection registered under a worker's name, as the runtime tells the connection machine
 * of it with a hello that gives the same name: its link's id and the instance its own hello
 * gave (protocol version 7 on; `undefined` for an older worker).
 *
 * @example
 * ```ts
 * const holder: NameHolder = { conn: "c1", instance: "V1StGXR8_Z5jdHi6B-myT" };
 * ```
 */
export interface NameHolder {
  conn: string;
  instance: string | undefined;
}

/**
 * What a hello under a name does to the connections registered under it: `free`, it joins
 * beside them (no one holds the name, or one of the two sides gave no instance, so the two
 * cannot be told apart, as before protocol version 7); `replaces`, it comes from the same
 * worker process as connection `conn`, which it replaces (that worker connected again after
 * losing the old connection unseen); `taken`, another worker process holds the name.
 *
 * @example
 * ```ts
 * const claim: NameClaim = { kind: "replaces", conn: "c1" };
 * ```
 */
export type NameClaim = { kind: "free" } | { kind: "replaces"; conn: string } | { kind: "taken" };

/**
 * Decides what a hello giving `instance` (`undefined` for a worker older than protocol 7) does
 * under a name that `holders` are registered under. Pure: the connection machine guards on it.
 *
 * @example
 * ```ts
 * claimName("i-2", [{ conn: "c1", instance: "i-2" }]); // { kind: "replaces", conn: "c1" }
 * claimName("i-3", [{ conn: "c1", instance: "i-2" }]); // { kind: "taken" }
 * claimName(undefined, [{ conn: "c1", instance: "i-2" }]); // { kind: "free" }
 * ```
 */
export function claimName(instance: string | undefined, holders: readonly NameHolder[]): NameClaim {
  if (instance === undefined) return { kind: "free" };
  const same = holders.find((holder) => holder.instance === instance);
  if (same !== undefined) return { kind: "replaces", conn: same.conn };
  return holders.some((holder) => holder.instance !== undefined)
    ? { kind: "taken" }
    : { kind: "free" };
}
