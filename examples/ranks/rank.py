#!/usr/bin/python3
"""A baton rank in Python, standard library only: the rank side of the files baton uses.

Follows the formats in ARCHITECTURE.md ("Rank-side files and library"):
  - writes S/<dep>/rank-<R>.marker.json (phase loading -> ready -> exiting), atomically, 0600,
    and rewrites it every BATON_MARKER_HEARTBEAT_MS and whenever its active count changes;
  - at every step boundary reads S/<dep>/cancel.json and applies each new epoch once (a file
    that exists at start is a watermark; another deployment's file is ignored), then writes
    S/<dep>/rank-<R>.ack.json;
  - exits (code 1) when the launcher pid BATON_LAUNCHER_PID is gone or S/<dep>/lease.json
    is stale.

Usage (the launcher sets RANK, WORLD_SIZE, BATON_DEPLOYMENT, BATON_STATE_DIR, BATON_LAUNCHER_PID,
BATON_MARKER_HEARTBEAT_MS, BATON_LEASE_STALE_MS):

  baton launch --world 2 -- /usr/bin/python3 examples/ranks/rank.py --steps 20 --step-ms 100

  --steps N        run N steps, then exit 0 (default 0: run until stopped or orphaned)
  --step-ms M      length of one step in ms (default 100)
  --load-ms L      time spent loading before `ready` (default 0)
  --fail-at K      exit with --exit-code at step K (0: while loading, before `ready`)
  --exit-code C    the exit code of --fail-at (default 3)
  --hold N         hold N requests in flight (ids r<RANK>-1 .. r<RANK>-N) until cancelled
  --ignore-cancel  ack cancels without ending the requests they cover (a misbehaving rank)
  --ignore-term    trap SIGTERM and keep running (only SIGKILL stops it)
  --watch-ms W     how often the launcher's pid and lease are checked (default 1000)

Exit codes: 0 after --steps, 1 when the launcher is gone or its lease stale, 2 for a missing
or malformed environment or bad flags, --exit-code for --fail-at.
"""

import argparse
import json
import os
import re
import signal
import sys
import time

ORPHANED_EXIT_CODE = 1
DEPLOYMENT_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def now_ms():
    return int(time.time() * 1000)


def say(message):
    print(f"rank {os.environ.get('RANK', '?')}: {message}", flush=True)


def write_atomic(path, value):
    """One JSON object, written to a temp file beside `path`, fsynced, renamed over it."""
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, (json.dumps(value) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, path)
    except OSError:
        # A full disk or a path taken by something else: leave no temp file behind.
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def is_int(value, minimum):
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def read_file(path, fmt, check):
    """(value, problem): the parsed file if it exists and follows `fmt`, else a reason."""
    try:
        with open(path, encoding="utf8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None, None
    try:
        value = json.loads(text)
    except ValueError as error:
        return None, f"{path} is not JSON ({error})"
    if not isinstance(value, dict) or value.get("format") != fmt:
        return None, f"{path} is not a {fmt} file"
    deployment = value.get("deployment")
    if not isinstance(deployment, str) or not DEPLOYMENT_ID.match(deployment):
        return None, f'{path}: field "deployment" must be a deployment id'
    problem = check(value)
    return (None, f"{path}: {problem}") if problem else (value, None)


def check_cancel(value):
    if not is_int(value.get("epoch"), 1):
        return 'field "epoch" must be an integer >= 1'
    if value.get("scope") not in ("all", "requests"):
        return 'field "scope" must be "all" or "requests"'
    ids = value.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return 'field "ids" must be an array of strings'
    if value["scope"] == "requests" and not ids:
        return 'a "requests" cancel must name at least one id'
    if not isinstance(value.get("reason"), str):
        return 'field "reason" must be a string'
    return None


def check_lease(value):
    for field, minimum in (("pid", 1), ("renewedAt", 0), ("staleAfterMs", 1)):
        if not is_int(value.get(field), minimum):
            return f'field "{field}" must be an integer >= {minimum}'
    if not isinstance(value.get("token"), str):
        return 'field "token" must be a string'
    return None


def usage_error(message):
    print(f"rank.py: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def env_int(name, minimum, default=None):
    text = os.environ.get(name, "")
    if text == "":
        if default is not None:
            return default
        usage_error(f"{name} is not set: start this rank with `baton launch`")
    if not text.isdigit() or int(text) < minimum:
        usage_error(f"{name} must be an integer >= {minimum}, not {text!r}")
    return int(text)


def launcher_alive(pid):
    """False when the pid is gone or a zombie (a zombie counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf8") as handle:
            stat = handle.read()
        return stat[stat.rindex(")") + 2] not in "ZXx"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True


class Rank:
    def __init__(self, watch_ms):
        self.rank = env_int("RANK", 0)
        self.world_size = env_int("WORLD_SIZE", 1)
        if self.rank >= self.world_size:
            usage_error(f"RANK {self.rank} must be below WORLD_SIZE {self.world_size}")
        self.deployment = os.environ.get("BATON_DEPLOYMENT", "")
        state_dir = os.environ.get("BATON_STATE_DIR", "")
        if not DEPLOYMENT_ID.match(self.deployment) or self.deployment in (".", ".."):
            usage_error(f"BATON_DEPLOYMENT {self.deployment!r} is not a deployment id")
        if not state_dir.startswith("/"):
            usage_error("BATON_STATE_DIR must be an absolute path")
        self.launcher_pid = env_int("BATON_LAUNCHER_PID", 1)
        self.heartbeat_ms = env_int("BATON_MARKER_HEARTBEAT_MS", 1, 10_000)
        self.lease_stale_ms = env_int("BATON_LEASE_STALE_MS", 1, 30_000)
        self.watch_ms = watch_ms
        self.dir = os.path.join(state_dir.rstrip("/") or "/", self.deployment)
        self.marker_path = os.path.join(self.dir, f"rank-{self.rank}.marker.json")
        self.ack_path = os.path.join(self.dir, f"rank-{self.rank}.ack.json")
        self.cancel_path = os.path.join(self.dir, "cancel.json")
        self.lease_path = os.path.join(self.dir, "lease.json")
        self.started_at = now_ms()
        self.phase = "loading"
        self.requests = set()
        self.last_warning = None
        cancel = self.read_cancel()
        # A cancel file that exists at start is a watermark: its epoch is never applied.
        self.epoch = cancel["epoch"] if cancel else 0
        self.write_marker()
        self.next_heartbeat = now_ms() + self.heartbeat_ms
        self.next_watch = now_ms() + self.watch_ms

    def warn(self, message):
        if message != self.last_warning:
            self.last_warning = message
            say(f"warning: {message}")

    def write_marker(self):
        write_atomic(self.marker_path, {
            "format": "baton.marker/1",
            "deployment": self.deployment,
            "rank": self.rank,
            "pid": os.getpid(),
            "phase": self.phase,
            "startedAt": self.started_at,
            "heartbeatAt": now_ms(),
            "active": len(self.requests),
            "epoch": self.epoch,
        })

    def set_phase(self, phase):
        self.phase = phase
        self.write_marker()

    def heartbeat(self):
        """Rewrites the marker; one that cannot be written is warned about, and the next
        heartbeat tries again (the launcher only gives the rank up if none gets through
        before its marker goes stale)."""
        try:
            self.write_marker()
        except OSError as error:
            self.warn(f"cannot write the marker: {error}")

    def read_cancel(self):
        cancel, problem = read_file(self.cancel_path, "baton.cancel/1", check_cancel)
        if problem:
            self.warn(f"ignoring the cancel file: {problem}")
            return None
        if cancel and cancel["deployment"] != self.deployment:
            self.warn(f"ignoring {self.cancel_path}: it belongs to deployment {cancel['deployment']}")
            return None
        return cancel

    def step(self, apply):
        """A step boundary: apply a new cancel epoch once, then ack it."""
        cancel = self.read_cancel()
        if cancel is None or cancel["epoch"] <= self.epoch:
            return None
        apply(cancel)
        self.epoch = cancel["epoch"]
        write_atomic(self.ack_path, {
            "format": "baton.ack/1",
            "deployment": self.deployment,
            "rank": self.rank,
            "epoch": self.epoch,
            "active": len(self.requests),
            "at": now_ms(),
        })
        self.write_marker()
        return cancel

    def launcher_gone(self):
        if not launcher_alive(self.launcher_pid):
            return f"launcher pid {self.launcher_pid} is gone"
        lease, problem = read_file(self.lease_path, "baton.lease/1", check_lease)
        if problem:
            self.warn(f"ignoring the lease: {problem}")
        if lease and lease["deployment"] == self.deployment:
            renewed_at, stale_after = lease["renewedAt"], lease["staleAfterMs"]
        else:
            renewed_at, stale_after = self.started_at, self.lease_stale_ms
        if now_ms() - renewed_at > stale_after:
            return f"the launcher's lease was last renewed {now_ms() - renewed_at} ms ago (stale after {stale_after} ms)"
        return None

    def sleep(self, ms):
        """Sleeps `ms`, heartbeating the marker and watching the launcher meanwhile."""
        until = now_ms() + ms
        while True:
            now = now_ms()
            if now >= self.next_heartbeat:
                self.heartbeat()
                self.next_heartbeat = now + self.heartbeat_ms
            if now >= self.next_watch:
                reason = self.launcher_gone()
                if reason:
                    say(f"{reason}; exiting")
                    self.phase = "exiting"
                    self.heartbeat()
                    sys.exit(ORPHANED_EXIT_CODE)
                self.next_watch = now_ms() + self.watch_ms
            if now >= until:
                return
            time.sleep(max(0, min(until, self.next_heartbeat, self.next_watch) - now) / 1000)


def main():
    parser = argparse.ArgumentParser(description="A baton rank (see the top of this file).")
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--step-ms", type=int, default=100)
    parser.add_argument("--load-ms", type=int, default=0)
    parser.add_argument("--fail-at", type=int, default=None)
    parser.add_argument("--exit-code", type=int, default=3)
    parser.add_argument("--hold", type=int, default=0)
    parser.add_argument("--ignore-cancel", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--watch-ms", type=int, default=1000)
    args = parser.parse_args()

    if args.ignore_term:
        signal.signal(signal.SIGTERM, lambda *_: say("ignoring SIGTERM"))
    rank = Rank(args.watch_ms)
    say(f"loading (pid {os.getpid()}, world {rank.world_size}, watermark {rank.epoch})")
    if args.fail_at == 0:
        say(f"failing while loading with exit code {args.exit_code}")
        sys.exit(args.exit_code)
    rank.sleep(args.load_ms)
    rank.requests.update(f"r{rank.rank}-{i}" for i in range(1, args.hold + 1))
    rank.set_phase("ready")
    say("ready")

    def apply(cancel):
        covered = [i for i in sorted(rank.requests) if cancel["scope"] == "all" or i in cancel["ids"]]
        if not args.ignore_cancel:
            rank.requests.difference_update(covered)
        say(
            f"applied cancel epoch {cancel['epoch']} ({cancel['scope']} {cancel['ids']}, "
            f"{cancel['reason']}): ended {[] if args.ignore_cancel else covered}, "
            f"active {len(rank.requests)}"
        )

    step = 0
    while args.steps == 0 or step < args.steps:
        step += 1
        rank.step(apply)
        if args.fail_at == step:
            say(f"failing at step {step} with exit code {args.exit_code}")
            sys.exit(args.exit_code)
        rank.sleep(args.step_ms)
    rank.step(apply)
    rank.phase = "exiting"
    rank.heartbeat()
    say(f"done after {step} steps")


if __name__ == "__main__":
    main()
