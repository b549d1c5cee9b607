/** How many of your jobs a failure's report follows, at most. */
const MOST_JOBS = 4;

/** How many lines of one job's timeline a failure's report shows, at most (its last). */
const MOST_LINES = 16;

/** A grant in a trace of your own graph: `<ms> grant <id> (<kind input>) to <link> attempt <n>`. */
export const GRANT = /^\d+ grant ([0-9a-f]{16}) \((.*)\) to (\S+) attempt (\d+)$/;

/** A job's line that says it has ended: no later line of its connection is its. */
const ENDED = /^\d+ job [0-9a-f]{16} (completed|failed|cancelled|skipped)$/;

/** A job's line that says its handler runs no more (a lost worker's job is `ready` again). */
const NOT_RUNNING =
  /^\d+ job ([0-9a-f]{16}) (ready|blocked|storing|completed|failed|cancelled|skipped)$/;

/**
 * A job's lines that say nothing a reader of its timeline needs: running at its grant, the
 * grant's frame delivered, its result storing.
 */
export const NOISE =
  /^\d+ (job [0-9a-f]{16} (running|storing)|store [0-9a-f]{16}|net \S+ > client job [0-9a-f]{16})$/;

/** A line about the whole run: a fault of the coordinator or its disk, a coordinator's start. */
export const WHOLE_RUN =
  /^\d+ (fault (coordinator-crash|kill|disk-stall|disk-full|slow|cancel)\b|start )/;

/** One of your jobs a failed seed's report follows (see `yourJobsFollowed`). */
export interface FollowedJob {
  id: string;
  /** Its kind and a preview of its input, as the trace's grants name it (`charge 2`). */
  label: string;
  /** Whether the failure names it (else it was granted more than once, or `running`). */
  named: boolean;
  /**
   * Whether its handler was running when the failure came (granted, and neither ended nor
   * given up since): a job that ran beside the one that broke, where a race shows.
   */
  running: boolean;
  /** The attempts it was granted. */
  attempts: number;
  /** Its lines of the trace before `lines`, left out. */
  earlier: number;
  /** Its last lines of the trace (at most `MOST_LINES`), as the trace has them. */
  lines: string[];
}

/**
 * The jobs of your own graph a failed seed's report follows, each with its own lines of the
 * `trace`, for the first screen of a failure (whose last events are mostly the simulated
 * network's frames): the jobs the `violation` names, then those granted more than once (a
 * lost worker, a coordinator crash, a failed attempt: where races in handlers show), then
 * those still running when it broke (a job that ran beside the one that broke: where a race
 * between jobs shows, such as a job that reads what another has not written yet because the
 * graph does not order them; until an audit the report of such a race showed the job that
 * broke alone), at most `MOST_JOBS` of `of`. A job's lines are those that name it (but its `running`, `storing` and
 * grant frame), the faults and closes of the connection its attempt ran on until its next
 * grant or its end, and coordinator crashes and starts, disk faults and the like while it had
 * not ended. No jobs when the trace grants no job the violation names and none twice. The
 * lines are the trace's own (its format unchanged); `--trace` prints them all. `baton sim
 * --json` gives them as `yourJobs`, its report as `yourJobsTimelines`.
 *
 * @example
 * ```ts
 * yourJobsFollowed(result.trace, result.violation!.message);
 * // { of: 2, jobs: [{ id: "87d8d288e4a36c5c", label: "reconcile", named: true, attempts: 1, earlier: 0, lines: ["4987 job 87d8… ready", …] }, …] }
 * ```
 */
export function yourJobsFollowed(
  trace: readonly string[],
  violation: string,
): { of: number; jobs: FollowedJob[] } {
  const granted = new Map<string, { label: string; attempts: number }>();
  const running = new Set<string>();
  for (const line of trace) {
    const grant = GRANT.exec(line);
    if (grant === null) {
      const stopped = NOT_RUNNING.exec(line);
      if (stopped !== null) running.delete(stopped[1]!);
      continue;
    }
    const [, id, label, , attempt] = grant;
    granted.set(id!, { label: label!, attempts: Number(attempt) });
    running.add(id!);
  }
  const named = (violation.match(/\b[0-9a-f]{16}\b/g) ?? []).filter((id) => granted.has(id));
  const again = [...granted].filter(([, { attempts }]) => attempts > 1).map(([id]) => id);
  const followed = [...new Set([...named, ...again, ...running])];
  return {
    of: followed.length,
    jobs: followed.slice(0, MOST_JOBS).map((id) => {
      const lines = timeline(trace, id);
      const earlier = Math.max(0, lines.length - MOST_LINES);
      return {
        id,
        ...granted.get(id)!,
        named: named.includes(id),
        running: running.has(id),
        earlier,
        lines: lines.slice(earlier),
      };
    }),
  };
}

/**
 * A failed seed's report of the jobs `yourJobsFollowed` follows: a heading, then each job
 * with its lines. Empty when it follows none.
 *
 * @example
 * ```ts
 * yourJobsTimelines(result.trace, result.violation!.message);
 * // ["your jobs (…):", "  reconcile (87d8d288e4a36c5c), 1 attempt:", "    4987 job 87d8… ready", …]
 * ```
 */
export function yourJobsTimelines(trace: readonly string[], violation: string): string[] {
  const { of, jobs } = yourJobsFollowed(trace, violation);
  if (jobs.length === 0) return [];
  const why = [
    jobs.some((job) => job.named) && "the one the failure names",
    jobs.some((job) => !job.named && job.attempts > 1) && "those granted more than once",
    jobs.some((job) => !job.named && job.attempts === 1) && "those running when it broke",
  ].filter((reason) => reason !== false);
  return [
    `your jobs: ${why.join(", then ")}${of > jobs.length ? ` (${jobs.length} of ${of})` : ""}, with their lines of the trace (its replay prints them all):`,
    ...jobs.flatMap(({ id, label, attempts, named, running, earlier, lines }) => [
      `  ${label} (${id}), ${attempts} attempt${attempts === 1 ? "" : "s"}${running && !named ? ", running when it broke" : ""}:`,
      ...(earlier > 0 ? [`    … (${earlier} earlier)`] : []),
      ...lines.map((line) => `    ${line}`),
    ]),
  ];
}

/** Job `id`'s lines of `trace` (see `yourJobsTimelines`). */
function timeline(trace: readonly string[], id: string): string[] {
  const lines: string[] = [];
  /** The connection job `id`'s latest attempt was granted on, until it ended. */
  let link: string | undefined;
  let started = false;
  let ended = false;
  for (const line of trace) {
    if (line.includes(id)) {
      started = true;
      const grant = GRANT.exec(line);
      if (grant !== null) link = grant[3];
      if (ENDED.test(line)) {
        ended = true;
        link = undefined;
      }
      if (!NOISE.test(line) && !/^\d+ violation /.test(line)) lines.push(line);
    } else if (link !== undefined && onLink(line, link)) {
      lines.push(line);
    } else if (started && !ended && WHOLE_RUN.test(line)) {
      lines.push(line);
    }
  }
  return lines;
}

/**
 * Whether `line` is a fault on connection `link` (`fault reset sim:5 by client`, `fault
 * half-open sim:5: …`), or its close (`net sim:5 client closed 1006 …`).
 */
export function onLink(line: string, link: string): boolean {
  const [, event, second, third, fourth] = line.split(" ");
  if (event === "fault") return third === link || third === `${link}:`;
  return event === "net" && second === link && fourth === "closed";
}
