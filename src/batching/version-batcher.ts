/**
 * Dynamic batching for one model version: the native batcher (Triton's rules,
 * a real timer thread) assembles requests in place in arena memory, and this
 * module runs each sealed batch on the version's worker pool and hands every
 * request its own rows of the outputs.
 *
 * Memory, per batch:
 *   - inputs: the batcher copied each request's bytes once into the batch's
 *     arena blocks (charged to the tenant); the worker maps them, no copy;
 *   - outputs: when an output's shape follows from the row count, it is
 *     pre-allocated in the arena and onnxruntime fills it in place (fetches);
 *     otherwise onnxruntime allocates it and the buffer is transferred back;
 *   - the input blocks are released when the run ends, the output blocks when
 *     the batch's last request has built its response. Nothing stays charged.
 *
 * Which versions batch: those whose config has `dynamic_batching` and
 * max_batch_size > 0, without BYTES tensors (their variable-size elements
 * cannot be packed into fixed rows). Other numeric onnxruntime versions get a
 * batcher in max_batch_size-0 mode (one request per batch, shapes as sent)
 * when their workers take batches natively, so every numeric request takes
 * one path: decode, validate, place, enqueue, executed. BYTES versions run
 * one request at a time through piscina.
 *
 * onnxruntime versions: sealed batches go from the batcher thread straight to
 * an idle worker of the current generation (`useWorkerTarget`, see
 * src/native/worker-channel.ts) and come back once, executed. A batch whose
 * worker died (WORKER_CRASHED) re-runs once here through piscina. Without a
 * worker target (an addon that cannot), batches come here (`onBatch`) and go
 * to the pool through piscina.
 *
 * Versions on the native executor always have a batcher: without
 * `dynamic_batching` it runs in max_batch_size-0 mode (every request is its
 * own batch, shapes as sent), so every request takes the same native path.
 * Their sealed batches go from the batcher thread straight to the executor
 * (`setNativeTarget`); this thread sees each batch once, executed
 * (`onExecuted`). A batch that failed on the device is re-run here on the
 * onnxruntime pool from its host copy, after the version moved to CPU.
 *
 * Main thread only (the Batcher delivers batches on the thread that made it).
 */
import type { Logger } from 'pino';
import type { ModelDynamicBatching } from '../generated/model_config_pb.js';
import { ModelQueuePolicy_TimeoutAction } from '../generated/model_config_pb.js';
import { kindOfExecutionFailure } from '../common/error-kinds.js';
import { ServingError } from '../common/serving-error.js';
import { WorkerRunError } from '../workers/run-failure.js';
import {
  Batcher,
  BatcherRejection,
  type ExecutedResult,
  type QueuePolicyOptions,
  type SealedBatch,
  type SharedBatcher,
  type SealedSlice,
} from '../native/batcher.js';
import type { Executor } from '../native/executor.js';
import type { WorkerPoolTarget } from '../native/worker-channel.js';
import type { Block } from '../native/arena.js';
import type { ModelSignature, TensorSpec } from '../tensor/model-signature.js';
import type { ModelConfig } from '../generated/model_config_pb.js';
import type { VersionExecutor } from '../executor/version-executor.js';
import { ARENA_NAME } from '../tenancy/server-memory.js';
import { elementCount } from '../tensor/shape.js';
import { ResponseOrder } from './response-order.js';
import { wireTypeInfo, type NumericArray } from '../tensor/wire-types.js';
import {
  epochMs,
  isArenaPayload,
  type ArenaTensorPayload,
  type InferResult,
  type InferTask,
  type WorkerTiming,
} from '../workers/worker-protocol.js';

/**
 * One output of an executed batch, all rows. A request takes a copy of its
 * rows (`copy`), never a view: the answer outlives the batch's memory, and
 * the native batch's outputs are copied straight out of arena memory without
 * an external view, whose detach would cost the main thread one more
 * event-loop turn per batch (see ExecutedOutput.copy).
 */
interface BatchOutput {
  readonly dims: readonly number[];
  /** Bytes of all rows. */
  readonly byteLength: number;
  /** A copy of bytes [byteOffset, byteOffset + byteLength), the caller's own. */
  copy(byteOffset: number, byteLength: number): Uint8Array;
}

/** A BatchOutput over bytes this thread already holds (a piscina run's, or its arena block's view). */
function heldOutput(bytes: Uint8Array, dims: readonly number[]): BatchOutput {
  return {
    dims,
    byteLength: bytes.byteLength,
    copy: (byteOffset, byteLength) => bytes.slice(byteOffset, byteOffset + byteLength),
  };
}

/** An executed batch: its outputs and timing, shared by the batch's requests. */
export interface BatchResult {
  readonly outputs: ReadonlyMap<string, BatchOutput>;
  readonly timing: WorkerTiming;
  readonly rows: number;
}

/** One request's share of a batch: its rows of every output. */
export interface RequestRows {
  readonly result: BatchResult;
  readonly rowOffset: number;
  readonly rows: number;
  /** Time queued in the batcher, ns. */
  readonly batcherQueueNs: number;
  /** max_batch_size-0 mode: the request's outputs are the batch's, whole, with their own shapes. */
  readonly whole: boolean;
  /** Call when the response is built: the batch's output blocks go once every request is done. */
  readonly done: () => void;
}

/**
 * What a version needs of its dynamic batcher (`batcherOf(version)` gives the
 * full one to the request path). The version's runtime
 * (repository/version-runtime.ts) holds one through this interface.
 */
export interface BatcherAttachment {
  /** Pending requests get UNAVAILABLE; called once nothing is admitted any more. */
  stop(): Promise<void>;
  /** Sends sealed batches to the executor natively (undefined: to the onnxruntime pool). */
  setNativeTarget(executor: Executor | undefined): void;
  /** Sends sealed batches to a worker generation's channels natively (undefined: through piscina). */
  useWorkerTarget(target: WorkerPoolTarget | undefined): void;
  /** Requests queued and not yet sealed into a batch (sealing hands the batch to an idle instance). */
  readonly pendingRequests: number;
}

/**
 * What the batcher reads of the version it batches for: the loaded version
 * (repository/model-version.ts) is one. An interface here because the
 * repository sits above batching in the folder order.
 */
export interface BatchedVersion {
  readonly modelName: string;
  readonly versionLabel: string;
  readonly tenant: string;
  readonly config: ModelConfig;
  readonly signature: ModelSignature;
  /** Instances from instance_group: pool workers or executor threads. */
  readonly instances: number;
  /** The version's share of the arena: batches allocate their outputs under its owner. */
  readonly memory: { readonly ownerId: number; allocOutput(bytes: number): Block };
  /**
   * Set for a version selected for the native executor: its state, its
   * move to CPU on a device fault, and (on the thread that created the
   * batcher) the executor batches go to. A front-door thread's view has no
   * executor and is never `active` (a batch it would re-run is the main
   * thread's).
   */
  readonly native: (Pick<VersionExecutor, 'active' | 'fallBack'> & { readonly executor?: Executor | undefined }) | undefined;
  /** Where sealed batches reach the current worker generation natively; undefined: through piscina. */
  readonly workerTarget: WorkerPoolTarget | undefined;
  /** The attached batcher, when the version batches. */
  readonly batcher: BatcherAttachment | undefined;
  /** One task on the version's onnxruntime pool (a batch the executor could not run, say). */
  run(task: InferTask, transfer: ArrayBuffer[]): Promise<InferResult>;
}

export interface VersionBatcherHooks<V extends BatchedVersion = BatchedVersion> {
  /** Called once per executed batch (statistics and metrics count executions here). */
  readonly onExecuted: (version: V, rows: number, timing: WorkerTiming) => void;
  readonly logger: Logger;
}

/**
 * One sealed batch in flight. Its output memory is released exactly once:
 * when the run has settled and every request of the batch has built its
 * response (or learned of the failure), whichever comes last.
 */
class Execution {
  /** Requests of the batch that have not built their response yet. */
  private pending: number;
  private settled = false;
  private released = false;

  constructor(
    readonly result: Promise<BatchResult>,
    requests: number,
    /** Frees the outputs: arena blocks (onnxruntime) or the executed batch itself (executor). */
    private readonly releaseOutputs: () => void,
  ) {
    this.pending = requests;
    // Requests await `result`; this keeps a failure from counting as unhandled meanwhile.
    result.catch(() => undefined);
  }

  /** The run ended (success or failure). */
  runSettled(): void {
    this.settled = true;
    this.releaseIfDone();
  }

  /** One request is done with the outputs. */
  requestDone(): void {
    this.pending -= 1;
    this.releaseIfDone();
  }

  private releaseIfDone(): void {
    if (this.released || !this.settled || this.pending > 0) return;
    this.released = true;
    this.releaseOutputs();
  }
}

/** The version's dynamic batcher, when it has one (what the request path enqueues into). */
export function batcherOf(version: Pick<BatchedVersion, 'batcher'>): VersionBatcher | undefined {
  const batcher = version.batcher;
  return batcher instanceof VersionBatcher ? batcher : undefined;
}

export class VersionBatcher<V extends BatchedVersion = BatchedVersion> implements BatcherAttachment {
  private readonly batcher: Batcher;
  /** Set with `preserve_ordering`: answers leave in arrival order. */
  private readonly order: ResponseOrder | undefined;

  /** max_batch_size-0 mode (a native version without dynamic_batching): one request per batch, shapes as sent. */
  private readonly unbatched: boolean;

  private constructor(
    private readonly version: V,
    dynamic: ModelDynamicBatching | undefined,
    private readonly hooks: VersionBatcherHooks<V>,
    /** undefined: create the version's batcher here; set: attach to the batcher another thread created. */
    shared?: SharedBatcher,
  ) {
    const signature = version.signature;
    this.unbatched = dynamic === undefined || signature.maxBatchSize === 0;
    this.order = dynamic?.preserveOrdering === true ? new ResponseOrder() : undefined;
    const onExecuted = (batch: SealedBatch, result: ExecutedResult) => this.executed(batch, result);
    if (shared !== undefined) {
      this.batcher = Batcher.attach(shared, { onExecuted });
      return;
    }
    this.batcher = Batcher.create({
      arena: ARENA_NAME,
      tenant: version.tenant,
      owner: version.memory.ownerId,
      modelName: `${version.modelName}:${version.versionLabel}`,
      inputs: signature.inputs.map((spec) => ({
        name: spec.name,
        elementBytes: wireTypeInfo(spec.datatype).size,
        // Unbatched mode: the full shape, its batch dimension free.
        dims: this.unbatched && signature.maxBatchSize > 0 ? [-1, ...modelDims(spec)] : modelDims(spec),
      })),
      maxBatchSize: this.unbatched ? 0 : signature.maxBatchSize,
      ...(dynamic === undefined
        ? {}
        : {
            preferredBatchSizes: this.unbatched ? [] : dynamic.preferredBatchSize.map(Number),
            maxQueueDelayUs: Number(dynamic.maxQueueDelayMicroseconds),
            preserveOrdering: dynamic.preserveOrdering,
            priorityLevels: Number(dynamic.priorityLevels),
            ...(Number(dynamic.priorityLevels) > 0 ? { defaultPriorityLevel: Number(dynamic.defaultPriorityLevel) } : {}),
            ...(dynamic.defaultQueuePolicy ? { defaultQueuePolicy: queuePolicy(dynamic.defaultQueuePolicy) } : {}),
            priorityQueuePolicy: Object.fromEntries(
              Object.entries(dynamic.priorityQueuePolicy).map(([level, policy]) => [Number(level), queuePolicy(policy)]),
            ),
          }),
      instances: version.instances,
      onBatch: (batch) => this.execute(batch, true),
      onExecuted,
    });
  }

  /**
   * A front-door thread's handle on the batcher the main thread created for
   * the same version (`share()` there): requests enqueued here are answered
   * here, straight from the native side. Only batches a native target runs
   * reach a door (the main thread runs the others), so the version it is
   * given is a door's view: its `run` and `memory.allocOutput` refuse, and a
   * batch that would re-run fails its requests with that refusal (the door
   * then hands them to the main thread).
   */
  static attach<V extends BatchedVersion>(version: V, shared: SharedBatcher, hooks: VersionBatcherHooks<V>): VersionBatcher<V> {
    const scheduling = version.config.schedulingChoice;
    return new VersionBatcher(version, scheduling.case === 'dynamicBatching' ? scheduling.value : undefined, hooks, shared);
  }

  /** The native batcher's process-wide id (the same in every thread's handle). */
  get id(): number {
    return this.batcher.id;
  }

  /** What a front-door thread needs to attach to this batcher (plain data for postMessage). */
  share(): SharedBatcher {
    return this.batcher.share();
  }

  /** A batcher for `version`, or undefined when the version does not batch (see the file comment). */
  static forVersion<V extends BatchedVersion>(version: V, hooks: VersionBatcherHooks<V>): VersionBatcher<V> | undefined {
    const scheduling = version.config.schedulingChoice;
    const dynamic = scheduling.case === 'dynamicBatching' ? scheduling.value : undefined;
    const signature = version.signature;
    if (version.native !== undefined) {
      const batcher = new VersionBatcher(version, dynamic, hooks);
      if (version.native.active) batcher.setNativeTarget(version.native.executor);
      return batcher;
    }
    const bytes = [...signature.inputs, ...signature.outputs].find((spec) => spec.datatype === 'BYTES');
    if (bytes !== undefined) {
      if (dynamic !== undefined && signature.maxBatchSize > 0) {
        hooks.logger.warn(
          { model: version.modelName, model_version: version.versionLabel },
          `dynamic_batching ignored: tensor '${bytes.name}' is BYTES, whose elements cannot be packed into rows`,
        );
      }
      return undefined;
    }
    const target = version.workerTarget;
    // Without dynamic batching, a batcher in max_batch_size-0 mode only pays
    // off when its batches reach the workers natively.
    if ((dynamic === undefined || signature.maxBatchSize === 0) && target === undefined) return undefined;
    const batcher = new VersionBatcher(version, dynamic, hooks);
    batcher.useWorkerTarget(target);
    return batcher;
  }

  /**
   * Queues one validated request (its inputs as byte views, model order, rows
   * first in each shape) and resolves with its rows of the executed batch.
   * Rejections (queue full, timeout, deadline, quota, shutdown) are
   * BatcherRejections carrying their gRPC status; such requests never ran.
   */
  async infer(request: {
    rows: number;
    inputs: readonly Uint8Array[];
    dims: readonly (readonly number[])[];
    priority: number;
    timeoutUs: number;
    deadlineMs: number | undefined;
  }): Promise<RequestRows> {
    let slice: SealedSlice;
    try {
      // Validated once, by prepareBatchedInference against the signature this batcher was made from.
      slice = await this.batcher.enqueueValidated({
        rows: this.unbatched ? 1 : request.rows,
        inputs: request.inputs,
        // As sent: the batcher reads only the dims its template leaves open.
        shapes: request.dims,
        priority: request.priority,
        timeoutUs: request.timeoutUs,
        deadlineMs: request.deadlineMs === undefined ? undefined : request.deadlineMs - Date.now(),
      });
    } catch (err) {
      // An accepted request that was dropped still answers in its place.
      if (err instanceof BatcherRejection && err.sequence !== undefined && this.order !== undefined) await this.order.turn(err.sequence);
      throw err;
    }
    // Each request of a batch gets the batch's Execution from the handler that took it (no lookup).
    const execution = slice.handle;
    if (!(execution instanceof Execution)) throw new Error(`batch ${slice.batch.batchId} was sealed but never dispatched`);
    const done = () => execution.requestDone();
    let result: BatchResult;
    try {
      result = await execution.result;
    } catch (err) {
      done();
      if (this.order !== undefined) await this.order.turn(slice.sequence);
      throw err;
    }
    // Only a model that preserves ordering waits its turn; `await undefined` would still cost a microtask.
    if (this.order !== undefined) await this.order.turn(slice.sequence);
    return { result, rowOffset: slice.rowOffset, rows: slice.rows, batcherQueueNs: slice.queueNs, whole: this.unbatched, done };
  }

  /**
   * Sends sealed batches straight to `executor` from the batcher thread
   * (undefined: back to this thread and the onnxruntime pool). Batches sealed
   * after the call go to the new target.
   */
  setNativeTarget(executor: Executor | undefined): void {
    if (!this.batcher.stopped) this.batcher.setTarget(executor);
  }

  /**
   * Sends sealed batches straight to the workers of `target` (a worker
   * generation's native pool) from the batcher thread; undefined: back to
   * this thread and through piscina. Batches sealed after the call go the
   * new way.
   */
  useWorkerTarget(target: WorkerPoolTarget | undefined): void {
    if (this.batcher.stopped) return;
    if (target === undefined) {
      this.batcher.setTarget(undefined);
      return;
    }
    this.batcher.setWorkerTarget(
      target,
      this.version.signature.outputs.map((spec) => {
        const dims = modelDims(spec);
        // Known per-row dims are pre-allocated as [rows, ...dims]; the rest the worker's run allocates.
        const known = !this.unbatched && dims.every((dim) => dim >= 0);
        return { name: spec.name, elementBytes: wireTypeInfo(spec.datatype).size, dims: known ? dims : null };
      }),
    );
  }

  stats() {
    return this.batcher.stats();
  }

  /** Requests queued and not yet sealed (the native count; read at scrape time). */
  get pendingRequests(): number {
    return this.batcher.stats().pendingRequests;
  }

  /** Pending requests get UNAVAILABLE (shutdown); called once nothing is admitted any more. */
  async stop(): Promise<void> {
    await this.batcher.stop();
  }

  /**
   * onExecuted: a batch the executor ran (its instance is already idle
   * again). Success answers its requests from the output buffers; a device
   * error moves the version to CPU and re-runs the batch on the pool; any
   * other failure answers its requests with that error.
   */
  private executed(batch: SealedBatch, result: ExecutedResult): Execution {
    if (result.ok) {
      const outputs = new Map<string, BatchOutput>();
      this.version.signature.outputs.forEach((spec, i) => {
        const output = result.outputs[i];
        if (output !== undefined) outputs.set(spec.name, { dims: output.shape, byteLength: output.bytes, copy: output.copy });
      });
      const timing: WorkerTiming = {
        queueNs: 0,
        computeInputNs: result.timing.inputNs,
        computeInferNs: result.timing.computeNs,
        computeOutputNs: result.timing.outputNs,
      };
      // A batch may hold requests of several threads (front-door threads, the
      // main thread), each told once with its own requests; the one holding
      // the batch's first row counts the execution, so it is counted once.
      if (batch.requests[0]?.rowOffset === 0) this.hooks.onExecuted(this.version, this.executedRows(batch), timing);
      const execution = new Execution(Promise.resolve({ outputs, timing, rows: batch.rows }), batch.requests.length, () =>
        batch.release(),
      );
      execution.runSettled();
      return execution;
    }
    const deviceFault = result.failure === 'DEVICE_TRANSIENT' || result.failure === 'DEVICE_LOST';
    if (deviceFault) this.version.native?.fallBack(result.failure === 'DEVICE_LOST' ? 'sticky' : 'transient', result.message);
    // A device fault, or a batch the executor dropped because a lost device
    // closed it (another batch's fault): the host copy is intact, so it runs
    // on the CPU pool (started on demand) and no request fails.
    if (deviceFault || (result.failure === 'SHUTDOWN' && this.version.native?.active === false)) {
      return this.execute(batch, false);
    }
    // An onnxruntime worker exited mid-batch, or a retired generation's pool
    // closed with the batch still queued: the batch is intact, and inference
    // is idempotent, so it re-runs once on the current pool through piscina.
    if (this.version.native === undefined && (result.failure === 'WORKER_CRASHED' || result.failure === 'SHUTDOWN')) {
      if (result.failure === 'WORKER_CRASHED') {
        this.hooks.logger.warn(
          { model: this.version.modelName, model_version: this.version.versionLabel, error: result.message },
          'inference worker died mid-batch; re-running the batch once',
        );
      }
      return this.execute(batch, false);
    }
    // An onnxruntime run that failed reads as it does through piscina (one
    // failure type, run-failure.ts), whichever entry point of the worker ran it.
    const error = this.version.native === undefined && result.failure === 'INTERNAL'
      ? new WorkerRunError(result.failure, result.message)
      : new ServingError(kindOfExecutionFailure(result.failure), `model '${this.version.modelName}': ${result.message}`);
    const execution = new Execution(Promise.reject(error), batch.requests.length, () => batch.release());
    execution.runSettled();
    return execution;
  }

  /** The rows an executed batch ran: in max_batch_size-0 mode, the request's own leading dimension. */
  private executedRows(batch: SealedBatch): number {
    if (!this.unbatched) return batch.rows;
    return this.version.signature.maxBatchSize > 0 ? (batch.inputs[0]?.shape[0] ?? 1) : 1;
  }

  /**
   * onBatch: runs a sealed batch on the pool (on this thread; must not throw
   * late). `holdsInstance`: the batch took a batcher instance that this run
   * gives back (false for a re-run of an executed batch, whose instance the
   * executor already gave back).
   */
  private execute(batch: SealedBatch, holdsInstance: boolean): Execution {
    const signature = this.version.signature;
    const outputBlocks: Block[] = [];
    const fetches: ArenaTensorPayload[] = [];
    let allocationFailure: unknown;
    try {
      // Unbatched mode: the row count is in the shapes, onnxruntime allocates the outputs.
      for (const spec of this.unbatched ? [] : signature.outputs) {
        const dims = modelDims(spec);
        if (dims.some((dim) => dim < 0)) continue; // shape unknown until the run: onnxruntime allocates it
        const byteLength = batch.rows * elementCount(dims) * wireTypeInfo(spec.datatype).size;
        if (byteLength === 0) continue;
        const block = this.version.memory.allocOutput(byteLength);
        outputBlocks.push(block);
        fetches.push({ name: spec.name, type: ortType(spec), dims: [batch.rows, ...dims], arenaBlock: block.id, byteLength });
      }
    } catch (err) {
      // Answered through the batch's requests (RESOURCE_EXHAUSTED), in their order.
      allocationFailure = err;
    }
    const task: InferTask = {
      kind: 'infer',
      inputs: batch.inputs.map((input, i) => ({
        name: input.name,
        type: ortType(signature.inputs[i] as TensorSpec),
        dims: input.shape,
        arenaBlock: input.blockId,
        byteLength: input.bytes,
      })),
      outputNames: signature.outputs.map((spec) => spec.name),
      fetches,
      queuedAtMs: epochMs(),
    };
    const blocksById = new Map(outputBlocks.map((block) => [block.id, block]));
    const run = allocationFailure === undefined ? this.version.run(task, []) : Promise.reject(allocationFailure);
    const result = run.then(
      (executed): BatchResult => {
        const outputs = new Map<string, BatchOutput>();
        for (const output of executed.outputs) {
          if (isArenaPayload(output)) {
            const block = blocksById.get(output.arenaBlock);
            if (block === undefined) throw new Error(`output '${output.name}' names an unknown block`);
            outputs.set(output.name, heldOutput(new Uint8Array(block.view(), 0, output.byteLength), output.dims));
          } else {
            const data = output.data as NumericArray | Uint8Array;
            outputs.set(output.name, heldOutput(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), output.dims));
          }
        }
        this.hooks.onExecuted(this.version, this.executedRows(batch), executed.timing);
        return { outputs, timing: executed.timing, rows: batch.rows };
      },
    );
    const execution = new Execution(result, batch.requests.length, () => {
      for (const block of outputBlocks) block.release();
    });
    // The worker held its own references while it ran: the inputs can go now,
    // and the instance is free for the next batch.
    void result
      .catch(() => undefined)
      .finally(() => {
        batch.release();
        if (holdsInstance && !this.batcher.stopped) this.batcher.instanceIdle();
        execution.runSettled();
      });
    return execution;
  }
}

/** The shape the model itself sees per row: `reshape` when the config has one. */
function modelDims(spec: TensorSpec): number[] {
  return [...(spec.reshape ?? spec.dims)];
}

function ortType(spec: TensorSpec): ArenaTensorPayload['type'] {
  if (spec.ortType === 'string') throw new Error(`tensor '${spec.name}' is BYTES and cannot be batched`);
  return spec.ortType;
}

function queuePolicy(policy: {
  maxQueueSize: number | bigint;
  defaultTimeoutMicroseconds: number | bigint;
  timeoutAction: ModelQueuePolicy_TimeoutAction;
  allowTimeoutOverride: boolean;
}): QueuePolicyOptions {
  return {
    maxQueueSize: Number(policy.maxQueueSize),
    defaultTimeoutUs: Number(policy.defaultTimeoutMicroseconds),
    timeoutAction: policy.timeoutAction === ModelQueuePolicy_TimeoutAction.DELAY ? 'DELAY' : 'REJECT',
    allowTimeoutOverride: policy.allowTimeoutOverride,
  };
}
