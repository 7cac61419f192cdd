/**
 * One loaded version of a model: its completed config, request signature,
 * worker pool, statistics and in-flight accounting.
 *
 * Lifecycle: LOADING (workers started; warm-up and golden checks running, with
 * a reason saying which) → READY → UNLOADING when an unload or a replacing
 * reload starts (no new requests admitted) → UNAVAILABLE once the in-flight
 * requests finished and the pool closed. A version that fails while LOADING
 * goes straight to UNAVAILABLE with the failure as its reason. Main thread only.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
import { signatureFromConfig, type ModelSignature } from '../server/model-signature.js';
import type { ModelPool, WarmupReport } from '../workers/model-pool.js';
import type { InferResult, InferTask, WarmupPlan } from '../workers/worker-protocol.js';
import { InferenceStatistics } from './inference-statistics.js';
import type { VersionBatcher } from '../batching/version-batcher.js';
import type { VersionMemory } from './version-memory.js';

export type VersionState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

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

  constructor(
    readonly modelName: string,
    readonly version: number,
    readonly config: ModelConfig,
    private readonly pool: ModelPool,
    /** This version's share of the memory ledger; destroyed with the version. */
    readonly memory: VersionMemory,
  ) {
    this.signature = signatureFromConfig(config);
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
    try {
      return await this.pool.infer(task, transfer);
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
    return this.stateValue === 'READY' && this.inFlight === 0 && this.requests === 0;
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
    // Nothing waits in the batcher now (every admitted request was answered).
    await this.batcherValue?.stop();
    await this.pool.close();
    // The sessions are gone: so is everything the version held in the ledger.
    this.memory.destroy();
    this.stateValue = 'UNAVAILABLE';
    this.reasonValue = reason;
  }
}
