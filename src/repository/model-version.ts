/**
 * One loaded version of a model: its completed config, request signature,
 * worker pool, statistics and in-flight accounting.
 *
 * Lifecycle: LOADING (workers started; warm-up and golden checks running, with
 * a reason saying which) → READY → UNLOADING when an unload or a replacing
 * reload starts (no new requests admitted) → UNAVAILABLE once the in-flight
 * requests finished and the pool closed. A version that fails while LOADING
 * goes straight to UNAVAILABLE with the failure as its reason. Main thread only.
 *
 * Worker generations: the pool is replaceable while the version serves
 * (`restartWorkers`, used by the leak patrol). Each generation has its own
 * arena owner under the version's; dispatch reads the current generation once
 * per task, so the switch is atomic for the single-threaded main loop.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
import { signatureFromConfig, type ModelSignature } from '../server/model-signature.js';
import type { ModelPool, WarmupReport } from '../workers/model-pool.js';
import type { InferResult, InferTask, WarmupPlan } from '../workers/worker-protocol.js';
import { InferenceStatistics } from './inference-statistics.js';
import type { VersionBatcher } from '../batching/version-batcher.js';
import type { VersionMemory } from './version-memory.js';
import type { Owner } from '../native/arena.js';
import type { WorkerStats } from '../workers/model-pool.js';

export type VersionState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

/** One pool of workers and the arena owner its workers allocate under. */
export interface WorkerGeneration {
  readonly number: number;
  readonly owner: Owner;
  readonly pool: ModelPool;
}

/** Starts (not warms) a pool for generation `number`, with the same options as at load. */
export type PoolStarter = (number: number, owner: Owner) => Promise<ModelPool>;

/** What a rolling restart did (logged by the patrol as evidence). */
export interface RestartReport {
  readonly fromGeneration: number;
  readonly toGeneration: number;
  readonly oldThreadIds: readonly number[];
  readonly newThreadIds: readonly number[];
  /** Start + warm-up of the new generation, until dispatch switched. */
  readonly switchMs: number;
  /** Until the old generation finished its tasks, stopped, and its owner was destroyed. */
  readonly totalMs: number;
  /** What destroying the old generation's owner freed in the arena. */
  readonly freedBytes: number;
}

export class ModelVersion {
  readonly signature: ModelSignature;
  readonly statistics = new InferenceStatistics();
  private stateValue: VersionState = 'LOADING';
  private reasonValue = 'starting workers';
  private loadSecondsValue: number | undefined;
  /** Pool tasks running (requests' executions, batches, golden checks). */
  private inFlight = 0;
  /** Requests admitted and not yet answered (some may wait in the batcher). */
  private requests = 0;
  private drained: (() => void) | undefined;
  /** Set when the version batches dynamically (see batching/version-batcher.ts). */
  private batcherValue: VersionBatcher | undefined;
  /** The generation new tasks go to. */
  private current: WorkerGeneration;
  /** The plan every worker ran at load; a new generation runs the same. */
  private plan: WarmupPlan | undefined;
  private restarting: Promise<RestartReport> | undefined;
  private degradedValue = false;

  constructor(
    readonly modelName: string,
    readonly version: number,
    readonly config: ModelConfig,
    first: WorkerGeneration,
    /** This version's share of the memory ledger; destroyed with the version. */
    readonly memory: VersionMemory,
    private readonly startPool: PoolStarter,
  ) {
    this.signature = signatureFromConfig(config);
    this.current = first;
  }

  private get pool(): ModelPool {
    return this.current.pool;
  }

  /** The generation serving now and its live worker thread ids. */
  get generation(): { readonly number: number; readonly threadIds: readonly number[] } {
    return { number: this.current.number, threadIds: this.pool.threadIds };
  }

  /** Bytes the current generation's owner holds in the arena (the ledger's own count). */
  get generationArenaBytes(): number {
    return this.memory.generationBytes(this.current.owner);
  }

  /** Memory figures of the current generation's workers (see ModelPool.workerStats). */
  workerStats(timeoutMs: number): Promise<WorkerStats[]> {
    return this.pool.workerStats(timeoutMs);
  }

  get isRestarting(): boolean {
    return this.restarting !== undefined;
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

  /**
   * A rolling restart: starts a new generation with the same options, warms it
   * with the load's plan, switches dispatch to it, lets the old one finish its
   * tasks (piscina's close waits for them), stops it, and destroys its arena
   * owner. Requests keep being served throughout. Concurrent calls share one
   * restart. A new generation that fails to start or warm is discarded and
   * the old one keeps serving (the promise rejects).
   */
  restartWorkers(reason: string): Promise<RestartReport> {
    if (this.stateValue !== 'READY') return Promise.reject(new Error(`version is ${this.stateValue}, not READY`));
    this.restarting ??= this.restartNow(reason).finally(() => {
      this.restarting = undefined;
    });
    return this.restarting;
  }

  private async restartNow(_reason: string): Promise<RestartReport> {
    const started = performance.now();
    const old = this.current;
    const number = old.number + 1;
    const owner = this.memory.createGenerationOwner(number);
    let pool: ModelPool | undefined;
    try {
      pool = await this.startPool(number, owner);
      await pool.warmUp(this.plan ?? { samples: [], delayMs: 0 });
    } catch (err) {
      await pool?.close();
      this.memory.destroyGenerationOwner(owner);
      throw err;
    }
    if (this.stateValue !== 'READY') {
      // Unloaded meanwhile (unload waits for this restart): never switch to it.
      await pool.close();
      this.memory.destroyGenerationOwner(owner);
      throw new Error(`version became ${this.stateValue} during the restart`);
    }
    const oldThreadIds = old.pool.threadIds;
    this.current = { number, owner, pool };
    const switchMs = performance.now() - started;
    // Tasks already handed to the old pool finish there; nothing new reaches it.
    await old.pool.close();
    const freedBytes = this.memory.destroyGenerationOwner(old.owner);
    return {
      fromGeneration: old.number,
      toGeneration: number,
      oldThreadIds,
      newThreadIds: pool.threadIds,
      switchMs,
      totalMs: performance.now() - started,
      freedBytes,
    };
  }

  /** The tenant the model's memory is charged to (config parameter `tenant`). */
  get tenant(): string {
    return this.memory.tenant;
  }

  /** The workers' measured session footprint (see session-footprint.ts). */
  get measuredFootprintBytes(): number {
    return this.pool.footprintBytes;
  }

  get state(): VersionState {
    return this.stateValue;
  }

  /** Why the version is not READY ('' when it is). */
  get reason(): string {
    return this.reasonValue;
  }

  get versionLabel(): string {
    return String(this.version);
  }

  /** Seconds from the start of the load until READY (warm-up and golden checks included). */
  get loadSeconds(): number | undefined {
    return this.loadSecondsValue;
  }

  /** Requests admitted and not yet answered. */
  get pendingRequests(): number {
    return Math.max(this.requests, this.inFlight);
  }

  get batcher(): VersionBatcher | undefined {
    return this.batcherValue;
  }

  /** Attaches the dynamic batcher once the version is READY; it is stopped on unload. */
  attachBatcher(batcher: VersionBatcher): void {
    this.batcherValue = batcher;
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

  /** The pool's worker count (the batcher's instances). */
  get instances(): number {
    return this.pool.instances;
  }

  /** Live worker threads and queued tasks, for the pool-size gauges. */
  get poolThreads(): number {
    return this.pool.threads;
  }

  get poolQueueSize(): number {
    return this.pool.queueSize;
  }

  get poolInstances(): number {
    return this.pool.instances;
  }

  /** Records what the LOADING version is doing now (shown in RepositoryIndex and /healthz). */
  setLoadingReason(reason: string): void {
    if (this.stateValue === 'LOADING') this.reasonValue = reason;
  }

  /** Runs the plan in every worker of the pool (see ModelPool.warmUp). */
  warmUp(plan: WarmupPlan): Promise<WarmupReport> {
    this.setLoadingReason('warming up');
    this.plan = plan;
    return this.pool.warmUp(plan);
  }

  markReady(loadSeconds: number): void {
    if (this.stateValue !== 'LOADING') return;
    this.memory.loaded();
    this.stateValue = 'READY';
    this.reasonValue = '';
    this.loadSecondsValue = loadSeconds;
  }

  /**
   * Runs one task on this version's pool. Request callers check `state` first;
   * golden checks run here while the version is still LOADING.
   */
  async run(task: InferTask, transfer: ArrayBuffer[]): Promise<InferResult> {
    this.inFlight += 1;
    // Read once: a restart switching generations mid-call cannot split a task.
    const pool = this.pool;
    try {
      return await pool.infer(task, transfer);
    } finally {
      this.inFlight -= 1;
      this.notifyIfDrained();
    }
  }

  private notifyIfDrained(): void {
    if (this.inFlight === 0 && this.requests === 0) this.drained?.();
  }

  /**
   * Stops a load in progress (shutdown): closing the pool makes a pending
   * warm-up reject, so the load fails promptly instead of running to its end.
   */
  async abortLoad(): Promise<void> {
    if (this.stateValue === 'LOADING') await this.pool.close();
  }

  /** True when the version serves and no request runs on it: it may be evicted. */
  get idle(): boolean {
    return this.stateValue === 'READY' && this.inFlight === 0 && this.requests === 0 && this.restarting === undefined;
  }

  /** Stops admitting requests, waits for the admitted ones, then frees the workers. */
  async unload(reason = 'unloaded'): Promise<void> {
    if (this.stateValue === 'UNLOADING' || this.stateValue === 'UNAVAILABLE') return;
    this.stateValue = 'UNLOADING';
    this.reasonValue = '';
    if (this.inFlight > 0 || this.requests > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    // A restart in progress finishes (or discards its new generation) first.
    await this.restarting?.catch(() => undefined);
    // Nothing waits in the batcher now (every admitted request was answered).
    await this.batcherValue?.stop();
    await this.pool.close();
    // The sessions are gone: so is everything the version held in the ledger.
    this.memory.destroy();
    this.stateValue = 'UNAVAILABLE';
    this.reasonValue = reason;
  }
}
