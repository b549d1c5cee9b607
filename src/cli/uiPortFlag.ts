import { wholeNumberFlag } from "./wholeNumberFlag.ts";

/**
 * The dashboard's port from `--ui-port` (`baton run`, `baton sim`): 0 to 65535, where 0 (also
 * when the flag is absent) lets the system pick a free port. Anything else is a `ConfigError`
 * naming the flag, before anything runs.
 *
 * @example
 * ```ts
 * uiPortFlag("8377"); // 8377
 * uiPortFlag(undefined); // 0
 * uiPortFlag("99999"); // ConfigError: --ui-port must be a TCP port from 0 to 65535, not "99999"
 * ```
 */
export function uiPortFlag(text: string | undefined): number {
  return wholeNumberFlag("--ui-port", text, "a TCP port", { least: 0, most: 65_535 }) ?? 0;
}
