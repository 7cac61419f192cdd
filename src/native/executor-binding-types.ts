// The raw shape of the executor* exports of hotpath_native.node, exactly as
// native/napi/executor_binding.cc registers them, and the graph plan they
// take (native/executor/plan.h in JS form). Only src/native/executor.ts calls
// these; it checks they exist before use.
import type { NativeResult, NativeStatusCode } from './native-error.js';

/** ONNX TensorProto.DataType numbers the executor knows (FLOAT, INT32, INT64, FLOAT16, DOUBLE). */
export const planDTypes = { FLOAT: 1, INT32: 6, INT64: 7, FLOAT16: 10, DOUBLE: 11 } as const;

/** One ONNX attribute; INT values are clamped to the safe-integer range (see onnx-plan.ts). */
export type PlanAttribute =
  | { readonly name: string; readonly type: 'int'; readonly value: number }
  | { readonly name: string; readonly type: 'float'; readonly value: number }
  | { readonly name: string; readonly type: 'ints'; readonly value: readonly number[] }
  | { readonly name: string; readonly type: 'floats'; readonly value: readonly number[] }
  | { readonly name: string; readonly type: 'string'; readonly value: string };

/** One value of the graph: a graph input, an initializer or a node output. */
export interface PlanTensor {
  readonly name: string;
  /** ONNX TensorProto.DataType number (passed through; the executor refuses what it cannot run). */
  readonly dtype: number;
  /** Graph inputs: -1 for the batch dimension. Initializers: fixed. Node outputs: [] (inferred natively). */
  readonly dims: readonly number[];
  readonly initializer: boolean;
  /** Initializers only: little-endian, dense, row-major. */
  readonly data?: Uint8Array;
}

export interface PlanNode {
  /** May be empty (the executor then says "#<index>"). */
  readonly name: string;
  /** ai.onnx op name; other domains as `${domain}.${op}` (refused natively, by name). */
  readonly opType: string;
  /** Indices into ExecutorPlan.tensors; -1 for an omitted optional operand. */
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  readonly attributes: readonly PlanAttribute[];
}

/** What TS hands the executor for one model version (native/executor/plan.h GraphPlan). */
export interface ExecutorPlan {
  /** "name:version", for messages. */
  readonly modelName: string;
  /** The model's ai.onnx opset. */
  readonly opset: number;
  /** 0: no batch dimension. */
  readonly maxBatchSize: number;
  readonly tensors: readonly PlanTensor[];
  /** Topological order. */
  readonly nodes: readonly PlanNode[];
  /** Graph inputs and outputs as tensor indices, model order. */
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
}

export type ExecutorDeviceKind = 'host' | 'cuda';
export type FaultKind = 'none' | 'transient' | 'sticky';

export interface RawExecutorOptions {
  /** A registered arena name. */
  readonly arena: string;
  readonly tenant: string;
  /** Arena owner id the weights and workspaces are charged under. */
  readonly owner: number;
  readonly instances: number;
  readonly device: ExecutorDeviceKind;
  /** CUDA device ordinal; ignored on host. */
  readonly deviceOrdinal: number;
}

export interface RawIoSpec {
  readonly name: string;
  /** ONNX TensorProto.DataType number. */
  readonly dtype: number;
  /** "FLOAT", "INT64", ... */
  readonly dtypeName: string;
  /** -1 for the batch dimension. */
  readonly dims: readonly number[];
}

export interface RawExecutorInfo {
  readonly id: number;
  readonly inputs: readonly RawIoSpec[];
  readonly outputs: readonly RawIoSpec[];
  /** Kernel set: "host", "cuda" or "cuda+cublas". */
  readonly kernels: string;
  readonly deviceKind: ExecutorDeviceKind;
  readonly weightsBytes: number;
  /** Per instance. */
  readonly workspaceBytes: number;
  readonly instances: number;
  readonly stepCount: number;
  readonly maxBatchSize: number;
}

export interface RawTiming {
  readonly inputNs: number;
  readonly computeNs: number;
  readonly outputNs: number;
}

export interface RawRunOutput {
  /** Native memory handed over to JS (freed by GC). */
  readonly data: ArrayBuffer;
  readonly dims: readonly number[];
}

/** The completion of one executorRun, delivered through onEvent. */
export interface RawRunEvent {
  readonly type: 'run';
  readonly requestId: number;
  readonly ok: boolean;
  /** 'OK' when ok. */
  readonly code: NativeStatusCode | 'OK';
  readonly message: string;
  readonly fault: FaultKind;
  /** Model output order; empty unless ok. */
  readonly outputs: readonly RawRunOutput[];
  readonly timing: RawTiming;
}

export interface RawExecutorMarkerEvent {
  readonly type: 'marker';
  readonly marker: number;
}

export type RawExecutorEvent = RawRunEvent | RawExecutorMarkerEvent;

export interface RawExecutorStats {
  /** Runs that succeeded, and their rows. */
  readonly executions: number;
  readonly rows: number;
  readonly failures: number;
  /** Of the failures, device faults (real or injected). */
  readonly deviceFaults: number;
  /** Submitted, not started. */
  readonly queued: number;
  readonly computeNs: number;
  readonly dead: boolean;
}

/** `executor` arguments are this environment's executor ids. */
export interface ExecutorBinding {
  executorCreate(plan: ExecutorPlan, options: RawExecutorOptions, onEvent: (event: RawExecutorEvent) => void): NativeResult<RawExecutorInfo>;
  /** Copies `inputs` before it returns; the completion arrives as a 'run' event. */
  executorRun(executor: number, requestId: number, inputs: readonly Uint8Array[], rows: number): NativeResult<null>;
  executorInjectFault(executor: number, fault: FaultKind): NativeResult<null>;
  executorStats(executor: number): NativeResult<RawExecutorStats>;
  executorDead(executor: number): NativeResult<boolean>;
  /**
   * Stops the executor (queued runs fail with UNAVAILABLE, running ones
   * finish), queues `marker` behind their events and forgets the id.
   * `queued`: whether the marker was queued (false: already closed, then
   * `stats` is null); `stats`: the final counters, after the stop.
   */
  executorClose(executor: number, marker: number): NativeResult<{ readonly queued: boolean; readonly stats: RawExecutorStats | null }>;
}

export const executorExports: readonly (keyof ExecutorBinding)[] = [
  'executorCreate',
  'executorRun',
  'executorInjectFault',
  'executorStats',
  'executorDead',
  'executorClose',
];
