/**
 * The most log folders baton is told to keep by count: runs' in a store's `logs/` (`keepLogs`,
 * `baton run --keep-logs`) and ended deployments' in a state dir (the COUNT of
 * `--keep-ended-logs`, `BATON_KEEP_ENDED_LOGS` and `keepEndedLogs.keep`): a week of one a
 * minute, each listed at every prune. More is a typo's extra digits: 10^12 kept every folder
 * for good, unsaid.
 */
export const MOST_KEPT_LOGS = 10_000;
