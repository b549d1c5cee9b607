/**
 * `baton run` signalled once its run has failed (its local workers cannot load the job
 * module): nothing is left to cancel or write, it says so, and it exits 1 as the failed run
 * would have. The signal is sent as the dashboard closes (`--ui`), which happens only after
 * the failure was said, and which waits up to 1 s for a page that does not answer: a raw
 * WebSocket page here, which never does. Real processes, stopped by pid when the test ends.
 */
import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { stderrMatches } from "../fixtures/stderrMatches.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { within } from "../fixtures/within.ts";

const URL_LINE = /dashboard: http:\/\/127\.0\.0\.1:(\d+)(\/[\w-]+\/)/;
const sockets: Socket[] = [];

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  stopBatons();
});

/**
 * A dashboard page that never answers a close: resolves once the server has sent its close
 * frame (opcode 8), reading the unmasked frames a server sends one after the other.
 */
function pageUntilClosed(port: number, path: string): Promise<void> {
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  socket.write(
    `GET ${path}ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    let upgraded = false;
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!upgraded) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        if (!buffered.subarray(0, end).toString().startsWith("HTTP/1.1 101")) {
          reject(new Error(`no upgrade: ${buffered.subarray(0, end)}`));
          return;
        }
        upgraded = true;
        buffered = buffered.subarray(end + 4);
      }
      for (;;) {
        if (buffered.length < 2) return;
        const opcode = buffered[0]! & 0x0f;
        const short = buffered[1]! & 0x7f;
        const head = short === 126 ? 4 : short === 127 ? 10 : 2;
        if (buffered.length < head) return;
        const length =
          short === 126
            ? buffered.readUInt16BE(2)
            : short === 127
              ? Number(buffered.readBigUInt64BE(2))
              : short;
        if (opcode === 8) {
          resolve();
          return;
        }
        if (buffered.length < head + length) return;
        buffered = buffered.subarray(head + length);
      }
    });
  });
}

describe("baton run signalled once its run has failed", () => {
  it("says there is nothing to cancel or write, and exits 1, not 130", async () => {
    const baton = startBaton(
      [
        "run",
        "test/fixtures/workersCannotLoad.graph.ts",
        "--workers",
        "1",
        "--ui",
        "--store",
        tempDir(),
      ],
      // Time for the page to connect before the run fails.
      { env: { BATON_TEST_LOAD_DELAY_MS: "3000" } },
    );
    const [, port, path] = await stderrMatches(baton.stderr, URL_LINE, 60_000);
    const closed = pageUntilClosed(Number(port), path!);
    await within(closed, 60_000, `the dashboard closing (stderr: ${baton.stderr()})`);
    expect(baton.stderr()).toContain("baton run: the run failed: ");
    process.kill(baton.child.pid!, "SIGINT");

    const { code, signal, stderr } = await within(baton.exit, 30_000, "baton exiting");

    expect({ code, signal }).toEqual({ code: 1, signal: null });
    expect(stderr).toContain(
      "\nSIGINT: the run has already failed, so there is nothing to cancel and no result to write; baton exits with the failure's code once it has let go of the run's lock and logs (Ctrl-C again to stop now)\n",
    );
    expect(stderr).not.toContain("once the result is written");
  }, 120_000);
});
