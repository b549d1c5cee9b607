import { createHmac, timingSafeEqual } from "node:crypto";
import type { ProtocolRange } from "./protocolVersion.ts";

/**
 * Mutual authentication over a per-run secret that never crosses the wire. The worker
 * proves it knows the secret with an HMAC over the coordinator's fresh challenge nonce,
 * bound to the protocol range it offers and its worker name; the coordinator answers with
 * an HMAC over the same nonce and the worker's proof. A recorded answer is useless on
 * another connection, whose nonce differs. Comparisons are constant-time.
 *
 * @example
 * ```ts
 * const proof = workerProof(secret, challenge.nonce, PROTOCOL, "w-1");
 * verifyWorkerProof(secret, challenge.nonce, PROTOCOL, "w-1", proof); // true
 * ```
 */
export function workerProof(
  secret: Uint8Array,
  nonce: string,
  protocol: ProtocolRange,
  worker: string,
): string {
  return hmac(secret, `baton worker\n${nonce}\n${protocol[0]}..${protocol[1]}\n${worker}`);
}

/** The coordinator's answer to a worker's proof (the second half of mutual auth). */
export function coordinatorProof(
  secret: Uint8Array,
  nonce: string,
  workerProofHex: string,
): string {
  return hmac(secret, `baton coordinator\n${nonce}\n${workerProofHex}`);
}

export function verifyWorkerProof(
  secret: Uint8Array,
  nonce: string,
  protocol: ProtocolRange,
  worker: string,
  proof: string,
): boolean {
  return sameHex(workerProof(secret, nonce, protocol, worker), proof);
}

export function verifyCoordinatorProof(
  secret: Uint8Array,
  nonce: string,
  workerProofHex: string,
  proof: string,
): boolean {
  return sameHex(coordinatorProof(secret, nonce, workerProofHex), proof);
}

function hmac(secret: Uint8Array, message: string): string {
  return createHmac("sha256", secret).update(message).digest("hex");
}

function sameHex(expected: string, given: string): boolean {
  const a = Buffer.from(expected, "utf8");
  const b = Buffer.from(given, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}
