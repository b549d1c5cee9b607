import * as crypto from "node:crypto";

/**
 * `sha256Hex` made with `hash`, Node's one-call `crypto.hash` (Node 20.12 on), or without it
 * (older Node 20, which baton also runs on): a `Hash` object per call then. Both give the same
 * digest; the one call makes no `Hash` object, which planning a 100,000-job graph made one of
 * per job.
 *
 * @example
 * ```ts
 * sha256HexWith(undefined)("abc") === sha256HexWith(crypto.hash)("abc"); // true
 * ```
 */
export function sha256HexWith(hash: typeof crypto.hash | undefined): (text: string) => string {
  if (hash === undefined) {
    return (text) => crypto.createHash("sha256").update(text).digest("hex");
  }
  return (text) => hash("sha256", text, "hex");
}

/**
 * The SHA-256 of `text`'s UTF-8 bytes as 64 hex digits, with `crypto.hash` where this Node
 * has it (see {@link sha256HexWith}).
 *
 * @example
 * ```ts
 * sha256Hex("abc"); // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
 * ```
 */
export const sha256Hex = sha256HexWith((crypto as { hash?: typeof crypto.hash }).hash);
