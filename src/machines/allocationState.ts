/**
 * What a Slurm job state (as `squeue` and `scontrol show job` print it) means to a pool.
 *
 * - `pending`: waiting for resources; it may be cancelled on scale-down.
 * - `running`: its worker may hold a job; never cancelled while the run goes on.
 * - `ended`: finished normally: its worker left when the run ended, or after the pool's
 *   `idleExitMs` without a job (the pool submits another if demand rises again).
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

/**
 * What Slurm's reason for keeping an allocation pending means: `blocked` when Slurm will
 * not start it as asked however long it waits (the request exceeds what the partition, the
 * account or the QOS allows, or names one that is not valid), so that only a change of the
 * request or of the cluster's configuration starts it; otherwise it waits its turn. `says`
 * puts the reason in words, when it is one this table knows.
 */
export interface PendingReason {
  blocked: boolean;
  says: string | undefined;
}

const BLOCKED_REASONS: Readonly<Record<string, string>> = {
  PartitionConfig:
    "it asks for more than the partition allows (CPUs, memory or GPUs on one node, or nodes)",
  PartitionTimeLimit: "its time limit is longer than the partition's MaxTime",
  BadConstraints: "no node has the features or resources it asks for",
  InvalidAccount: "its account is not valid",
  InvalidQOS: "its QOS is not valid",
  AccountNotAllowed: "its account may not use the partition",
};

const WAITING_REASONS: Readonly<Record<string, string>> = {
  None: "Slurm has not scheduled it yet",
  Resources: "the nodes it needs are busy",
  Priority: "jobs of higher priority are ahead of it",
  BeginTime:
    "its start time has not come (a --begin in its sbatch options, or Slurm holding a requeued job back for a while)",
  ReqNodeNotAvail: "the nodes it needs are not available (down, drained or reserved)",
  PartitionNodeLimit: "the partition's node limits, or nodes down or drained, keep it waiting",
  PartitionDown: "the partition is down",
  PartitionInactive: "the partition is inactive",
  JobHeldUser: "it is held (scontrol release releases it)",
  JobHeldAdmin: "an administrator holds it",
  Reservation: "it waits for its reservation",
};

/**
 * The meaning of the reason `squeue` gives for a pending allocation.
 *
 * @example
 * ```ts
 * pendingReason("Priority"); // { blocked: false, says: "jobs of higher priority are ahead of it" }
 * pendingReason("PartitionTimeLimit").blocked; // true
 * ```
 */
export function pendingReason(reason: string): PendingReason {
  const blocked = BLOCKED_REASONS[reason];
  if (blocked !== undefined) return { blocked: true, says: blocked };
  const waiting = WAITING_REASONS[reason];
  if (waiting !== undefined) return { blocked: false, says: waiting };
  if (/^(Assoc|QOS)Grp/.test(reason)) {
    return {
      blocked: false,
      says: "an aggregate limit of its account or QOS is reached (it waits for other jobs to end)",
    };
  }
  if (/^(Assoc|QOS)Max|^Max.*PerAccount$/.test(reason)) {
    return { blocked: false, says: "a limit of its account or QOS holds it back" };
  }
  return { blocked: false, says: undefined };
}
