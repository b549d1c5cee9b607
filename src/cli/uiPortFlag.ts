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
 * The error for a port given to `--ui` (`baton run --ui 8080 graph.ts`): `--ui` takes no
 * value, so the port came as a graph module, which was said as two graph modules or as a
 * module `8080` that does not exist. `undefined` when there is none, or no `--ui`.
 *
 * @example
 * ```ts
 * portGivenToUi(["8080", "graph.ts"], true); // ConfigError: --ui takes no value, … --ui-port 8080
 * portGivenToUi(["graph.ts"], true); // undefined
 * ```
 */
export function portGivenToUi(
  positionals: readonly string[],
  ui: boolean,
): ConfigError | undefined {
  const port = ui ? positionals.find((arg) => /^\d{1,5}$/.test(arg)) : undefined;
  return port === undefined
    ? undefined
    : new ConfigError(
        `--ui takes no value, so ${port} was read as the graph module: give the dashboard's port as --ui-port ${port}`,
      );
}
