/**
 * `baton sim --replay S --ui` holds the dashboard's port before it simulates: a port that is
 * out of range or taken is a `ConfigError` at once, and the seed is not simulated for nothing.
 */
import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { simDashboard } from "../../src/cli/simDashboard.ts";
import { ConfigError } from "../../src/errors.ts";
import { DashboardServer } from "../../src/runtime/dashboardServer.ts";

let taken: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (taken ? taken.close(resolve) : resolve(undefined)));
  taken = undefined;
});

describe("the dashboard's port", () => {
  it("out of range: DashboardServer.start rejects with a ConfigError, not a RangeError", async () => {
    const start = DashboardServer.start({ port: 99_999 });
    await expect(start).rejects.toThrow(ConfigError);
    await expect(start).rejects.toThrow(
      "DashboardServer.start: port must be a whole number from 0 to 65535, not 99999",
    );
  });

  it("given under a name it does not take: DashboardServer.start rejects, listing its options", async () => {
    // `{ prot: 8080 }` used to start on a random port without a word.
    await expect(DashboardServer.start({ prot: 8080 } as never)).rejects.toThrow(
      "DashboardServer.start: unknown option prot; it takes port, maxUpdatesPerSecond, replay, clock, entropy, logger",
    );
  });

  it("taken: simDashboard fails before it simulates", async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken!.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    const simulateWith = vi.fn();
    const report = vi.fn();
    const opened = simDashboard(1, simulateWith, { port, report });
    await expect(opened).rejects.toThrow(ConfigError);
    await expect(opened).rejects.toThrow(/the port is in use; pick another, or port 0/);
    expect(simulateWith).not.toHaveBeenCalled();
    expect(report).not.toHaveBeenCalled();
  });
});
