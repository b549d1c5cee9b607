import type { DashboardServer } from "../runtime/dashboardServer.ts";

/**
 * Closes the dashboard of a `baton run` or `baton launch` (`what`) once the run or the launch
 * has ended, and says so last on stderr: at once, with how to keep it (a short run or launch
 * ends before anyone opens the URL); or, with `--ui-keep` (`keep`), only after Ctrl-C
 * (SIGINT), serving the finished page until then. The command must have stopped handling
 * SIGINT itself: that Ctrl-C ends the wait, and the command, not the run or launch.
 *
 * @example
 * ```ts
 * await closeDashboard(ui, { keep: values["ui-keep"], what: "launch" });
 * // dashboard: http://127.0.0.1:8377/?token=… shows the finished launch; Ctrl-C to exit
 * ```
 */
export async function closeDashboard(
  ui: DashboardServer,
  { keep, what }: { keep: boolean; what: "run" | "launch" },
): Promise<void> {
  if (keep) {
    process.stderr.write(`dashboard: ${ui.url} shows the finished ${what}; Ctrl-C to exit\n`);
    await new Promise((resolve) => process.once("SIGINT", resolve));
  }
  await ui.close();
  if (!keep) {
    process.stderr.write(
      `dashboard: closed with the ${what}; --ui-keep keeps it open after the ${what}\n`,
    );
  }
}
