/**
 * What a Slurm job state (as `squeue` and `scontrol show job` print it) means to a pool.
 *
 * - `pending`: waiting for resources; it may be cancelled on scale-down.
 * - `running`: its worker may hold a job; never cancelled while the run goes on.
 * - `ended`: finished normally (its worker left when the run ended).
 * - `lost`: ended by Slurm for a cause outside its worker: its time limit (TIMEOUT), its
 *   node (NODE_FAIL), or a job that preempted it (PREEMPTED). Its worker is lost like a
 *   worker that dies (its job goes back and is retried) and the pool replaces it: a run
 *   longer than one allocation's `--time` goes on in new allocations.
 * - `failed`: ended in a state a run cannot shrug off (FAILED, CANCELLED by someone else,
 *   OUT_OF_MEMORY, and BOOT_FAIL, DEADLINE, REVOKED, SPECIAL_EXIT, which end the same way
 *   for a worker).
 */
export type AllocationPhase = "pending" | "running" | "ended" | "lost" | "failed";

const PHASES: Readonly<Record<string, AllocationPhase>> = {
  PENDING: "pending",
  REQUEUED: "pending",
  REQUEUE_FED: "pending",
  REQUEUE_HOLD: "pending",
  RESV_DEL_HOLD: "pending",
  CONFIGURING: "running",
  RUNNING: "running",
  COMPLETING: "running",
  RESIZING: "running",
  SIGNALING: "running",
  STAGE_OUT: "running",
  SUSPENDED: "running",
  STOPPED: "running",
  COMPLETED: "ended",
  CANCELLED: "failed",
  FAILED: "failed",
  TIMEOUT: "lost",
  NODE_FAIL: "lost",
  PREEMPTED: "lost",
  OUT_OF_MEMORY: "failed",
  BOOT_FAIL: "failed",
  DEADLINE: "failed",
  REVOKED: "failed",
  SPECIAL_EXIT: "failed",
};

/**
 * The phase of a Slurm job state, or undefined for a state this table does not know (the
 * pool then keeps what it knew). `scontrol` may add a suffix (`CANCELLED by 0`): only the
 * first word counts.
 *
 * @example
 * ```ts
 * allocationPhase("RUNNING"); // "running"
 * allocationPhase("CANCELLED by 0"); // "failed"
 * ```
 */
export function allocationPhase(state: string): AllocationPhase | undefined {
  return PHASES[state.trim().split(/\s+/)[0]!.toUpperCase()];
}
