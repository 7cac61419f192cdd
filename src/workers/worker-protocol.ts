/**
 * The messages exchanged between the main thread and an inference worker:
 * types, and small pure helpers over them (re-exported from src/tensor and
 * src/common). Nothing here loads onnxruntime or server code, so both sides
 * can import it.
 */
import type { MessagePort } from 'node:worker_threads';
import type { RunFailure } from './run-failure.js';
import type { OrtTensorType } from '../tensor/wire-types.js';

/** Passed once to every worker of a model version's pool (piscina `workerData`). */
export interface WorkerInitData {
  readonly modelPath: string;
  /** onnxruntime intra-op threads per session; 1 keeps workers from fighting for cores. */
  readonly intraOpThreads: number;
  /** Whether test-only fault hooks may be honoured (`--enable-fault-injection`). */
  readonly faultInjection: boolean;
  /** Serialises session creation process-wide so each session's footprint is measured alone. */
  readonly footprintLock: SharedArrayBuffer;
  /** The least a session is charged: the model file's size (its weights). */
  readonly footprintFloorBytes: number;
  /** The process-wide arena request inputs live in (attached on first use). */
  readonly arenaName: string | undefined;
  /**
   * This pool's worker generation (see ModelVersion.restartWorkers): its
   * number (1 for the pool started at load) and its arena owner, a child of
   * the version's owner that is destroyed once the generation is retired.
   */
  readonly generation: number;
  readonly generationOwnerId: number;
  /** The tenant the model's memory is charged to. */
  readonly tenant: string;
  /** Test-only leak (fault injection): see LeakFault. Undefined: no leak. */
  readonly leakFault: LeakFault | undefined;
  /**
   * The pool's task table (worker-exits.ts): each worker claims a slot and
   * marks the task it runs there, so the pool knows which task a worker's
   * exit took down.
   */
  readonly taskSlots: SharedArrayBuffer;
}

/**
 * Test-only: after each task, the worker allocates `bytesPerTask` in the arena
 * under its generation owner and keeps it, plus a JS Buffer of the same size,
 * so the ledger and the worker's heap both see a leak. Only generations up to
 * `generations` leak (undefined: all), so a test can watch a restart cure it.
 */
export interface LeakFault {
  readonly bytesPerTask: number;
  readonly generations: number | undefined;
}

// The tensor payloads and epochMs live below the workers (src/tensor, src/common),
// where the request path that builds them can import them; re-exported here for
// the worker side.
export {
  inlineOutputs,
  isArenaPayload,
  type ArenaTensorPayload,
  type InputPayload,
  type TensorPayload,
} from '../tensor/tensor-payload.js';
export { epochMs } from '../common/epoch-ms.js';
export type { WorkerTiming } from '../observability/execution-stats.js';
import type { WorkerTiming } from '../observability/execution-stats.js';
import type { ArenaTensorPayload, InputPayload, TensorPayload } from '../tensor/tensor-payload.js';

export interface InferTask {
  readonly kind: 'infer';
  readonly inputs: readonly InputPayload[];
  readonly outputNames: readonly string[];
  /**
   * Outputs pre-allocated in arena memory (a batch whose output shapes follow
   * from its row count): onnxruntime writes them in place, and the result
   * names the block instead of carrying the bytes.
   */
  readonly fetches?: readonly ArenaTensorPayload[];
  /** Epoch ms (performance.timeOrigin + now) when the main thread queued the task. */
  readonly queuedAtMs: number;
  /** Epoch ms after which the task must not run (the gRPC deadline of its requests). */
  readonly deadlineMs?: number | undefined;
  /**
   * Test-only: make the worker die mid-task ('crash-worker-once': only the
   * first attempt, as a transient fault would). Refused unless fault injection is on.
   */
  readonly fault?: 'crash-worker' | 'crash-worker-once';
  /** Test-only: hold the worker this long before running (fault injection only). */
  readonly faultDelayMs?: number;
  /** Set by ModelPool: the task's id in the pool's task table (worker-exits.ts). */
  readonly taskId?: number;
}

/**
 * A task whose run failed, or that the worker refused (its deadline passed in
 * the queue), as a typed code (run-failure.ts): the same failure shape a
 * natively handed batch reports, rethrown on the main thread as a
 * WorkerRunError of the code's kind.
 */
export type InferFailure = RunFailure;
export { isRunFailure as isInferFailure } from './run-failure.js';

export interface InferResult {
  /** In `outputNames` order; pre-allocated outputs come back as their arena block. */
  readonly outputs: readonly InputPayload[];
  readonly timing: WorkerTiming;
}

export interface DescribeTask {
  readonly kind: 'describe';
}

/** What the ONNX model itself declares, read from the session. */
export interface ModelIoDescription {
  readonly inputs: readonly IoTensorDescription[];
  readonly outputs: readonly IoTensorDescription[];
  /** The worker thread id that answered: lets tests tell worker generations apart. */
  readonly threadId: number;
}

export interface IoTensorDescription {
  readonly name: string;
  readonly type: string;
  /** -1 for symbolic or unknown dimensions. */
  readonly shape: readonly number[];
}

export type WorkerTask = InferTask | DescribeTask;

/**
 * Posted by each worker on its parentPort once its session exists (piscina
 * re-emits it as the pool's 'message' event). piscina owns the inbound side of
 * parentPort, so the worker hands over a port of its own on which the main
 * thread answers with the warm-up plan: that is how every worker, including a
 * replacement for a crashed one, is warmed before it takes a task.
 */
export interface WorkerSessionMessage {
  readonly type: 'hotpath:session';
  readonly threadId: number;
  readonly io: ModelIoDescription;
  readonly port: MessagePort;
  /** What creating this worker's session cost, measured as session-footprint.ts describes. */
  readonly footprintBytes: number;
}

/** What every worker runs before its model version turns READY. */
export interface WarmupPlan {
  readonly samples: readonly WarmupSample[];
  /** Test-only: each worker sleeps this long before warming (fault injection only). */
  readonly delayMs: number;
  /**
   * Set by the pool when its batcher hands batches to workers natively: once
   * warm, each worker opens a channel to this pool (see ChannelSpec).
   */
  readonly channel?: ChannelSpec;
}

/**
 * How a worker joins its generation's native worker pool
 * (src/native/worker-channel.ts): the pool's id, and the model's tensors in
 * the order a batch carries them (the config's order, model-view types).
 */
export interface ChannelSpec {
  readonly pool: number;
  readonly inputs: readonly ChannelTensor[];
  readonly outputs: readonly ChannelTensor[];
  /**
   * Test-only (config parameter `hotpath_fault_crash_channel_batch`, honoured
   * only with fault injection): each worker exits (code 70) on its Nth batch
   * from the channel, with the batch in flight.
   */
  readonly crashOnBatch?: number;
}

export interface ChannelTensor {
  readonly name: string;
  readonly type: Exclude<OrtTensorType, 'string'>;
}

export interface WarmupSample {
  readonly name: string;
  /** Runs of this sample in every worker (≥ 1). */
  readonly runs: number;
  /** Model-view tensors (reshape applied), as a request would hand them to the worker. */
  readonly inputs: readonly TensorPayload[];
  /**
   * Configured samples (`model_warmup`) must succeed, as in Triton. The default
   * samples are made up by hotpath, so their failure is only a warning.
   */
  readonly required: boolean;
}

/** Posted on parentPort when a worker finished its warm-up plan. */
export interface WorkerWarmMessage {
  readonly type: 'hotpath:warm';
  readonly threadId: number;
  readonly runs: number;
  readonly durationMs: number;
  /** Failures of optional (default) samples. */
  readonly warnings: readonly string[];
  /** Set when a required sample failed: the version must not turn READY. */
  readonly error?: string;
}

export type WorkerEventMessage = WorkerSessionMessage | WorkerWarmMessage;

/** Main → worker, on the port of the worker's hello, once it is warm: report your memory. */
export interface WorkerStatsRequest {
  readonly type: 'hotpath:stats';
  readonly id: number;
}

/** Worker → main, the answer to a WorkerStatsRequest (sampled by the leak patrol). */
export interface WorkerStatsMessage {
  readonly type: 'hotpath:stats';
  readonly id: number;
  readonly threadId: number;
  /** v8.getHeapStatistics() of the worker: total_heap_size and external_memory. */
  readonly heapTotalBytes: number;
  readonly externalBytes: number;
}

export function isWorkerEventMessage(message: unknown): message is WorkerEventMessage {
  const type = (message as { type?: unknown } | null)?.type;
  return type === 'hotpath:session' || type === 'hotpath:warm';
}
