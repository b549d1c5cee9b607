import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, RankFileError } from "../../src/errors.ts";
import { ACK_FORMAT } from "../../src/rank/ackFormat.ts";
import { CANCEL_FORMAT, cancelCovers } from "../../src/rank/cancelFormat.ts";
import { CGROUP_FOLDER, deploymentCgroupName } from "../../src/rank/deploymentCgroup.ts";
import {
  checkDeploymentId,
  deploymentPaths,
  isDeploymentId,
  rankFileName,
} from "../../src/rank/deploymentPaths.ts";
import { launcherGone, leaseLauncherGone } from "../../src/rank/launcherWatch.ts";
import { isLeaseStale, LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT, type Manifest } from "../../src/rank/manifestFormat.ts";
import { MARKER_FORMAT, type Marker } from "../../src/rank/markerFormat.ts";
import { START_SLACK_MS } from "../../src/rank/pidReused.ts";
import { readRankEnv } from "../../src/rank/rankEnv.ts";
import {
  encodeStateFile,
  parseStateFile,
  readStateFile,
  type StateFileFormat,
} from "../../src/rank/stateFile.ts";
import { cgroupContainment } from "../../src/runtime/cgroupContainment.ts";
import type { ProcInfo } from "../../src/runtime/ports.ts";

const manifest: Manifest = {
  deployment: "dep-abc123def456",
  launcher: { pid: 100, token: "t0k3n", host: "node-1" },
  ranks: [
    { rank: 0, localRank: 0, host: "local", pid: 101, pgid: 101 },
    { rank: 1, localRank: 1, host: "local", pid: 102, pgid: 102 },
  ],
  worldSize: 2,
  argv: ["python3", "train.py"],
  startedAt: 1_700_000_000_000,
};

const marker: Marker = {
  deployment: "dep-abc123def456",
  rank: 1,
  pid: 102,
  phase: "ready",
  startedAt: 1_700_000_000_000,
  heartbeatAt: 1_700_000_010_000,
  active: 3,
  epoch: 0,
};

/** The message of the RankFileError that parsing `value` as a marker raises. */
function markerProblem(value: unknown): string {
  try {
    parseStateFile(MARKER_FORMAT, JSON.stringify(value), "/s/dep/rank-1.marker.json");
  } catch (error) {
    expect(error).toBeInstanceOf(RankFileError);
    expect((error as RankFileError).code).toBe("RANK_FILE_MALFORMED");
    return (error as Error).message;
  }
  throw new Error("the marker was accepted");
}

describe("state file formats", () => {
  it("round-trips every format through encode and parse", () => {
    const cases = [
      [MANIFEST_FORMAT, manifest],
      [MARKER_FORMAT, marker],
      [
        LEASE_FORMAT,
        {
          deployment: "d",
          pid: 1,
          token: "x",
          renewedAt: 5,
          staleAfterMs: 30_000,
        },
      ],
      [
        CANCEL_FORMAT,
        { deployment: "d", epoch: 7, scope: "requests", ids: ["a", "b"], reason: "client left" },
      ],
      [ACK_FORMAT, { deployment: "d", rank: 0, epoch: 7, active: 0, at: 9 }],
    ] as const;
    for (const [format, value] of cases as readonly (readonly [
      StateFileFormat<object>,
      object,
    ])[]) {
      const text = encodeStateFile(format, value);
      expect(JSON.parse(text).format).toBe(format.id);
      expect(text.endsWith("}\n")).toBe(true);
      expect(parseStateFile(format, text, "/s/f.json")).toEqual(value);
    }
  });

  it("ignores fields the format does not name", () => {
    const text = JSON.stringify({ format: "baton.marker/1", ...marker, gpu: "A100" });
    expect(parseStateFile(MARKER_FORMAT, text, "/s/m.json")).toEqual(marker);
  });

  it("refuses malformed files with a RankFileError naming the file and the field", () => {
    const valid = { format: "baton.marker/1", ...marker };
    expect(markerProblem({ ...valid, pid: "102" })).toMatch(
      /rank-1\.marker\.json is not a valid baton\.marker\/1 file: field "pid" must be an integer ≥ 1; got "102"/,
    );
    expect(markerProblem({ ...valid, phase: "sleeping" })).toMatch(/field "phase" must be one of/);
    expect(markerProblem({ ...valid, active: -1 })).toMatch(/field "active"/);
    expect(markerProblem({ ...valid, epoch: 1.5 })).toMatch(/field "epoch"/);
    expect(markerProblem({ ...valid, rank: undefined })).toMatch(/"rank" .* it is missing/);
    expect(markerProblem({ ...valid, deployment: "../x" })).toMatch(/field "deployment"/);
    expect(markerProblem({ ...valid, format: "baton.marker/2" })).toMatch(
      /its format is "baton\.marker\/2", expected "baton\.marker\/1"/,
    );
    expect(markerProblem([valid])).toMatch(/not a JSON object/);
    expect(markerProblem(null)).toMatch(/not a JSON object/);
    expect(() => parseStateFile(MARKER_FORMAT, '{"format": "baton.mar', "/s/m.json")).toThrow(
      /not JSON/,
    );
    expect(() => parseStateFile(MARKER_FORMAT, "", "/s/m.json")).toThrow(RankFileError);
  });

  // A JavaScript caller's arguments: a Buffer or undefined as the text read as a file that is
  // no JSON (a RankFileError blaming the file), a format's name where the format goes was
  // "format.decode is not a function".
  it.each([
    [
      [MARKER_FORMAT, undefined, "/s/m.json"],
      'parseStateFile: text must be the file\'s text, a string (readFile(path, "utf8")), not undefined',
    ],
    [
      [MARKER_FORMAT, new Uint8Array([123, 125]), "/s/m.json"],
      'parseStateFile: text must be the file\'s text, a string (readFile(path, "utf8")), not a Uint8Array: decode it first',
    ],
    [
      ["baton.marker/1", "{}", "/s/m.json"],
      'parseStateFile: format must be a StateFileFormat, such as MARKER_FORMAT or { id, decode }, not "baton.marker/1"',
    ],
    [
      [{ decode: () => 1 }, "{}", "/s/m.json"],
      "parseStateFile: format.id must be its format's name, a string, not undefined",
    ],
    [
      [MARKER_FORMAT, "{}"],
      "parseStateFile: path must be the file's path, which its errors name, not undefined",
    ],
  ])("refuses arguments it cannot take with a ConfigError naming them (%#)", (args, message) => {
    const parse = () => parseStateFile(...(args as Parameters<typeof parseStateFile>));
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(message);
  });

  it("reads no state file through files that are no Files", async () => {
    await expect(readStateFile({} as never, MARKER_FORMAT, "/s/m.json")).rejects.toThrow(
      "readStateFile: files must be a Files, such as nodeFiles(); it has no read()",
    );
  });

  it("checks the manifest's nested fields and its ranks against the world size", () => {
    const parse = (value: object) =>
      parseStateFile(
        MANIFEST_FORMAT,
        JSON.stringify({ format: "baton.manifest/1", ...manifest, ...value }),
        "/s/manifest.json",
      );
    expect(() => parse({ launcher: { pid: 1, token: 5, host: "h" } })).toThrow(
      /field "launcher\.token" must be a string/,
    );
    expect(() => parse({ ranks: [{ ...manifest.ranks[0], pgid: 0 }] })).toThrow(
      /field "ranks\[0\]\.pgid"/,
    );
    expect(() => parse({ ranks: [7] })).toThrow(/field "ranks\[0\]" must be an object/);
    expect(() => parse({ worldSize: 1 })).toThrow(/rank 1 is not below worldSize 1/);
    expect(() => parse({ ranks: [manifest.ranks[0], manifest.ranks[0]] })).toThrow(
      /rank 0 is listed twice/,
    );
    expect(() => parse({ argv: ["a", 1] })).toThrow(/field "argv" must be an array of strings/);
  });

  it("takes as the manifest's cgroup only the deployment's own, whose every process the reaper stops", () => {
    const parse = (cgroup: string) =>
      parseStateFile(
        MANIFEST_FORMAT,
        JSON.stringify({ format: "baton.manifest/1", ...manifest, cgroup }),
        "/s/manifest.json",
      );
    const own = "/sys/fs/cgroup/user.slice/baton/dep-abc123def456";
    expect(parse(own).cgroup).toBe(own);
    for (const other of [
      "/sys/fs/cgroup",
      "/sys/fs/cgroup/system.slice/sshd.service",
      "/sys/fs/cgroup/baton/dep-000000000000",
      "/sys/fs/cgroup/baton/dep-abc123def456/..",
      "/sys/fs/cgroup/baton/dep-abc123def456/../../x/baton/dep-abc123def456/..",
      "sys/fs/cgroup/baton/dep-abc123def456",
    ]) {
      expect(() => parse(other), other).toThrow(
        /field "cgroup" must be the absolute path of the deployment's cgroup \(ending in \/baton\/dep-abc123def456\)/,
      );
    }
  });

  it("takes as the cgroup of a manifest with a stateDir only the one named after both", () => {
    const stateDir = "/srv/app/.baton/run";
    const parse = (cgroup: string) =>
      parseStateFile(
        MANIFEST_FORMAT,
        JSON.stringify({ format: "baton.manifest/1", ...manifest, stateDir, cgroup }),
        "/s/manifest.json",
      );
    const name = deploymentCgroupName({ deployment: manifest.deployment, stateDir });
    expect(name).toMatch(new RegExp(`^${manifest.deployment}-[0-9a-f]{12}$`));
    const own = `/sys/fs/cgroup/user.slice/baton/${name}`;
    expect(parse(own)).toMatchObject({ stateDir, cgroup: own });
    const twin = deploymentCgroupName({ deployment: manifest.deployment, stateDir: "/tmp/run" });
    for (const other of [
      `/sys/fs/cgroup/user.slice/baton/${manifest.deployment}`,
      `/sys/fs/cgroup/user.slice/baton/${twin}`,
    ]) {
      expect(() => parse(other), other).toThrow(
        /field "cgroup" must be the absolute path of the deployment's cgroup \(ending in \/baton\/dep-abc123def456-<hash of its stateDir>\)/,
      );
    }
  });

  it("makes a deployment's cgroup where a manifest takes it", () => {
    const own = mkdtempSync(join(tmpdir(), "baton-own-cgroup-"));
    try {
      const stateDir = "/srv/app/.baton/run";
      const name = deploymentCgroupName({ deployment: manifest.deployment, stateDir });
      // A plain directory passes for this process's cgroup: making one there is mkdir alone.
      const cgroup = cgroupContainment(own)!.create(name);
      expect(cgroup).toBe(join(own, CGROUP_FOLDER, name));
      const parsed = parseStateFile(
        MANIFEST_FORMAT,
        JSON.stringify({ format: "baton.manifest/1", ...manifest, stateDir, cgroup }),
        "/s/manifest.json",
      );
      expect(parsed.cgroup).toBe(cgroup);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  it("requires ids for a requests cancel, and says what a cancel covers", () => {
    const parse = (value: object) =>
      parseStateFile(
        CANCEL_FORMAT,
        JSON.stringify({ format: "baton.cancel/1", deployment: "d", reason: "r", ...value }),
        "/s/cancel.json",
      );
    expect(() => parse({ epoch: 1, scope: "requests", ids: [] })).toThrow(/at least one id/);
    expect(() => parse({ epoch: 0, scope: "all", ids: [] })).toThrow(/field "epoch"/);
    const some = parse({ epoch: 3, scope: "requests", ids: ["a"] });
    expect(cancelCovers(some, "a")).toBe(true);
    expect(cancelCovers(some, "b")).toBe(false);
    expect(cancelCovers(parse({ epoch: 3, scope: "all", ids: [] }), "b")).toBe(true);
  });

  // A JavaScript rank program's arguments: no cancel was a TypeError from inside, ids as text
  // covered any part of it ("abc" covered "a"), a number as the id was covered by no cancel,
  // and a lease or a time that is none answered fresh or stale for a lease never read.
  it.each([
    [
      () => cancelCovers(undefined as never, "a"),
      "cancelCovers: cancel must be a cancel as rank.step hands it, { scope, ids } with ids a list, not undefined",
    ],
    [
      () => cancelCovers({ scope: "requests", ids: "abc" } as never, "a"),
      'cancelCovers: cancel must be a cancel as rank.step hands it, { scope, ids } with ids a list, not {"scope":"requests","ids":"abc"}',
    ],
    [
      () => cancelCovers({ scope: "some", ids: ["a"] } as never, "a"),
      'cancelCovers: cancel.scope must be "all" or "requests", not "some"',
    ],
    [
      () => cancelCovers({ scope: "requests", ids: ["5"] }, 5 as never),
      "cancelCovers: id must be a request's id, a string, not 5",
    ],
    [
      () => isLeaseStale(undefined as never, 0),
      "isLeaseStale: lease must be a lease, { renewedAt, staleAfterMs }, not undefined",
    ],
    [
      () => isLeaseStale({ renewedAt: "0", staleAfterMs: 30_000 } as never, 0),
      'isLeaseStale: lease.renewedAt must be ms since the epoch, a number such as Date.now() or clock.now(), not "0"',
    ],
    [
      () => isLeaseStale({ renewedAt: 0 } as never, 0),
      "isLeaseStale: lease.staleAfterMs must be a positive number of ms, not undefined",
    ],
    [
      () => isLeaseStale({ renewedAt: 0, staleAfterMs: 30_000 }, new Date(0) as never),
      'isLeaseStale: now must be ms since the epoch, a number such as Date.now() or clock.now(), not "1970-01-01T00:00:00.000Z"',
    ],
    [
      () => encodeStateFile("baton.lease/1" as never, {}),
      'encodeStateFile: format must be a StateFileFormat, such as MARKER_FORMAT or { id, decode }, not "baton.lease/1"',
    ],
    [
      () => encodeStateFile(LEASE_FORMAT, "lease" as never),
      'encodeStateFile: value must be the file\'s fields as an object, such as a baton.lease/1 file holds, not "lease"',
    ],
    [
      () => encodeStateFile(LEASE_FORMAT, [1] as never),
      "encodeStateFile: value must be the file's fields as an object, such as a baton.lease/1 file holds, not [1]",
    ],
    // Each was written, for its reader to refuse as malformed.
    [
      () =>
        encodeStateFile(LEASE_FORMAT, {
          deployment: "dep-1",
          pid: "12",
          token: "t",
          renewedAt: 0,
          staleAfterMs: 30_000,
        } as never),
      'encodeStateFile: the value is no baton.lease/1 file: field "pid" must be an integer ≥ 1; got "12"',
    ],
    [
      () => encodeStateFile(LEASE_FORMAT, { pid: 12 } as never),
      'encodeStateFile: the value is no baton.lease/1 file: field "deployment" must be a deployment id; it is missing',
    ],
    [
      () =>
        encodeStateFile(LEASE_FORMAT, {
          format: "baton.marker/1",
          deployment: "dep-1",
          pid: 12,
          token: "t",
          renewedAt: 0,
          staleAfterMs: 30_000,
        } as never),
      'encodeStateFile: the value is no baton.lease/1 file: its format field is "baton.marker/1"; leave it out',
    ],
  ])(
    "refuses a cancel, a lease or a file's value it cannot take with a ConfigError naming it (%#)",
    (call, message) => {
      expect(call).toThrow(ConfigError);
      expect(call).toThrow(message);
    },
  );

  it("answers for a valid cancel and lease as before", () => {
    expect(cancelCovers({ scope: "all", ids: [] }, "b")).toBe(true);
    expect(isLeaseStale({ renewedAt: 1_000, staleAfterMs: 3_000 }, 4_000)).toBe(false);
    expect(isLeaseStale({ renewedAt: 1_000, staleAfterMs: 3_000 }, 4_001)).toBe(true);
  });
});

describe("deployment paths", () => {
  it("names every file of a deployment under the state dir", () => {
    const paths = deploymentPaths("/srv/run/", "dep-abc123def456");
    expect(paths.dir).toBe("/srv/run/dep-abc123def456");
    expect(paths.manifest).toBe("/srv/run/dep-abc123def456/manifest.json");
    expect(paths.lease).toBe("/srv/run/dep-abc123def456/lease.json");
    expect(paths.cancel).toBe("/srv/run/dep-abc123def456/cancel.json");
    expect(paths.marker(2)).toBe("/srv/run/dep-abc123def456/rank-2.marker.json");
    expect(paths.ack(2)).toBe("/srv/run/dep-abc123def456/rank-2.ack.json");
    expect(paths.log(2)).toBe("/srv/run/dep-abc123def456/rank-2.log");
    expect(deploymentPaths("/", "d").dir).toBe("/d");
  });

  it("accepts only deployment ids that are safe directory names", () => {
    for (const id of ["dep-abc123def456", "my_job.v2", "A", "x".repeat(64)]) {
      expect(isDeploymentId(id)).toBe(true);
    }
    for (const id of ["", ".", "..", "a/b", "x".repeat(65), "a b", "é"]) {
      expect(isDeploymentId(id)).toBe(false);
      expect(() => checkDeploymentId(id)).toThrow(ConfigError);
    }
  });

  it("recognises per-rank file names", () => {
    expect(rankFileName("rank-0.marker.json")).toEqual({ rank: 0, kind: "marker" });
    expect(rankFileName("rank-12.ack.json")).toEqual({ rank: 12, kind: "ack" });
    expect(rankFileName("rank-3.log")).toEqual({ rank: 3, kind: "log" });
    for (const name of ["rank-01.log", "rank-.log", "rank-1.marker.json.tmp", "lease.json"]) {
      expect(rankFileName(name)).toBeUndefined();
    }
  });
});

describe("rank environment", () => {
  const env = {
    RANK: "1",
    WORLD_SIZE: "4",
    BATON_DEPLOYMENT: "dep-abc123def456",
    BATON_STATE_DIR: "/srv/run",
    BATON_LAUNCHER_PID: "100",
  };

  it("reads what the launcher sets, with defaults for the optional variables", () => {
    expect(readRankEnv(env)).toEqual({
      rank: 1,
      worldSize: 4,
      localRank: 1,
      localWorldSize: 4,
      masterAddr: undefined,
      masterPort: undefined,
      deployment: "dep-abc123def456",
      stateDir: "/srv/run",
      launcherPid: 100,
      markerHeartbeatMs: 10_000,
      leaseStaleMs: 30_000,
    });
    const full = readRankEnv({
      ...env,
      LOCAL_RANK: "0",
      LOCAL_WORLD_SIZE: "2",
      MASTER_ADDR: "127.0.0.1",
      MASTER_PORT: "29500",
      BATON_MARKER_HEARTBEAT_MS: "250",
      BATON_LEASE_STALE_MS: "1500",
    });
    expect(full).toMatchObject({ localRank: 0, masterPort: 29500, markerHeartbeatMs: 250 });
  });

  it("says the program must be launched by baton when the environment is missing or wrong", () => {
    expect(() => readRankEnv({})).toThrow(/RANK is not set.*baton launch/);
    expect(() => readRankEnv({ ...env, RANK: "4" })).toThrow(/below WORLD_SIZE 4/);
    expect(() => readRankEnv({ ...env, RANK: "-1" })).toThrow(ConfigError);
    expect(() => readRankEnv({ ...env, BATON_STATE_DIR: "run" })).toThrow(/absolute/);
    expect(() => readRankEnv({ ...env, BATON_DEPLOYMENT: "a/b" })).toThrow(/deployment id/);
    expect(() => readRankEnv({ ...env, BATON_LAUNCHER_PID: "0" })).toThrow(/≥ 1/);
  });

  // No environment was a TypeError (reading 'RANK'), a value that is no text read as one when
  // it looked like one, or was a TypeError (stateDir.startsWith); a value is never shown.
  it.each([
    [undefined, "readRankEnv: env must be an environment, such as process.env, not undefined"],
    [
      ["RANK=1", "SECRET=hunter2"],
      "readRankEnv: env must be an environment, such as process.env, not a list",
    ],
    [
      { ...env, RANK: 1 },
      "readRankEnv: env.RANK must be text, or undefined for a variable unset, not a number",
    ],
    [
      { ...env, BATON_STATE_DIR: ["/srv/run"] },
      "readRankEnv: env.BATON_STATE_DIR must be text, or undefined for a variable unset, not a list",
    ],
  ])(
    "refuses an environment that is no object of text, naming it, not showing it (%#)",
    (given, message) => {
      const read = () => readRankEnv(given as never);
      expect(read).toThrow(ConfigError);
      expect(read).toThrow(message);
      expect(read).not.toThrow("hunter2");
    },
  );

  it("takes a variable that is unset as undefined, as process.env's type allows", () => {
    expect(readRankEnv({ ...env, MASTER_PORT: undefined }).masterPort).toBeUndefined();
  });
});

describe("launcher watch", () => {
  const alive: ProcInfo = { pid: 100, ppid: 1, pgid: 100, state: "sleeping", argv: [] };
  const lease = {
    deployment: "d",
    pid: 100,
    token: "t",
    renewedAt: 10_000,
    staleAfterMs: 3_000,
  };
  const base = {
    launcherPid: 100,
    process: alive,
    lease,
    now: 12_000,
    noLeaseSince: 0,
    leaseStaleMs: 30_000,
  };

  it("keeps a launcher whose pid lives and whose lease is fresh", () => {
    expect(launcherGone(base)).toBeUndefined();
    expect(isLeaseStale(lease, 13_000)).toBe(false);
    expect(isLeaseStale(lease, 13_001)).toBe(true);
    // A clock that stepped back never makes a lease stale.
    expect(launcherGone({ ...base, now: 1_000 })).toBeUndefined();
  });

  it("gives up on a dead or zombie pid, a stale lease, or no lease for too long", () => {
    expect(launcherGone({ ...base, process: undefined })).toBe("launcher pid 100 is gone");
    expect(launcherGone({ ...base, process: { ...alive, state: "zombie" } })).toBe(
      "launcher pid 100 is a zombie process",
    );
    expect(launcherGone({ ...base, now: 13_001 })).toMatch(/last renewed 3001 ms ago/);
    expect(launcherGone({ ...base, lease: undefined, now: 29_000 })).toBeUndefined();
    expect(launcherGone({ ...base, lease: undefined, now: 30_001 })).toMatch(
      /no readable lease for 30001 ms/,
    );
  });

  it("takes a lease's pid on its own machine for another program once that started after the lease's last renewal", () => {
    const here = { ...lease, host: "login1" };
    const at = (startedAt: number | undefined) => () => ({ ...alive, startedAt });
    // The launcher ran when it renewed the lease: a process started since is not it.
    expect(leaseLauncherGone(here, "login1", at(10_000 + START_SLACK_MS + 1), 12_000)).toBe(
      "launcher pid 100 is another program now (it started 2.0 s after the lease was last renewed)",
    );
    // Within the slack of a start time read in whole seconds, or with none, it may be the launcher.
    expect(leaseLauncherGone(here, "login1", at(10_000 + START_SLACK_MS), 12_000)).toBeUndefined();
    expect(leaseLauncherGone(here, "login1", at(undefined), 12_000)).toBeUndefined();
    expect(leaseLauncherGone(here, "login1", () => undefined, 12_000)).toBe(
      "launcher pid 100 is gone",
    );
    // Another machine's lease: its pid means nothing here, only its age.
    expect(leaseLauncherGone(here, "gpu-7", at(20_000), 12_000)).toBeUndefined();
  });
});
