import { createServer } from "node:net";

/**
 * A TCP port that was free on `host` a moment ago: the kernel's choice for a listener bound
 * to port 0, closed again before returning. Ranks use it as `MASTER_PORT`; like torchrun's
 * own choice, another program could take it in between, which the ranks then report.
 *
 * @example
 * ```ts
 * const port = await freePort(); // 41873
 * ```
 */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
