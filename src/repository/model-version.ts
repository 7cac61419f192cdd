/**
 * One loaded version of a model: its identity (config, signature, memory
 * share, statistics) and its life cycle. This file's one job is the life
 * cycle: which state the version is in, why, and the in-flight accounting
 * that lets an unload wait for every admitted request. What a request runs
 * on is the runtime's (version-runtime.ts); the worker pools it swaps are the
 * generations' (worker-generations.ts). Both are reached through `runtime`;
 * the getters below keep the version the one object other modules use.
 *
 * Lifecycle: LOADING (workers started; warm-up and golden checks running, with
 * a reason saying which) → READY → UNLOADING when an unload or a replacing
 * reload starts (no new requests admitted) → UNAVAILABLE once the in-flight
 * requests finished and the engines closed. A version that fails while LOADING
 * goes straight to UNAVAILABLE with the failure as its reason.
 *
 * Ownership: the version owns its runtime (and through it the pools, the
 * executor and the batcher attachment) and its share of the memory ledger,
 * destroyed with it. Main thread only.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
import type { ModelSignature } from '../tensor/model-signature.js';
import type { WarmupReport, WorkerStats } from '../workers/model-pool.js';
import type { WorkerPoolTarget } from '../native/worker-channel.js';
import type { InferResult, InferTask, WarmupPlan } from '../workers/worker-protocol.js';
import { InferenceStatistics } from './inference-statistics.js';
import type { BatcherAttachment } from '../batching/version-batcher.js';
import type { VersionMemory } from './version-memory.js';
import type { ExecutorKind, VersionExecutor } from '../executor/version-executor.js';
import { VersionRuntime } from './version-runtime.js';
import { SharedGate } from '../common/shared-gate.js';
import type { PoolStarter, RestartReport, WorkerGeneration } from './worker-generations.js';

export type { PoolStarter, RestartReport, WorkerGeneration } from './worker-generations.js';
export { CRASH_CHANNEL_BATCH_PARAMETER } from './version-runtime.js';

export type VersionState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

export class ModelVersion {
  readonly signature: ModelSignature;
  /** Sharded per recording thread (statisticsShards: 1 + front-door threads); batch sizes up to max_batch_size have fixed slots. */
  readonly statistics: InferenceStatistics;
  /** What requests run on: the executor or the worker generations, and the batcher. */
  readonly runtime: VersionRuntime;
  private stateValue: VersionState = 'LOADING';
  private reasonValue = 'starting workers';
  private loadSecondsValue: number | undefined;
  /** Pool tasks running (requests' executions, batches, golden checks, executor warm-up runs). */
  private inFlight = 0;
  /** Requests admitted and not yet answered (some may wait in the batcher). */
  private requests = 0;
  private drained: (() => void) | undefined;
  private degradedValue = false;
  /** The gate front-door threads serve this version through (doorGate()); undefined until first published. */
  private doorGateValue: SharedGate | undefined;

  constructor(
    readonly modelName: string,
    readonly version: number,
    readonly config: ModelConfig,
    first: WorkerGeneration | undefined,
    /** This version's share of the memory ledger; destroyed with the version. */
    readonly memory: VersionMemory,
    startPool: PoolStarter,
    /** Instances (instance_group counts): pool workers, or executor instance threads. */
    instanceCount: number,
    /** Threads that record this version's statistics: 1 (the main thread) + the front-door threads. */
    statisticsShards = 1,
  ) {
    this.statistics = new InferenceStatistics({ shards: statisticsShards, maxBatchSize: config.maxBatchSize });
    this.runtime = new VersionRuntime(config, first, memory, startPool, instanceCount);
    this.signature = this.runtime.signature;
  }

  // ---- Life cycle -------------------------------------------------------

  get state(): VersionState {
    return this.stateValue;
  }

  /** Why the version is not READY ('' when it is), or why it is degraded. */
  get reason(): string {
    return this.reasonValue;
  }

  get versionLabel(): string {
    return String(this.version);
  }

  /** The tenant the model's memory is charged to (config parameter `tenant`). */
  get tenant(): string {
    return this.memory.tenant;
  }

  /** Seconds from the start of the load until READY (warm-up and golden checks included). */
  get loadSeconds(): number | undefined {
    return this.loadSecondsValue;
  }

  /** True once the patrol gave up on restarts (the version still serves). */
  get degraded(): boolean {
    return this.degradedValue;
  }

  /** Keeps serving, but says why in RepositoryIndex and /healthz. */
  markDegraded(reason: string): void {
    if (this.stateValue !== 'READY') return;
    this.degradedValue = true;
    this.reasonValue = reason;
  }

  /** Records what the LOADING version is doing now (shown in RepositoryIndex and /healthz). */
  setLoadingReason(reason: string): void {
    if (this.stateValue === 'LOADING') this.reasonValue = reason;
  }

  /**
   * Runs the plan in every worker of the pool (see ModelPool.warmUp), or on
   * the executor: each sample `runs` times per instance. Executor runs are
   * counted in flight like any task, so an unload waits for them.
   */
  warmUp(plan: WarmupPlan): Promise<WarmupReport> {
    this.setLoadingReason('warming up');
    return this.runtime.warmUp(plan, (task) => this.run(task, []));
  }

  markReady(loadSeconds: number): void {
    if (this.stateValue !== 'LOADING') return;
    this.memory.loaded();
    this.stateValue = 'READY';
    this.reasonValue = '';
    this.loadSecondsValue = loadSeconds;
  }

  /** Counts one request from admission to answer, so unload waits for it (batched or not). */
  async admit<T>(handle: () => Promise<T>): Promise<T> {
    this.requests += 1;
    try {
      return await handle();
    } finally {
      this.requests -= 1;
      this.notifyIfDrained();
    }
  }

  /**
   * Runs one task on this version's runtime, counted in flight. Request
   * callers check `state` first; golden checks run here while the version is
   * still LOADING.
   */
  async run(task: InferTask, transfer: ArrayBuffer[]): Promise<InferResult> {
    this.inFlight += 1;
    try {
      return await this.runtime.run(task, transfer);
    } finally {
      this.inFlight -= 1;
      this.notifyIfDrained();
    }
  }

  private notifyIfDrained(): void {
    if (this.inFlight === 0 && this.requests === 0) this.drained?.();
  }

  /**
   * A rolling restart of the workers (see WorkerGenerations.restart), only
   * while READY; it gives up if the version stops being READY meanwhile.
   * The reason is the caller's to log; the restart does not depend on it.
   */
  restartWorkers(_reason: string): Promise<RestartReport> {
    if (this.stateValue !== 'READY') return Promise.reject(new Error(`version is ${this.stateValue}, not READY`));
    return this.runtime.restartWorkers(() => (this.stateValue === 'READY' ? undefined : this.stateValue));
  }

  /**
   * Stops a load in progress (shutdown): closing the pool makes a pending
   * warm-up reject, so the load fails promptly instead of running to its end.
   */
  async abortLoad(): Promise<void> {
    if (this.stateValue === 'LOADING') await this.runtime.workers.closeCurrent();
  }

  /**
   * Gives the version up without waiting for anything (its load passed its
   * time limit): it turns UNAVAILABLE with `reason`, its workers are told to
   * stop (a worker stuck in native code never does; nothing waits for it),
   * and everything it held in the ledgers is released now.
   */
  abandon(reason: string): void {
    if (this.stateValue === 'UNLOADING' || this.stateValue === 'UNAVAILABLE') return;
    this.stateValue = 'UNAVAILABLE';
    this.reasonValue = reason;
    this.runtime.abandon();
    this.memory.destroy();
  }

  /** True when the version serves and no request runs on it: it may be evicted. */
  get idle(): boolean {
    return (
      this.stateValue === 'READY' &&
      this.inFlight === 0 &&
      this.requests === 0 &&
      (this.doorGateValue?.inside ?? 0) === 0 &&
      !this.runtime.workers.isRestarting
    );
  }

  /**
   * The gate through which `doors` front-door threads serve this READY
   * version (inference/door-catalog.ts publishes it with the version).
   * Opened on the first call; from then on the version's memory is pinned
   * (requests in other threads cannot pin it per request), until the unload
   * closes the gate and every door request that passed it has been answered.
   * Undefined unless READY.
   */
  doorGate(doors: number): SharedGate | undefined {
    if (this.stateValue !== 'READY') return undefined;
    if (this.doorGateValue === undefined) {
      this.memory.requestStarted();
      this.doorGateValue = SharedGate.create(doors);
    }
    return this.doorGateValue;
  }

  /** Stops admitting requests, waits for the admitted ones, then frees the engines. */
  async unload(reason = 'unloaded'): Promise<void> {
    if (this.stateValue === 'UNLOADING' || this.stateValue === 'UNAVAILABLE') return;
    this.stateValue = 'UNLOADING';
    this.reasonValue = '';
    // Door threads first: a request that had not passed the gate goes to the main thread (and is refused
    // there as for any unloading version); those inside are answered before the engines close.
    const gate = this.doorGateValue;
    if (gate !== undefined) {
      await gate.close();
      this.memory.requestFinished();
    }
    if (this.inFlight > 0 || this.requests > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    await this.runtime.close();
    // The sessions are gone: so is everything the version held in the ledgers.
    this.memory.destroy();
    this.stateValue = 'UNAVAILABLE';
    this.reasonValue = reason;
  }

  // ---- The runtime and the generations, as other modules read them ------

  get batcher(): BatcherAttachment | undefined {
    return this.runtime.batcher;
  }

  /** Attaches the dynamic batcher once the version is READY; it is stopped on unload. */
  attachBatcher(batcher: BatcherAttachment): void {
    this.runtime.attachBatcher(batcher);
  }

  /** See VersionRuntime.workerTarget. */
  get workerTarget(): WorkerPoolTarget | undefined {
    return this.runtime.workerTarget;
  }

  /** The native executor of this version, when it was selected for one. */
  get native(): VersionExecutor | undefined {
    return this.runtime.native;
  }

  attachNative(native: VersionExecutor): void {
    this.runtime.attachNative(native);
  }

  setExecutorNote(note: string): void {
    this.runtime.setExecutorNote(note);
  }

  get executorKind(): ExecutorKind {
    return this.runtime.executorKind;
  }

  get executorReason(): string {
    return this.runtime.executorReason;
  }

  /** See VersionRuntime.pendingRequests. */
  get pendingRequests(): number {
    return this.runtime.pendingRequests;
  }

  /** Instances from instance_group (the batcher's instances): pool workers or executor threads. */
  get instances(): number {
    return this.runtime.instances;
  }

  retireCpuPool(): Promise<void> {
    return this.runtime.retireCpuPool();
  }

  get isRestarting(): boolean {
    return this.runtime.workers.isRestarting;
  }

  /** The generation serving now and its live worker thread ids (number 0, no threads: on the executor). */
  get generation(): { readonly number: number; readonly threadIds: readonly number[] } {
    return this.runtime.workers.generation;
  }

  get generationArenaBytes(): number {
    return this.runtime.workers.arenaBytes;
  }

  workerStats(timeoutMs: number): Promise<WorkerStats[]> {
    return this.runtime.workers.workerStats(timeoutMs);
  }

  /** The workers' measured session footprint (see session-footprint.ts); 0 on the executor. */
  get measuredFootprintBytes(): number {
    return this.runtime.workers.footprintBytes;
  }

  /** Live worker threads, queued tasks and pool instances, for the pool-size gauges (0 while on the executor). */
  get poolThreads(): number {
    return this.runtime.workers.threads;
  }

  get poolQueueSize(): number {
    return this.runtime.workers.queueSize;
  }

  get poolInstances(): number {
    return this.runtime.workers.instances;
  }
}
