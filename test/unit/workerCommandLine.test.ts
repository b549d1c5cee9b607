import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { type LocalWorkersOptions, localPool } from "../../src/runtime/localPool.ts";
import {
  checkWorkerCommand,
  type WorkerCommand,
  workerCommandLine,
} from "../../src/runtime/workerCommandLine.ts";

const SECRET = "0123456789abcdef0123456789abcdef";
const args = ["--connect", "ws://127.0.0.1:7000", "--jobs", "jobs.ts", "--name", "local-1"];
const worker: WorkerCommand = {
  name: "local-1",
  argv: ["/usr/bin/node", "/opt/baton/bin/baton.js", "worker", ...args],
  args,
  secretFile: "/tmp/run.secret",
};

describe("workerCommandLine", () => {
  it("runs the worker's own argv without a command, and after a prefix with one", () => {
    expect(workerCommandLine("localPool", undefined, worker, SECRET)).toEqual(worker.argv);
    expect(workerCommandLine("localPool", ["nice", "-n", "5"], worker, SECRET)).toEqual([
      "nice",
      "-n",
      "5",
      ...worker.argv,
    ]);
  });

  it("runs what a function makes of the worker", () => {
    const line = workerCommandLine(
      "localPool",
      (w) => [
        "docker",
        "run",
        "--rm",
        "--name",
        w.name,
        "-v",
        `${w.secretFile}:${w.secretFile}:ro`,
        "img",
        "baton",
        "worker",
        ...w.args,
      ],
      worker,
      SECRET,
    );
    expect(line).toEqual([
      "docker",
      "run",
      "--rm",
      "--name",
      "local-1",
      "-v",
      "/tmp/run.secret:/tmp/run.secret:ro",
      "img",
      "baton",
      "worker",
      ...args,
    ]);
  });

  it.each([[[]], [["docker", ""]], [[42]], ["docker run"], [undefined]])(
    "refuses a function's answer that is no command line (%o)",
    (answer) => {
      const run = () =>
        workerCommandLine("localPool", () => answer as unknown as string[], worker, SECRET);
      expect(run).toThrow(ConfigError);
      expect(run).toThrow(
        "localPool: command(local-1) must return the command line to run, a non-empty array of non-empty strings",
      );
    },
  );

  it("refuses a command line that holds the secret, without repeating it", () => {
    for (const answer of [
      ["kubectl", "run", `--env=BATON_SECRET=${SECRET}`],
      ["kubectl", "run", `--env=BATON_SECRET=${SECRET.toUpperCase()}`, ""],
    ]) {
      let thrown: unknown;
      try {
        workerCommandLine("localPool", () => answer, worker, SECRET);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      expect((thrown as Error).message).toContain("put the run's secret on the command line");
      expect((thrown as Error).message.toLowerCase()).not.toContain(SECRET);
    }
  });
});

describe("checkWorkerCommand, as localPool checks its options", () => {
  it.each([
    [{ command: [] }, "localPool: command must be a prefix of the worker's command line"],
    [{ command: "nice -n 5" }, 'such as ["nice", "-n", "5"]'],
    [{ command: ["nice", 5] }, 'not ["nice",5]'],
    [{ command: ["nice", ""] }, 'not ["nice",""]'],
    [{ secretIn: "stdin" }, 'localPool: secretIn must be "file"'],
    [
      { secretIn: true },
      'or "env" (BATON_SECRET in its environment, for a container started with docker run -e BATON_SECRET), not true',
    ],
  ])("refuses %o when the pool is made", (bad, message) => {
    const make = () =>
      localPool({ jobsModule: "jobs.ts", count: 1, ...bad } as unknown as LocalWorkersOptions);
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(message);
  });

  it("takes a prefix, a function and either place for the secret", () => {
    expect(() =>
      checkWorkerCommand("localPool", { command: ["taskset", "-c", "0"], secretIn: "file" }),
    ).not.toThrow();
    expect(() =>
      checkWorkerCommand("localPool", { command: (w: WorkerCommand) => w.argv, secretIn: "env" }),
    ).not.toThrow();
  });
});
