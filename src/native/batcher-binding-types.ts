// The raw shape of the batcher* exports of hotpath_native.node, exactly as
// native/napi/batcher_binding.cc registers them. Only src/native/batcher.ts
// calls these; it checks they exist before use (the loader's required
// exports are unchanged).
import type { ExecutionFailure, RejectionReason } from '../common/error-kinds.js';
import type { NativeResult, NativeStatusCode } from './native-error.js';

export type RawTimeoutAction = 'REJECT' | 'DELAY';

export interface RawQueuePolicy {
  readonly maxQueueSize: number;
  readonly defaultTimeoutUs: number;
  readonly timeoutAction: RawTimeoutAction;
  readonly allowTimeoutOverride: boolean;
}

export interface RawBatcherConfig {
  readonly arena: string;
  readonly tenant: string;
  readonly owner: number;
  readonly modelName: string;
  readonly clock: 'steady' | 'manual';
  readonly inputCount: number;
  /**
   * Each input's dims without the batch dimension (the full shape when
   * maxBatchSize is 0), -1 where a request sets its own: read once, here,
   * so an enqueue passes only its variable dims.
   */
  readonly inputDims: readonly (readonly number[])[];
  readonly instanceCount: number;
  readonly maxBatchSize: number;
  readonly preferredBatchSizes: readonly number[];
  readonly maxQueueDelayUs: number;
  readonly preserveOrdering: boolean;
  readonly priorityLevels: number;
  readonly defaultPriorityLevel: number;
  readonly defaultQueuePolicy: RawQueuePolicy;
  readonly priorityQueuePolicy: readonly (RawQueuePolicy & { readonly level: number })[];
}

/** Why the batcher refused or dropped a request; the list and its kinds: common/error-kinds.ts. */
export type { RejectionReason } from '../common/error-kinds.js';

export interface RawSealedRequest {
  /** The id batcher.ts passed to batcherEnqueue. */
  readonly id: number;
  readonly sequence: number;
  readonly rowOffset: number;
  readonly rows: number;
  readonly priorityLevel: number;
  readonly queueNs: number;
}

export interface RawSealedInput {
  /** Arena handle of the input's block. */
  readonly blockId: number;
  /** Bytes in use, packed from offset 0. */
  readonly bytes: number;
  /** The block's requested size (sized for the largest batch). */
  readonly capacity: number;
  readonly shape: readonly number[];
}

export interface RawBatchEvent {
  readonly type: 'batch';
  readonly batchId: number;
  readonly rows: number;
  readonly requests: readonly RawSealedRequest[];
  readonly inputs: readonly RawSealedInput[];
}

/** Why an executed batch failed (native ExecutionFailureName); the list and its kinds: common/error-kinds.ts. */
export type { ExecutionFailure } from '../common/error-kinds.js';

export interface RawExecutedOutput {
  /** Arena handle of the output's block (batch memory, charged like the inputs). */
  readonly blockId: number;
  /** Bytes written, packed from offset 0. */
  readonly bytes: number;
  /** [rows, ...dims]. */
  readonly shape: readonly number[];
}

/**
 * A batch the batcher's target (an executor) ran natively: the 'batch'
 * payload plus its outcome. Its instance is already idle again; the batch
 * (inputs and outputs) is held until batcherReleaseBatch.
 */
export interface RawExecutedEvent extends Omit<RawBatchEvent, 'type'> {
  readonly type: 'executed';
  readonly ok: boolean;
  /** 'OK' when ok. */
  readonly code: NativeStatusCode | 'OK';
  readonly message: string;
  readonly failure: ExecutionFailure;
  /** Model output order; empty unless ok. batcherView(batch, id, inputs.length + i) maps output i. */
  readonly outputs: readonly RawExecutedOutput[];
  readonly timing: { readonly inputNs: number; readonly computeNs: number; readonly outputNs: number };
}

export interface RawRejectedRequest {
  readonly id: number;
  readonly sequence: number;
  readonly reason: Extract<RejectionReason, 'TIMEOUT' | 'DEADLINE_EXCEEDED' | 'SHUTDOWN'>;
  readonly code: NativeStatusCode;
  readonly message: string;
  readonly queueNs: number;
}

export interface RawRejectedEvent {
  readonly type: 'rejected';
  readonly requests: readonly RawRejectedRequest[];
}

export interface RawMarkerEvent {
  readonly type: 'marker';
  readonly marker: number;
}

export type RawBatcherEvent = RawBatchEvent | RawExecutedEvent | RawRejectedEvent | RawMarkerEvent;

/** A refused enqueue may say why (absent for argument and arena errors). */
export type EnqueueResult =
  | { readonly ok: true; readonly value: null }
  | { readonly ok: false; readonly code: NativeStatusCode; readonly message: string; readonly reason?: RejectionReason };

export interface RawBatcherStats {
  readonly pendingRequests: number;
  readonly openBatches: number;
  readonly idleInstances: number;
  readonly executionCount: number;
  readonly inferenceCount: number;
  readonly dispatchedRequests: number;
  readonly queueNs: number;
  readonly rejectedQueueFull: number;
  readonly rejectedTimeout: number;
  readonly rejectedDeadline: number;
  readonly rejectedShutdown: number;
  readonly delayed: number;
  readonly memoryFailures: number;
  readonly heldBatches: number;
}

/**
 * `batcher` arguments are process-wide batcher ids (batcherCreate's). The
 * environment that created a batcher owns it (stop, targets, plain 'batch'
 * events); another environment (a door thread) batcherAttach-es to it by id
 * and may then enqueue, flush, read stats and give instances back. Each
 * environment receives, through its own onEvent, the answers to the requests
 * it enqueued; batchId/view/release refer to the batches it received.
 */
export interface BatcherBinding {
  batcherCreate(config: RawBatcherConfig, onEvent: (event: RawBatcherEvent) => void): NativeResult<number>;
  /**
   * A handle on a batcher another environment created. FAILED_PRECONDITION
   * "batcher is closed" for an unknown or stopped id, or when this
   * environment has a handle on it already. Absent in addons built before
   * doors.
   */
  batcherAttach?(batcher: number, onEvent: (event: RawBatcherEvent) => void): NativeResult<null>;
  /** Drops an attached handle (the creator stops instead); whether one was dropped. */
  batcherDetach?(batcher: number): NativeResult<boolean>;
  batcherEnqueue(
    batcher: number,
    requestId: number,
    rows: number,
    priority: number,
    timeoutUs: number,
    /** Remaining time in µs on the batcher's clock; null: no deadline. */
    deadlineUs: number | null,
    inputs: readonly Uint8Array[],
    /** The request's dims at the -1 positions of inputDims, in order; null when there are none. */
    variableDims: readonly number[] | null,
  ): EnqueueResult;
  batcherInstanceIdle(batcher: number): NativeResult<null>;
  batcherInstanceBusy(batcher: number): NativeResult<null>;
  batcherStats(batcher: number): NativeResult<RawBatcherStats>;
  /** Whether the marker was queued (false: already stopped). */
  batcherStop(batcher: number, marker: number): NativeResult<boolean>;
  batcherFlush(batcher: number, marker: number): NativeResult<boolean>;
  batcherAdvanceClock(batcher: number, us: number): NativeResult<null>;
  /** Whether a held batch was released now. */
  batcherReleaseBatch(batcher: number, batchId: number): NativeResult<boolean>;
  /** Index < inputs.length: an input; past it, an executed batch's outputs. */
  batcherView(batcher: number, batchId: number, index: number): NativeResult<ArrayBuffer>;
  /** Indices as batcherView's: a copy of [byteOffset, byteOffset + byteLength) in an ArrayBuffer V8 owns (nothing to detach). */
  batcherCopyOut(batcher: number, batchId: number, index: number, byteOffset: number, byteLength: number): NativeResult<ArrayBuffer>;
  /** An executor id of this environment, or 0: sealed batches go to JS again. The creator only. */
  batcherSetTarget(batcher: number, executor: number): NativeResult<null>;
  /** The arena binding's: detaches an external ArrayBuffer. */
  arenaDetachView(view: ArrayBuffer): boolean;
  /**
   * A worker pool (worker_binding.cc) as the target. `dims` per row when
   * `batched` (pre-allocated as [rows, ...dims]); null: the worker's run
   * allocates the output. Absent in addons built before worker channels.
   */
  batcherSetWorkerTarget?(
    batcher: number,
    pool: number,
    outputs: readonly { readonly elementBytes: number; readonly dims: readonly number[] | null }[],
    batched: boolean,
  ): NativeResult<null>;
}

export const batcherExports: readonly (keyof BatcherBinding)[] = [
  'batcherCreate',
  'batcherEnqueue',
  'batcherInstanceIdle',
  'batcherInstanceBusy',
  'batcherStats',
  'batcherStop',
  'batcherFlush',
  'batcherAdvanceClock',
  'batcherReleaseBatch',
  'batcherView',
  'batcherCopyOut',
  'batcherSetTarget',
  'arenaDetachView',
];
