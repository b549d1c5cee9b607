import { RemoteHostError } from "../errors.ts";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import { requireStateDir } from "../rank/requireStateDir.ts";
import { requireSshHost } from "./requireSshHost.ts";
import type { SshHost } from "./sshHost.ts";

/** What a remote state dir must be, as a refusal of anything else says. */
export const A_REMOTE_STATE_DIR =
  'the root state dir on the host, absolute or under the remote home (such as "/scratch/run", or undefined for DEFAULT_STATE_DIR there)';

/**
 * The absolute root state dir `S` on a remote host, which remote ranks get as
 * `BATON_STATE_DIR`: `stateDir` itself when absolute, else `stateDir` (default `.baton/run`)
 * under the remote user's home directory, asked from the host once. A host that is no
 * `SshHost`, or an empty state dir (which was the remote home itself), is a `ConfigError`.
 *
 * @example
 * ```ts
 * await remoteStateDir(host);            // "/home/alice/.baton/run"
 * await remoteStateDir(host, "/scratch/run"); // "/scratch/run"
 * ```
 */
export async function remoteStateDir(host: SshHost, stateDir?: string): Promise<string> {
  requireSshHost("remoteStateDir", "host", host, ["run"]);
  if (stateDir !== undefined) requireStateDir("remoteStateDir", stateDir, A_REMOTE_STATE_DIR);
  if (stateDir?.startsWith("/")) return stateDir;
  const { code, stdout, stderr } = await host.run('printf %s "$HOME"');
  const home = stdout.toString("utf8");
  if (code !== 0 || !home.startsWith("/")) {
    throw new RemoteHostError(
      "SSH_REMOTE",
      `${host.target.spec}: cannot find the remote home directory (${stderr.trim() || `got ${JSON.stringify(home)}`}); give an absolute remote state dir`,
      host.target.spec,
    );
  }
  return `${home.replace(/\/+$/, "")}/${stateDir ?? DEFAULT_STATE_DIR}`;
}
