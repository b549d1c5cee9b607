import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { joinHint } from "../../src/cli/joinHint.ts";

describe("joinHint", () => {
  it("gives the baton worker command with the run's address and absolute paths", () => {
    const hint = joinHint(
      { listenAddress: "ws://127.0.0.1:7000", secretFile: ".baton/run/run-1-2@h.secret" },
      "graph.ts",
    );
    expect(hint).toBe(
      `workers join this run with:\n  baton worker --connect 'ws://127.0.0.1:7000' --secret-file '${resolve(".baton/run/run-1-2@h.secret")}' --jobs '${resolve("graph.ts")}'\n`,
    );
  });

  it("passes --handler-thread and --abort-grace on when the run's own workers have them", () => {
    const hint = joinHint(
      { listenAddress: "ws://127.0.0.1:7000", secretFile: "/s/x.secret" },
      "/g.ts",
      {
        handlerThread: true,
      },
    );
    expect(hint).toContain("--jobs '/g.ts' --handler-thread\n");
    const patient = joinHint(
      { listenAddress: "ws://127.0.0.1:7000", secretFile: "/s/x.secret" },
      "/g.ts",
      { handlerThread: true, abortGrace: "30s" },
    );
    expect(patient).toContain("--jobs '/g.ts' --handler-thread --abort-grace '30s'\n");
  });

  it("says that --retry-for keeps a worker for the run started again, when address and secret outlast it", () => {
    const listening = {
      listenAddress: "ws://10.0.0.5:7000",
      secretFile: "/etc/baton/cluster.secret",
    };
    expect(joinHint(listening, "/g.ts", { lasting: true })).toMatch(
      /\n {2}\(add --retry-for DURATION, such as 1h, and a worker waits for this run, and rejoins it when it is started again\)\n$/,
    );
    expect(joinHint(listening, "/g.ts")).not.toContain("--retry-for");
  });

  it("tells a worker on another machine to name this one in place of a wildcard host", () => {
    for (const address of ["ws://0.0.0.0:7000", "ws://[::]:7000"]) {
      const hint = joinHint({ listenAddress: address, secretFile: "/s/x.secret" }, "/g.ts");
      expect(hint).toContain(`--connect '${address}'`);
      expect(hint).toMatch(
        /from another machine, put this machine's name or address in place of (0\.0\.0\.0|::)/,
      );
    }
    expect(
      joinHint({ listenAddress: "ws://10.0.0.5:7000", secretFile: "/s/x.secret" }, "/g.ts"),
    ).not.toContain("another machine");
  });

  it("gives --connect's address, not the wildcard it listens on, when baton run was given one", () => {
    const hint = joinHint(
      { listenAddress: "ws://0.0.0.0:7000", secretFile: "/s/x.secret" },
      "/g.ts",
      {
        connect: "login1:7000",
      },
    );
    expect(hint).toContain("--connect 'login1:7000'");
    expect(hint).not.toContain("another machine");
  });

  it("says nothing for a run whose workers need no secret file (in-process workers)", () => {
    expect(joinHint({ listenAddress: "memory://run-x" }, "/g.ts")).toBe("");
  });
});
