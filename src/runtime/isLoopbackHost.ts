// Its own file, with no import: sshTarget.ts (which baton reap loads) asks it too, and
// coordinatorAddress.ts brings the WebSocket Net along (startupModules.test).
/**
 * Whether `host` (a name or an address, IPv6 without brackets) is this machine's loopback:
 * 127.0.0.0/8, ::1, localhost. A host name is not resolved.
 *
 * @example
 * ```ts
 * isLoopbackHost("localhost"); // true
 * isLoopbackHost("gpu-2"); // false
 * ```
 */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
