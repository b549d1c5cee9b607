import { ConfigError } from "../errors.ts";

/**
 * A site's claim on an ssh host found this launch's own mirrored lease there (its token): an
 * earlier entry of `hosts` reached the same machine, user and state dir under another name
 * (`gpu-2` and its address, `alice@gpu-2` and `gpu-2` as alice). Not retryable (a
 * `ConfigError`): every launch with those hosts meets it again. It carries the host spec and
 * state dir, so that the launcher can name the other entry (`launchGroup`).
 *
 * @example
 * ```ts
 * throw new HostNamedTwice("ssh://alice@10.0.0.2", "/home/alice/.baton/run", "w6");
 * ```
 */
export class HostNamedTwice extends ConfigError {
  constructor(
    /** The host spec whose site found the lease. */
    readonly host: string,
    /** The root state dir there, as the site resolved it. */
    readonly stateDir: string,
    deployment: string,
  ) {
    super(
      `${host}: deployment ${deployment}'s state dir ${stateDir} there holds this launch's own lease already: another entry of --hosts (hosts) reaches this same machine and user under another name. List each machine once in --hosts, under one name`,
    );
  }
}
