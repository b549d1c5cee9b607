import { RemoteHostError } from "../errors.ts";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import type { SshHost } from "./sshHost.ts";

/**
 * The absolute root state dir `S` on a remote host, which remote ranks get as
 * `BATON_STATE_DIR`: `dir` itself when absolute, else `dir` (default `.baton/run`) under the
 * remote user's home directory, asked from the host once.
 *
 * @example
 * ```ts
 * await remoteStateDir(host);            // "/home/alice/.baton/run"
 * await remoteStateDir(host, "/scratch/run"); // "/scratch/run"
 * ```
 */
export async function remoteStateDir(host: SshHost, dir?: string): Promise<string> {
  if (dir?.startsWith("/")) return dir;
  const { code, stdout, stderr } = await host.run('printf %s "$HOME"');
  const home = stdout.toString("utf8");
  if (code !== 0 || !home.startsWith("/")) {
    throw new RemoteHostError(
      "SSH_REMOTE",
      `${host.target.spec}: cannot find the remote home directory (${stderr.trim() || `got ${JSON.stringify(home)}`}); give an absolute remote state dir`,
      host.target.spec,
    );
  }
  return `${home.replace(/\/+$/, "")}/${dir ?? DEFAULT_STATE_DIR}`;
}
