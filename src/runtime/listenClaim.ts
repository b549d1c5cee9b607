import { ConfigError } from "../errors.ts";

/** A `listen` address whose port is 0 (`127.0.0.1:0`, `ws://[::1]:0/`): one free port per run. */
const ANY_PORT = /:0+\/?$/;

/** The hold one engine's runs take, one at a time, on the engine's fixed `listen` address. */
export interface ListenClaim {
  /** Takes the address for the run `run`, or throws a `ConfigError` naming the run holding it. */
  claim(run: string): void;
  /** Gives the address back, once the run that claimed it has closed its listener. */
  release(run: string): void;
}

/**
 * The claim on an engine's `listen` address: with a fixed port, the run that listens there
 * holds it until its listener is closed, and another run of the engine meanwhile is refused
 * before it tries to listen. A service that started runs at once was told `the port is in use;
 * pick another`, as if another program held it, where its own earlier run did. An address of
 * port 0, or none (each run its own), claims nothing.
 *
 * @example
 * ```ts
 * const claim = listenClaim("0.0.0.0:7000");
 * claim.claim("run-a");
 * claim.claim("run-b"); // ConfigError: … is held by run run-a of this engine until it ends, …
 * claim.release("run-a");
 * ```
 */
export function listenClaim(listen: string | undefined): ListenClaim {
  let holder: string | undefined;
  if (listen === undefined || ANY_PORT.test(listen)) return { claim() {}, release() {} };
  return {
    claim(run) {
      if (holder !== undefined) {
        throw new ConfigError(
          `createEngine's listen ${listen} is held by run ${holder} of this engine until it ends, and a fixed address takes one run at a time: await that run before starting the next, or listen on port 0 (a free port for each run) when no worker needs the address in advance`,
        );
      }
      holder = run;
    },
    release(run) {
      if (holder === run) holder = undefined;
    },
  };
}
