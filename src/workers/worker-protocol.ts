/**
 * The messages exchanged between the main thread and an inference worker.
 * Both sides import only types from here, so the worker module stays free of
 * server code and the main thread never loads onnxruntime.
 */
import type { NumericArray, OrtTensorType } from '../tensor/wire-types.js';

/** Passed once to every worker of a model version's pool (piscina `workerData`). */
export interface WorkerInitData {
  readonly modelPath: string;
  /** onnxruntime intra-op threads per session; 1 keeps workers from fighting for cores. */
  readonly intraOpThreads: number;
  /** Whether test-only fault hooks may be honoured (`--enable-fault-injection`). */
  readonly faultInjection: boolean;
}

/** A tensor as it crosses the thread boundary: data buffers are transferred, not copied. */
export interface TensorPayload {
  readonly name: string;
  readonly type: OrtTensorType;
  readonly dims: readonly number[];
  /** Typed array for fixed-size types; for BYTES, the raw wire bytes (length-prefixed). */
  readonly data: NumericArray | Uint8Array;
}

export interface InferTask {
  readonly kind: 'infer';
  readonly inputs: readonly TensorPayload[];
  readonly outputNames: readonly string[];
  /** Epoch ms (performance.timeOrigin + now) when the main thread queued the task. */
  readonly queuedAtMs: number;
  /** Test-only: make the worker die mid-task. Refused unless fault injection is on. */
  readonly fault?: 'crash-worker';
}

export interface InferResult {
  readonly outputs: readonly TensorPayload[];
  readonly timing: WorkerTiming;
}

/** Durations in ns measured inside the worker, for Triton-style statistics. */
export interface WorkerTiming {
  readonly queueNs: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
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

/** The current time as epoch milliseconds with sub-ms precision, comparable across threads. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
