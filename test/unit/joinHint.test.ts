import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { joinAddress, joinHint } from "../../src/cli/joinHint.ts";

/** A run listening on 127.0.0.1, and one on every interface, as its listening event says. */
const local = { address: "ws://127.0.0.1:7000", listenAddress: "ws://127.0.0.1:7000" };
const wildcard = { address: "ws://login1:7000", listenAddress: "ws://0.0.0.0:7000" };

describe("joinHint", () => {
  it("gives the baton worker command with the run's address and absolute paths", () => {
    const hint = joinHint({ ...local, secretFile: ".baton/run/run-1-2@h.secret" }, "graph.ts");
    expect(hint).toBe(
      `workers join this run with:\n  baton worker --connect 'ws://127.0.0.1:7000' --secret-file '${resolve(".baton/run/run-1-2@h.secret")}' --jobs '${resolve("graph.ts")}'\n`,
    );
  });

  it("names baton as the shell runs it, such as by its path where baton is installed in a project", () => {
    const hint = joinHint({ ...local, secretFile: "/s/x.secret" }, "/g.ts", {
      baton: "'/app/node_modules/baton/bin/baton.js'",
    });
    expect(hint).toContain(
      "\n  '/app/node_modules/baton/bin/baton.js' worker --connect 'ws://127.0.0.1:7000' --secret-file '/s/x.secret'",
    );
  });

  it("passes --handler-thread and --abort-grace on when the run's own workers have them", () => {
    const hint = joinHint({ ...local, secretFile: "/s/x.secret" }, "/g.ts", {
      handlerThread: true,
    });
    expect(hint).toContain("--jobs '/g.ts' --handler-thread\n");
    const patient = joinHint({ ...local, secretFile: "/s/x.secret" }, "/g.ts", {
      handlerThread: true,
      abortGrace: "30s",
    });
    expect(patient).toContain("--jobs '/g.ts' --handler-thread --abort-grace '30s'\n");
  });

  it("says that --retry-for keeps a worker for the run started again, when address and secret outlast it", () => {
    const listening = {
      address: "ws://10.0.0.5:7000",
      listenAddress: "ws://10.0.0.5:7000",
      secretFile: "/etc/baton/cluster.secret",
    };
    expect(joinHint(listening, "/g.ts", { lasting: true })).toMatch(
      /\n {2}\(add --retry-for DURATION, such as 1h, and a worker waits for this run, and rejoins it when it is started again\)\n$/,
    );
    expect(joinHint(listening, "/g.ts")).not.toContain("--retry-for");
  });

  it("names this host in place of a wildcard host, and says the run listens on every interface", () => {
    for (const listenAddress of ["ws://0.0.0.0:7000", "ws://[::]:7000"]) {
      const hint = joinHint(
        { address: "ws://login1:7000", listenAddress, secretFile: "/s/x.secret" },
        "/g.ts",
      );
      expect(hint).toContain("baton worker --connect 'ws://login1:7000' --secret-file");
      expect(hint).toContain(
        `  (it listens on every interface, ${listenAddress}: from a machine that knows this one by another name or address, connect to that (or give baton run --connect HOST:PORT); copy the secret file there with mode 0600)\n`,
      );
    }
    const direct = { address: "ws://10.0.0.5:7000", listenAddress: "ws://10.0.0.5:7000" };
    expect(joinHint({ ...direct, secretFile: "/s/x.secret" }, "/g.ts")).not.toContain(
      "every interface",
    );
  });

  it("gives --connect's address, not the wildcard it listens on, when baton run was given one", () => {
    const hint = joinHint({ ...wildcard, secretFile: "/s/x.secret" }, "/g.ts", {
      connect: "login1.ib:7000",
    });
    expect(hint).toContain("--connect 'login1.ib:7000'");
    expect(hint).not.toContain("every interface");
  });

  it("names where workers join for the graph lock as the join command does, the bound address only when it is another", () => {
    expect(joinAddress(wildcard)).toEqual({
      address: "ws://login1:7000",
      listenAddress: "ws://0.0.0.0:7000",
    });
    expect(joinAddress(wildcard, "login1.ib:7000")).toEqual({ address: "login1.ib:7000" });
    expect(joinAddress(local)).toEqual({ address: "ws://127.0.0.1:7000" });
  });

  it("says nothing for a run whose workers need no secret file (in-process workers)", () => {
    expect(joinHint({ address: "memory://run-x", listenAddress: "memory://run-x" }, "/g.ts")).toBe(
      "",
    );
  });
});
