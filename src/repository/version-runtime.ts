/**
 * The runtime of one model version: what its requests run on. Its one job is
 * to send a task to the right engine (the native executor, or the current
 * worker generation's onnxruntime pool) and to hold the version's dynamic
 * batcher attachment; whether the version may serve, and the counting that
 * lets an unload wait, belong to its life cycle (model-version.ts).
 *
 * Native executor: a version selected for the executor (KIND_GPU on a usable
 * device, or parameter `executor: native`) has a VersionExecutor and no pool
 * at load. Its batches go natively from the batcher to the executor; its
 * warm-up, golden checks and direct runs go through `run`. When the executor
 * moves the version to CPU (a device error), the onnxruntime pool is started
 * and warmed on demand with the load's warm-up plan, and the work that failed
 * re-runs there; when the device comes back the pool is retired again.
 *
 * Ownership: this object owns the version's worker generations
 * (worker-generations.ts), its executor and its batcher attachment, and
 * closes all three on `close`. Main thread only.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
import { signatureFromConfig, type ModelSignature } from '../tensor/model-signature.js';
import type { WarmupReport } from '../workers/model-pool.js';
import type { WorkerPoolTarget } from '../native/worker-channel.js';
import type { ChannelSpec } from '../workers/worker-protocol.js';
import { epochMs, type InferResult, type InferTask, type WarmupPlan } from '../workers/worker-protocol.js';
import type { BatcherAttachment } from '../batching/version-batcher.js';
import type { VersionMemory } from './version-memory.js';
import { DeviceFaultError, type ExecutorKind, type VersionExecutor } from '../executor/version-executor.js';
import { WorkerGenerations, type ChannelTensors, type PoolStarter, type RestartReport, type WorkerGeneration } from './worker-generations.js';

/** Test-only config parameter: each worker exits on its Nth batch from its channel (see ChannelSpec.crashOnBatch). */
export const CRASH_CHANNEL_BATCH_PARAMETER = 'hotpath_fault_crash_channel_batch';

/** Runs one task; the life cycle passes its counted `run`, so an unload waits for warm-up runs too. */
export type TaskRunner = (task: InferTask) => Promise<InferResult>;

export class VersionRuntime {
  readonly signature: ModelSignature;
  /** The worker pools, current and replacing; empty while a native version runs on its executor. */
  readonly workers: WorkerGenerations;
  /** Set when the version batches dynamically (see batching/version-batcher.ts). */
  private batcherValue: BatcherAttachment | undefined;
  /** Set for a version selected for the native executor. */
  private nativeValue: VersionExecutor | undefined;
  /** Why the version runs on onnxruntime although the executor was asked for ('' otherwise). */
  private executorNoteValue = '';

  constructor(
    private readonly config: ModelConfig,
    first: WorkerGeneration | undefined,
    memory: VersionMemory,
    startPool: PoolStarter,
    /** Instances (instance_group counts): pool workers, or executor instance threads. */
    readonly instances: number,
  ) {
    this.signature = signatureFromConfig(config);
    this.workers = new WorkerGenerations(first, memory, startPool, () => this.channelTensors());
  }

  /**
   * Where the batcher hands sealed batches to the current generation's
   * workers natively; undefined for versions with a native executor (their
   * CPU pool is reached through piscina) or when the addon cannot.
   */
  get workerTarget(): WorkerPoolTarget | undefined {
    return this.nativeValue === undefined ? this.workers.pool?.target : undefined;
  }

  /**
   * The model's tensors as the workers' batch channels see them; undefined
   * (no channels) for native-executor versions and for BYTES tensors, whose
   * elements cannot live in batch memory.
   */
  private channelTensors(): ChannelTensors | undefined {
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

  /** Attaches the executor (before warm-up). A version that was asked for it and did not get it has a note instead (setExecutorNote). */
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

  get batcher(): BatcherAttachment | undefined {
    return this.batcherValue;
  }

  /** Attaches the dynamic batcher once the version is READY; it is stopped on close. */
  attachBatcher(batcher: BatcherAttachment): void {
    this.batcherValue = batcher;
  }

  /**
   * Requests accepted and not yet started executing (Triton's
   * nv_inference_pending_request_count): those queued in the batcher, plus
   * tasks waiting for a free worker of the pool, i.e. requests that run alone
   * (batches are sealed only for an idle instance, so they do not wait
   * there). A request that is executing is not pending.
   */
  get pendingRequests(): number {
    return (this.batcherValue?.pendingRequests ?? 0) + this.workers.queueSize;
  }

  /** A native version is back on its executor: the CPU pool finishes its tasks and goes, with its host footprint. */
  retireCpuPool(): Promise<void> {
    return this.workers.retire(() => this.nativeValue?.active === true);
  }

  /** A rolling restart of the workers (WorkerGenerations.restart); batches sealed after the switch go to the new generation. */
  restartWorkers(notServing: () => string | undefined): Promise<RestartReport> {
    return this.workers.restart(notServing, () => this.batcherValue?.useWorkerTarget(this.workerTarget));
  }

  /**
   * Runs the plan in every worker of the pool (see ModelPool.warmUp), or on
   * the executor through `run`: each sample `runs` times per instance.
   */
  async warmUp(plan: WarmupPlan, run: TaskRunner): Promise<WarmupReport> {
    this.workers.usePlan(plan);
    const native = this.nativeValue;
    if (native === undefined || !native.active) return (await this.workers.ensurePool()).warmUp(plan, this.channelTensors());
    const started = performance.now();
    const warnings: string[] = [];
    let runs = 0;
    for (const sample of plan.samples) {
      for (let i = 0; i < sample.runs * this.instances; i++) {
        try {
          await run({ kind: 'infer', inputs: sample.inputs, outputNames: this.signature.outputs.map((o) => o.name), queuedAtMs: epochMs() });
          runs += 1;
        } catch (err) {
          const message = `warm-up sample '${sample.name}' failed: ${err instanceof Error ? err.message : String(err)}`;
          if (sample.required) throw new Error(message);
          warnings.push(message);
          break;
        }
      }
    }
    return { workers: this.instances, runsPerWorker: runs / this.instances, maxWorkerMs: performance.now() - started, warnings };
  }

  /** Runs one task on the executor, or on the current pool when the version is on CPU (uncounted: see ModelVersion.run). */
  async run(task: InferTask, transfer: ArrayBuffer[]): Promise<InferResult> {
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
    const pool = await this.workers.ensurePool();
    return await pool.infer(task, transfer);
  }

  /**
   * Frees the engines once no request is left (unload): a restart in progress
   * settles first, then the batcher stops, the pool closes, and the
   * executor's threads are joined (before its memory goes with the owner).
   */
  async close(): Promise<void> {
    await this.workers.restartSettled();
    // Nothing waits in the batcher now (every admitted request was answered).
    await this.batcherValue?.stop();
    await this.workers.close();
    await this.nativeValue?.close();
  }

  /** Tells every engine to stop without waiting for any (an abandoned load). */
  abandon(): void {
    void this.batcherValue?.stop().catch(() => undefined);
    this.workers.abandon();
    void this.nativeValue?.close().catch(() => undefined);
  }
}
