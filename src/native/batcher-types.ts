// Public types of the batcher wrapper (src/native/batcher.ts), apart so the
// options validation can name them without importing the wrapper.
import type { ExecutionFailure, RawBatcherStats } from './batcher-binding-types.js';
import type { NativeStatusCode } from './native-error.js';

export type { ExecutionFailure } from './batcher-binding-types.js';

export type TimeoutAction = 'REJECT' | 'DELAY';

/** Triton's ModelQueuePolicy. */
export interface QueuePolicyOptions {
  /** Requests of this level waiting in the batcher; 0 (default): unbounded. */
  readonly maxQueueSize?: number;
  /** Queue timeout in µs; 0 (default): none. */
  readonly defaultTimeoutUs?: number;
  /** What a timed-out request gets: 'REJECT' (default, TIMEOUT) or 'DELAY' (kept, ordered last). */
  readonly timeoutAction?: TimeoutAction;
  /** A request's `timeoutUs` may lower (never raise) the timeout. Default false. */
  readonly allowTimeoutOverride?: boolean;
}

/** One model input, in model order. */
export interface BatcherInputSpec {
  readonly name: string;
  /** Bytes per element; 0 for variable-size elements (BYTES), which skips the byte-size check. */
  readonly elementBytes: number;
  /** Dims without the batch dimension (the full shape when maxBatchSize is 0); -1: any size. */
  readonly dims: readonly number[];
}

export interface BatcherOptions {
  /** A registered arena (Arena.create name), host or pinned memory. */
  readonly arena: string;
  /** The tenant charged for batch memory; default 'default'. */
  readonly tenant?: string;
  /** Arena owner id of the model version (Owner.id); batch blocks are allocated under it. */
  readonly owner: number;
  /** "name" or "name:version", used in messages. */
  readonly modelName: string;
  readonly inputs: readonly BatcherInputSpec[];
  /**
   * Receives each sealed batch once, on this thread (dispatch it to a worker).
   * The batch has taken one instance: call instanceIdle() when its run ends,
   * and batch.release() when its memory is no longer needed. If this throws,
   * the batch's requests are rejected with the error, the batch is released
   * and its instance given back. What it returns reaches each of the batch's
   * requests as `slice.handle` (the caller's per-batch state, no lookup).
   */
  readonly onBatch: (batch: SealedBatch) => unknown;
  /**
   * With a target (setTarget), receives each batch the target ran, once, on
   * this thread, before its requests' promises resolve. The instance is
   * already idle again (do not call instanceIdle); release the batch (inputs
   * and outputs) when done with it. A failed batch can be re-run elsewhere
   * from its inputs. If this throws, the batch's requests are rejected with
   * the error and the batch is released. What it returns reaches each of
   * the batch's requests as `slice.handle`.
   */
  readonly onExecuted?: (batch: SealedBatch, result: ExecutedResult) => unknown;
  /** 0 (default): no batching; every request is its own batch, dims are the full shape. */
  readonly maxBatchSize?: number;
  readonly preferredBatchSizes?: readonly number[];
  /** 0 (default): work-conserving. */
  readonly maxQueueDelayUs?: number;
  readonly preserveOrdering?: boolean;
  /** 0 (default): one level. Otherwise levels 1..priorityLevels, 1 the highest. */
  readonly priorityLevels?: number;
  /** Required in [1, priorityLevels] when priorityLevels > 0. */
  readonly defaultPriorityLevel?: number;
  readonly defaultQueuePolicy?: QueuePolicyOptions;
  /** Per-level overrides, keyed by level. */
  readonly priorityQueuePolicy?: Readonly<Record<number, QueuePolicyOptions>>;
  /** Instances that can run a batch at once (the worker count), all idle at start. Default 1. */
  readonly instances?: number;
  /** 'steady' (default) or 'manual': time moves only through advanceClock() (tests). */
  readonly clock?: 'steady' | 'manual';
}

export interface EnqueueRequest {
  /** Batch dimension of this request; default 1 (must be 1 when maxBatchSize is 0). */
  readonly rows?: number;
  /** Triton "priority" parameter; 0 (default) or out of range: the default level. */
  readonly priority?: number;
  /** Triton "timeout" parameter in µs; 0 (default): none. Only lowers the default, if allowed. */
  readonly timeoutUs?: number;
  /**
   * The caller's deadline as the time REMAINING, in ms from now (e.g. a gRPC
   * deadline minus Date.now()); measured on the batcher's clock, so it also
   * works with the manual clock. <= 0: already expired (DEADLINE_EXCEEDED).
   * Absent: no deadline.
   */
  readonly deadlineMs?: number;
  /** One per model input, in model order. Copied into the batch before enqueue returns; reusable at once. */
  readonly inputs: readonly Uint8Array[];
  /** Each input's dims without the batch dimension (full shape when maxBatchSize is 0). */
  readonly dims: readonly (readonly number[])[];
}

/**
 * A request the request path has validated against the model's signature
 * (Batcher.enqueueValidated): every field given, in EnqueueRequest's units.
 */
export interface ValidatedEnqueue {
  readonly rows: number;
  readonly priority: number;
  readonly timeoutUs: number;
  /** As EnqueueRequest.deadlineMs: the time remaining, in ms; undefined: no deadline. */
  readonly deadlineMs: number | undefined;
  readonly inputs: readonly Uint8Array[];
  /**
   * Each input's shape as the request gave it: rows first when the batcher
   * batches (maxBatchSize > 0), the full shape as sent otherwise. Only its
   * variable dims are read; the fixed ones the batcher has had since create.
   */
  readonly shapes: readonly (readonly number[])[];
}

export interface BatchedRequest {
  readonly rowOffset: number;
  readonly rows: number;
  /** Enqueue to seal, on the batcher's clock. */
  readonly queueNs: number;
  /** Dense arrival number; with preserveOrdering, answer in this order. */
  readonly sequence: number;
  readonly priorityLevel: number;
}

export interface BatchInput {
  readonly name: string;
  /** Arena handle: a worker maps it with Arena.attach(arena).adopt(blockId) (taking its own reference). */
  readonly blockId: number;
  /** Bytes in use, packed from offset 0 in row order. */
  readonly bytes: number;
  /** [rows, ...dims] (dims alone when maxBatchSize is 0). */
  readonly shape: readonly number[];
}

/**
 * A sealed batch. Its input blocks stay alive until release() (idempotent);
 * views from view() are detached then. Workers that adopted a block keep it
 * alive with their own reference until they release it.
 */
export interface SealedBatch {
  readonly batchId: number;
  readonly rows: number;
  /** In row order. */
  readonly requests: readonly BatchedRequest[];
  /** In model input order. */
  readonly inputs: readonly BatchInput[];
  readonly released: boolean;
  /** The input's used bytes, zero-copy, valid until release(). */
  view(input: number): Uint8Array;
  release(): void;
}

export interface ExecutedOutput {
  readonly name: string;
  /** Arena handle of the output block. */
  readonly blockId: number;
  /** Bytes written, packed from offset 0 in row order. */
  readonly bytes: number;
  /** [rows, ...dims]. */
  readonly shape: readonly number[];
  /** The output's bytes, zero-copy, valid until the batch is released. */
  view(): Uint8Array;
  /**
   * A copy of bytes [byteOffset, byteOffset + byteLength) of the output (a
   * request's rows), in memory V8 owns: it outlives the batch and needs no
   * detach (a view's detach costs this thread one more event-loop turn).
   */
  copy(byteOffset: number, byteLength: number): Uint8Array;
}

export interface ExecutionTiming {
  readonly inputNs: number;
  readonly computeNs: number;
  readonly outputNs: number;
}

/** How a target ran a batch. */
export type ExecutedResult =
  | { readonly ok: true; readonly outputs: readonly ExecutedOutput[]; readonly timing: ExecutionTiming }
  | { readonly ok: false; readonly failure: ExecutionFailure; readonly code: NativeStatusCode; readonly message: string };

/** What a request's promise resolves with: its rows of a sealed batch. */
export interface SealedSlice {
  readonly batch: SealedBatch;
  /** Set when a target ran the batch: the same result onExecuted received. */
  readonly executed?: ExecutedResult;
  /** What onBatch / onExecuted returned for the batch. */
  readonly handle?: unknown;
  readonly rowOffset: number;
  readonly rows: number;
  readonly queueNs: number;
  readonly sequence: number;
}

/** Native counters (Triton ModelStatistics names in camelCase), read when asked. */
export type BatcherStats = RawBatcherStats;
