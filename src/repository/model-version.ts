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
 *
 * Native executor: a version selected for the executor (KIND_GPU on a usable
 * device, or parameter `executor: native`) has a VersionExecutor and no pool
 * at load. Its batches go natively from the batcher to the executor; its
 * warm-up, golden checks and direct runs go through `run`. When the executor
 * moves the version to CPU (a device error), the onnxruntime pool is started
 * and warmed on demand with the load's warm-up plan, and the work that failed
 * re-runs there; when the device comes back the pool is retired again.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
import { signatureFromConfig, type ModelSignature } from '../tensor/model-signature.js';
import type { ModelPool, WarmupReport } from '../workers/model-pool.js';
import type { WorkerPoolTarget } from '../native/worker-channel.js';
import type { ChannelSpec } from '../workers/worker-protocol.js';
import { epochMs, type InferResult, type InferTask, type WarmupPlan } from '../workers/worker-protocol.js';
import { InferenceStatistics } from './inference-statistics.js';
import type { BatcherAttachment } from '../batching/version-batcher.js';
import type { VersionMemory } from './version-memory.js';
import type { Owner } from '../native/arena.js';
import type { WorkerStats } from '../workers/model-pool.js';
import { DeviceFaultError, type ExecutorKind, type VersionExecutor } from '../executor/version-executor.js';

export type VersionState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

/** Test-only config parameter: each worker exits on its Nth batch from its channel (see ChannelSpec.crashOnBatch). */
export const CRASH_CHANNEL_BATCH_PARAMETER = 'hotpath_fault_crash_channel_batch';

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
  private batcherValue: BatcherAttachment | undefined;
  /** The generation new tasks go to; undefined while a native version runs on its executor. */
  private current: WorkerGeneration | undefined;
  /** A CPU pool being started on demand (native versions), shared by the tasks that wait for it. */
  private poolStarting: Promise<WorkerGeneration> | undefined;
  /** Generation 1 is started at load (onnxruntime versions); later ones count on from 2. */
  private nextGeneration = 2;
  /** Set for a version selected for the native executor. */
  private nativeValue: VersionExecutor | undefined;
  /** Why the version runs on onnxruntime although the executor was asked for ('' otherwise). */
  private executorNoteValue = '';
  /** The plan every worker ran at load; a new generation runs the same. */
  private plan: WarmupPlan | undefined;
  private restarting: Promise<RestartReport> | undefined;
  private degradedValue = false;

  constructor(
    readonly modelName: string,
    readonly version: number,
    readonly config: ModelConfig,
    first: WorkerGeneration | undefined,
    /** This version's share of the memory ledger; destroyed with the version. */
    readonly memory: VersionMemory,
    private readonly startPool: PoolStarter,
    /** Instances (instance_group counts): pool workers, or executor instance threads. */
    private readonly instanceCount: number,
  ) {
    this.signature = signatureFromConfig(config);
    this.current = first;
  }

  private get pool(): ModelPool | undefined {
    return this.current?.pool;
  }

  /**
   * Where the batcher hands sealed batches to the current generation's
   * workers natively; undefined for versions with a native executor (their
   * CPU pool is reached through piscina) or when the addon cannot.
   */
  get workerTarget(): WorkerPoolTarget | undefined {
    return this.nativeValue === undefined ? this.pool?.target : undefined;
  }

  /**
   * The model's tensors as the workers' batch channels see them; undefined
   * (no channels) for native-executor versions and for BYTES tensors, whose
   * elements cannot live in batch memory.
   */
  private channelTensors(): Omit<ChannelSpec, 'pool'> | undefined {
    if (this.nativeValue !== undefined) return undefined;
    const tensors = (specs: typeof this.signature.inputs) =>
      specs.map((spec) => (spec.ortType === 'string' ? undefined : { name: spec.name, type: spec.ortType }));
    const inputs = tensors(this.signature.inputs);
    const outputs = tensors(this.signature.outputs);
    if ([...inputs, ...outputs].some((tensor) => tensor === undefined)) return undefined;
    // Test-only; the workers honour it only with fault injection on.
    const crash = Number(this.config.parameters[CRASH_CHANNEL_BATCH_PARAMETER]?.stringValue ?? Number.NaN);
    return {
      inputs: inputs as ChannelSpec['inputs'],
      outputs: outputs as ChannelSpec['outputs'],
      ...(Number.isInteger(crash) && crash > 0 ? { crashOnBatch: crash } : {}),
    };
  }

  /** The native executor of this version, when it was selected for one. */
  get native(): VersionExecutor | undefined {
    return this.nativeValue;
  }

  /** Attaches the executor (before warm-up); setExecutorNote says why, when the executor is not used. */
  attachNative(native: VersionExecutor): void {
    this.nativeValue = native;
  }

  /** Records why the version runs on onnxruntime although the executor was asked for. */
  setExecutorNote(note: string): void {
    this.executorNoteValue = note;
  }

  /** Where the version's batches run now (/healthz). */
  get executorKind(): ExecutorKind {
    return this.nativeValue?.kind ?? 'onnxruntime';
  }

  /** Why the version is not on the native executor when it was asked for ('' otherwise). */
  get executorReason(): string {
    return this.nativeValue?.reason || this.executorNoteValue;
  }

  /** The generation serving now and its live worker thread ids (number 0, no threads: on the executor). */
  get generation(): { readonly number: number; readonly threadIds: readonly number[] } {
    return { number: this.current?.number ?? 0, threadIds: this.pool?.threadIds ?? [] };
  }

  /** Bytes the current generation's owner holds in the arena (the ledger's own count). */
  get generationArenaBytes(): number {
    return this.current === undefined ? 0 : this.memory.generationBytes(this.current.owner);
  }

  /** Memory figures of the current generation's workers (see ModelPool.workerStats); none on the executor. */
  workerStats(timeoutMs: number): Promise<WorkerStats[]> {
    return this.pool?.workerStats(timeoutMs) ?? Promise.resolve([]);
  }

  /**
   * The onnxruntime pool, started and warmed with the load's plan on first
   * need (a native version that moved to CPU). Concurrent callers share one start.
   */
  private ensurePool(): Promise<ModelPool> {
    if (this.current !== undefined) return Promise.resolve(this.current.pool);
    this.poolStarting ??= this.startOnDemand().finally(() => {
      this.poolStarting = undefined;
    });
    return this.poolStarting.then((generation) => generation.pool);
  }

  /**
   * Starts the next generation's pool and warms it with the load's plan; a
   * pool that fails to start or warm is closed and its owner destroyed.
   */
  private async startGeneration(): Promise<WorkerGeneration> {
    const number = this.nextGeneration++;
    const owner = this.memory.createGenerationOwner(number);
    let pool: ModelPool | undefined;
    try {
      pool = await this.startPool(number, owner);
      await pool.warmUp(this.plan ?? { samples: [], delayMs: 0 }, this.channelTensors());
    } catch (err) {
      await pool?.close();
      this.memory.destroyGenerationOwner(owner);
      throw err;
    }
    return { number, owner, pool };
  }

  private async startOnDemand(): Promise<WorkerGeneration> {
    const generation = await this.startGeneration();
    // Charged best-effort: the requests waiting for this pool must not fail on it.
    try {
      this.memory.chargeFootprint(generation.pool.footprintBytes);
    } catch {
      // Over the host quota: the pool still serves; the patrol and metrics show the usage.
    }
    this.current = generation;
    return generation;
  }

  /** A native version is back on its executor: the CPU pool finishes its tasks and goes, with its host footprint. */
  async retireCpuPool(): Promise<void> {
    await this.poolStarting?.catch(() => undefined);
    const old = this.current;
    if (old === undefined || this.nativeValue?.active !== true) return;
    this.current = undefined;
    await old.pool.close();
    this.memory.destroyGenerationOwner(old.owner);
    this.memory.releaseFootprint();
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
    if (this.current === undefined) return Promise.reject(new Error('version runs on the native executor: it has no worker pool'));
    this.restarting ??= this.restartNow(reason).finally(() => {
      this.restarting = undefined;
    });
    return this.restarting;
  }

  private async restartNow(_reason: string): Promise<RestartReport> {
    const started = performance.now();
    const old = this.current;
    if (old === undefined) throw new Error('version runs on the native executor: it has no worker pool');
    const { number, owner, pool } = await this.startGeneration();
    if (this.stateValue !== 'READY') {
      // Unloaded meanwhile (unload waits for this restart): never switch to it.
      await pool.close();
      this.memory.destroyGenerationOwner(owner);
      throw new Error(`version became ${this.stateValue} during the restart`);
    }
    const oldThreadIds = old.pool.threadIds;
    if (this.current !== old) {
      // Retired meanwhile (the version went back to its executor): never switch to it.
      await pool.close();
      this.memory.destroyGenerationOwner(owner);
      throw new Error('the worker pool was retired during the restart');
    }
    this.current = { number, owner, pool };
    // Batches sealed from now on go to the new generation's workers.
    this.batcherValue?.useWorkerTarget(this.workerTarget);
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

  /** The workers' measured session footprint (see session-footprint.ts); 0 on the executor. */
  get measuredFootprintBytes(): number {
    return this.pool?.footprintBytes ?? 0;
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

  /**
   * Requests accepted and not yet started executing (Triton's
   * nv_inference_pending_request_count): those queued in the batcher, plus
   * tasks waiting for a free worker of the pool, i.e. requests that run alone
   * (batches are sealed only for an idle instance, so they do not wait
   * there). A request that is executing is not pending.
   */
  get pendingRequests(): number {
    return (this.batcherValue?.pendingRequests ?? 0) + (this.pool?.queueSize ?? 0);
  }

  get batcher(): BatcherAttachment | undefined {
    return this.batcherValue;
  }

  /** Attaches the dynamic batcher once the version is READY; it is stopped on unload. */
  attachBatcher(batcher: BatcherAttachment): void {
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

  /** Instances from instance_group (the batcher's instances): pool workers or executor threads. */
  get instances(): number {
    return this.instanceCount;
  }

  /** Live worker threads and queued tasks, for the pool-size gauges (0 while on the executor). */
  get poolThreads(): number {
    return this.pool?.threads ?? 0;
  }

  get poolQueueSize(): number {
    return this.pool?.queueSize ?? 0;
  }

  get poolInstances(): number {
    return this.pool?.instances ?? 0;
  }

  /** Records what the LOADING version is doing now (shown in RepositoryIndex and /healthz). */
  setLoadingReason(reason: string): void {
    if (this.stateValue === 'LOADING') this.reasonValue = reason;
  }

  /**
   * Runs the plan in every worker of the pool (see ModelPool.warmUp), or on
   * the executor: each sample `runs` times per instance.
   */
  async warmUp(plan: WarmupPlan): Promise<WarmupReport> {
    this.setLoadingReason('warming up');
    this.plan = plan;
    const native = this.nativeValue;
    if (native === undefined || !native.active) return (await this.ensurePool()).warmUp(plan, this.channelTensors());
    const started = performance.now();
    const warnings: string[] = [];
    let runs = 0;
    for (const sample of plan.samples) {
      for (let i = 0; i < sample.runs * this.instanceCount; i++) {
        try {
          await this.run(
            { kind: 'infer', inputs: sample.inputs, outputNames: this.signature.outputs.map((o) => o.name), queuedAtMs: epochMs() },
            [],
          );
          runs += 1;
        } catch (err) {
          const message = `warm-up sample '${sample.name}' failed: ${err instanceof Error ? err.message : String(err)}`;
          if (sample.required) throw new Error(message);
          warnings.push(message);
          break;
        }
      }
    }
    return { workers: this.instanceCount, runsPerWorker: runs / this.instanceCount, maxWorkerMs: performance.now() - started, warnings };
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
      const native = this.nativeValue;
      if (native?.active === true) {
        try {
          return await native.runTask(task);
        } catch (err) {
          // The version moved to CPU; the task re-runs there from its host copy.
          if (!(err instanceof DeviceFaultError)) throw err;
        }
      }
      // Read once: a restart switching generations mid-call cannot split a task.
      const pool = await this.ensurePool();
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
    if (this.stateValue === 'LOADING') await this.pool?.close();
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
    void this.batcherValue?.stop().catch(() => undefined);
    this.pool?.abandon();
    void this.poolStarting?.then((generation) => generation.pool.abandon(), () => undefined);
    void this.nativeValue?.close().catch(() => undefined);
    this.memory.destroy();
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
    await this.poolStarting?.catch(() => undefined);
    await this.pool?.close();
    // The executor's threads are joined before its memory goes with the owner.
    await this.nativeValue?.close();
    // The sessions are gone: so is everything the version held in the ledgers.
    this.memory.destroy();
    this.stateValue = 'UNAVAILABLE';
    this.reasonValue = reason;
  }
}
