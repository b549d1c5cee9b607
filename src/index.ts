/**
 * baton: run a graph of jobs across workers, on XState machines.
 *
 * @example
 * ```ts
 * import { createEngine, job } from "baton";
 * const engine = createEngine({ jobs: { double: (n: number) => n * 2 } });
 * const result = await engine.run([job("double", 21)]);
 * ```
 */
export {
  BatonError,
  ConfigError,
  GraphError,
  JobModuleError,
  ListenerError,
  ModuleLoadError,
  NonRetryableError,
  PoolError,
  ProtocolError,
  RankFileError,
  RankGroupError,
  RemoteHostError,
  SlurmError,
  StoreError,
  TeardownError,
} from "./errors.ts";
export {
  type Backoff,
  type JobOptions,
  type JobSpec,
  type Json,
  job,
  type Resources,
} from "./graph/job.ts";
export { type JobBuilder, jobBuilder } from "./graph/jobBuilder.ts";
export type { DeploymentIdentity } from "./machines/carriesDeployment.ts";
export { type MachineName, machineCatalog } from "./machines/catalog.ts";
export { connectionMachine } from "./machines/connection.ts";
export { coordinatorMachine } from "./machines/coordinator.ts";
export {
  type BarrierPassed,
  type GroupEmitted,
  type GroupEvent,
  type GroupFailure,
  type GroupOutcome,
  groupMachine,
} from "./machines/group.ts";
export type { FailureCause, JobError, JobState } from "./machines/jobBoard.ts";
export { PLANTED_BUGS, type PlantedBug } from "./machines/plantedBugs.ts";
export {
  type RankEmitted,
  type RankEvent,
  type RankMarkerSeen,
  rankMachine,
} from "./machines/rank.ts";
export {
  type OtherProcess,
  type ProcView,
  type Survivor,
  type TeardownEffect,
  type TeardownEvent,
  type TeardownInput,
  type TeardownOutput,
  teardownMachine,
} from "./machines/teardown.ts";
export {
  type WatchdogEmitted,
  type WatchdogEvent,
  type WatchdogInput,
  watchdogMachine,
} from "./machines/watchdog.ts";
export type { WorkerClose } from "./machines/workerClose.ts";
export type { Overrides } from "./overrides.ts";
export { ACK_FORMAT, type Ack } from "./rank/ackFormat.ts";
export { CANCEL_FORMAT, type Cancel, type CancelScope, cancelCovers } from "./rank/cancelFormat.ts";
export {
  DEFAULT_STATE_DIR,
  type DeploymentPaths,
  deploymentPaths,
} from "./rank/deploymentPaths.ts";
export {
  type DeploymentStatus,
  type DeploymentStatusPorts,
  type RankStatus,
  readDeploymentStatuses,
} from "./rank/deploymentStatus.ts";
export { isLeaseStale, LEASE_FORMAT, type Lease } from "./rank/leaseFormat.ts";
export { MANIFEST_FORMAT, type Manifest, type ManifestRank } from "./rank/manifestFormat.ts";
export { MARKER_FORMAT, type Marker, type MarkerPhase } from "./rank/markerFormat.ts";
export type { OutcomeStatus } from "./rank/outcomeFormat.ts";
export { carriesDeployment, envCarries } from "./rank/publicOwnership.ts";
export { createRank, type Rank, type RankOptions, type RankPorts } from "./rank/rank.ts";
export { type RankEnv, readRankEnv } from "./rank/rankEnv.ts";
export { ORPHANED_EXIT_CODE, type StartRankOptions, startRank } from "./rank/startRank.ts";
export {
  encodeStateFile,
  Fields,
  parseStateFile,
  readStateFile,
  type StateFileFormat,
} from "./rank/stateFile.ts";
export {
  type CancelFile,
  type CancelFileOptions,
  type CancelOrder,
  cancelFile,
  nextEpoch,
  type RankEvidence,
} from "./runtime/cancelFile.ts";
export {
  DashboardServer,
  type DashboardServerOptions,
  type TraceStep,
} from "./runtime/dashboardServer.ts";
export type { EndedLogsRetention } from "./runtime/deploymentLogs.ts";
export {
  createEngine,
  type Engine,
  type EngineOptions,
  type PlannedRunJob,
  type RunPlan,
  type WorkersOption,
} from "./runtime/engine.ts";
export type { InspectOption } from "./runtime/guardInspect.ts";
export { type InProcessPoolOptions, inProcessPool } from "./runtime/inProcessPool.ts";
export {
  connectInspector,
  DEFAULT_INSPECTOR_URL,
  type InspectorOptions,
  type InspectorStream,
} from "./runtime/inspector.ts";
export type { HandlerDefinition, RankJobDefinition } from "./runtime/jobModule.ts";
export {
  defineJobs,
  type Handler,
  type JobContext,
  type JobModule,
  type LoadedJobs,
  type NeededValues,
} from "./runtime/jobModule.ts";
export { launchGroup } from "./runtime/launchGroup.ts";
export { type LocalWorkersOptions, localPool } from "./runtime/localPool.ts";
export { markerPids } from "./runtime/markerPids.ts";
export { memoryNet } from "./runtime/memoryNet.ts";
export { nodeClock } from "./runtime/nodeClock.ts";
export { nodeEntropy } from "./runtime/nodeEntropy.ts";
export { nodeFiles } from "./runtime/nodeFiles.ts";
export { nodeProcs } from "./runtime/nodeProcs.ts";
export type {
  Clock,
  Containment,
  CreateOptions,
  Entropy,
  FileOwner,
  Files,
  Link,
  Listener,
  ListenOptions,
  Net,
  ProcExit,
  ProcHandle,
  ProcInfo,
  ProcState,
  Procs,
  Signal,
  SignalOutcome,
  SpawnOptions,
} from "./runtime/ports.ts";
export {
  DEFAULT_RANK_GROUP_TIMEOUTS,
  type DrainReport,
  type FolderNotRemoved,
  type GroupExit,
  type LaunchPorts,
  type LaunchSpec,
  type LeftRunning,
  type RankExit,
  type RankGroup,
  type RankGroupStopOptions,
  type RankGroupTimeouts,
  type RemoteRanksOptions,
} from "./runtime/rankGroup.ts";
export { type RankJobResult, type RankLaunch, runRankJob } from "./runtime/rankJob.ts";
export { type ReapOptions, type ReapReport, reapDeployments } from "./runtime/reaper.ts";
export { remoteFiles } from "./runtime/remoteFiles.ts";
export {
  type RemoteProc,
  type RemoteProcs,
  type RemoteProcsOptions,
  type RemoteSignalOutcome,
  remoteProcs,
} from "./runtime/remoteProcs.ts";
export {
  type RemoteRankHandle,
  type RemoteRankOptions,
  spawnRemoteRank,
} from "./runtime/remoteRank.ts";
export {
  type OrphanedSiteOptions,
  openRemoteSite,
  type RemoteSite,
  type RemoteSiteOptions,
  reapRemoteSite,
  type SiteRankOptions,
} from "./runtime/remoteSite.ts";
export { remoteStateDir } from "./runtime/remoteStateDir.ts";
export {
  type RemoteTeardownPorts,
  type RemoteTeardownTarget,
  tearDownRemote,
} from "./runtime/remoteTeardown.ts";
export type { StaleCgroup } from "./runtime/removeStaleCgroups.ts";
export type {
  JobEvent,
  JobOutcome,
  JobProgressEvent,
  JobStatus,
  ListeningEvent,
  RunOptions,
  RunProgress,
  RunResult,
  StoreFullEvent,
  StoreReadingEvent,
  WorkerLoss,
} from "./runtime/run.ts";
export { Run } from "./runtime/run.ts";
export type { QueueEntry, SlurmCommands, SubmitRequest } from "./runtime/slurmCommands.ts";
export { type SlurmPoolOptions, slurmPool } from "./runtime/slurmPool.ts";
export {
  type RemoteResult,
  type SshHost,
  type SshHostOptions,
  type SshRunOptions,
  sshHost,
} from "./runtime/sshHost.ts";
export { parseRankHost, type RankHost, type SshTarget } from "./runtime/sshTarget.ts";
export {
  DEFAULT_TEARDOWN_TIMEOUTS,
  type ReportedOther,
  type TeardownPorts,
  type TeardownReport,
  type TeardownTarget,
  type TeardownTimeouts,
  tearDown,
} from "./runtime/tearDown.ts";
export { teardownDeadlineMs } from "./runtime/teardownDeadline.ts";
export type {
  SecretIn,
  WorkerCommand,
  WorkerCommandOption,
} from "./runtime/workerCommandLine.ts";
export type {
  PoolStart,
  PoolStop,
  RunningPool,
  StuckJob,
  WorkerPool,
} from "./runtime/workerPool.ts";
export { type WsNetOptions, wsNet } from "./runtime/wsNet.ts";
export { type Fault, type FaultProfile, formatFaults, parseFaults } from "./sim/faultPlan.ts";
export { simulate } from "./sim/publicSimulate.ts";
export type { ClockScope } from "./sim/simClock.ts";
export type { SimTools } from "./sim/simGraph.ts";
export { SIM_INVARIANTS, type SimInvariant } from "./sim/simInvariants.ts";
export type { SimLaunch, SimLauncherCrash } from "./sim/simLaunch.ts";
export { SIM_LIMITS } from "./sim/simLimits.ts";
export type { SimModules } from "./sim/simModules.ts";
export {
  type SimProcess,
  type SimProcSpec,
  SimProcs,
  type SimProcsOptions,
  type SimProgram,
  type SimProgramStart,
  type SimSelf,
  type SimSignalRecord,
} from "./sim/simProcs.ts";
export type { SimRankBehaviour } from "./sim/simRankProgram.ts";
export type {
  SimCounts,
  SimProgress,
  SimulateOptions,
  SimulationResult,
  SimViolation,
} from "./sim/simulate.ts";
export {
  type DrawnSimulation,
  type SimulateSeedsOptions,
  simulateSeeds,
} from "./sim/simulateSeeds.ts";
export type { ChartLayout, LaidOutEdge, LaidOutState } from "./viz/chartLayout.ts";
export type { DashboardEvent } from "./viz/dashboardModel.ts";
export { type GroupProgress, type RankProgress, watchGroup } from "./viz/groupProgress.ts";
export { type MachineJson, machineJson } from "./viz/machineJson.ts";
export type { ChartState } from "./viz/stateChart.ts";
export { toMermaid } from "./viz/toMermaid.ts";
