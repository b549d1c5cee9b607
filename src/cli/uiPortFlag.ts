import { ConfigError } from "../errors.ts";
import { wholeNumberFlag } from "./wholeNumberFlag.ts";

/**
 * The dashboard's port from `--ui-port` (`baton run`, `baton sim`, `baton launch`): 0 to
 * 65535, where 0 (also when the flag is absent) lets the system pick a free port. Anything
 * else is a `ConfigError` naming the flag, before anything runs; so is `--ui-port` without
 * `--ui`, when the command says whether it was given (`{ ui }`).
 *
 * @example
 * ```ts
 * uiPortFlag("8377"); // 8377
 * uiPortFlag(undefined); // 0
 * uiPortFlag("99999"); // ConfigError: --ui-port must be a TCP port from 0 to 65535, not "99999"
 * uiPortFlag("8377", { ui: false }); // ConfigError: --ui-port goes with --ui, …
 * ```
 */
export function uiPortFlag(text: string | undefined, given?: { ui: boolean }): number {
  if (text !== undefined && given?.ui === false) throw withoutUi("--ui-port");
  return wholeNumberFlag("--ui-port", text, "a TCP port", { least: 0, most: 65_535 }) ?? 0;
}

/**
 * The error for a dashboard flag given without `--ui`, which starts the dashboard.
 *
 * @example
 * ```ts
 * if (values["ui-keep"] && !values.ui) throw withoutUi("--ui-keep");
 * ```
 */
export function withoutUi(flag: string): ConfigError {
  return new ConfigError(
    `${flag} goes with --ui, which starts the dashboard: add --ui, or leave ${flag} out`,
  );
}

/**
 * The error for a port given to `--ui` (`baton run --ui 8080 graph.ts`, `baton sim --replay 3
 * --ui 8080`, `baton launch --ui 8080 -- cmd`): `--ui` takes no value, so the port came as a
 * positional, `readAs` (the graph module, or the ranks' command), which was said as two
 * graph modules, a module or seed `8080`, or a rank command `8080 cmd`. `undefined` when
 * there is none, or no `--ui`. `baton launch` passes the first word before its `--` only:
 * the words after it are the command's own arguments, which may be numbers.
 *
 * @example
 * ```ts
 * portGivenToUi(["8080", "graph.ts"], true); // ConfigError: --ui takes no value, … --ui-port 8080
 * portGivenToUi(["graph.ts"], true); // undefined
 * portGivenToUi(["8080"], true, "the ranks' command"); // ConfigError: … read as the ranks' command …
 * ```
 */
export function portGivenToUi(
  positionals: readonly string[],
  ui: boolean,
  readAs = "the graph module",
): ConfigError | undefined {
  const port = ui ? positionals.find((arg) => /^\d{1,5}$/.test(arg)) : undefined;
  return port === undefined
    ? undefined
    : new ConfigError(
        `--ui takes no value, so ${port} was read as ${readAs}: give the dashboard's port as --ui-port ${port}`,
      );
}
