/**
 * The end of a version's request path: the run itself. A numeric request
 * goes through the version's native batcher (its inputs copied once into the
 * batch); anything else (BYTES tensors, a test fault that must act on one
 * request) runs alone on the version's worker pool. Both record the version's
 * statistics and its bound metrics (version-plan.ts) for the request's success.
 *
 * Built once per version by its plan; main (door) thread only.
 */
import type { ModelInferRequest, ModelInferResponse } from '../generated/grpc_service_pb.js';
import type { ModelVersion } from '../repository/model-version.js';
import { invalidArgument, ServingError } from '../common/serving-error.js';
import { echo } from '../common/echo.js';
import { epochMs } from '../common/epoch-ms.js';
import type { VersionMetrics } from '../observability/metrics.js';
import type { WorkerTiming } from '../observability/execution-stats.js';
import { inlineOutputs, isArenaPayload, type InferResult, type InferTask } from '../workers/worker-protocol.js';
import { batcherOf, requestRows, type RequestRows, type VersionBatcher } from '../batching/version-batcher.js';
import { BatcherRejection } from '../native/batcher.js';
import { actOnModelFaults } from '../repository/fault-parameters.js';
import { FAULT_PARAMETER, prepareInference, stringParameter, type PreparedInference } from '../tensor/infer-request.js';
import { buildInferResponse } from './infer-response.js';
import type { InferContext, RequestContext } from './infer-context.js';

/** One request on its way through a version's path (version-plan.ts). */
export interface VersionCall {
  readonly request: ModelInferRequest;
  readonly context: InferContext;
  /** The access log's method: 'ModelInfer', 'ModelStreamInfer', 'HTTP ModelInfer', 'Shadow'. */
  readonly method: string;
  /** Nanoseconds since the request was received. */
  readonly elapsedNs: () => number;
}

/** One step of a version's path; a wrapper (version-plan.ts) takes the next step and returns its own. */
export type VersionStep = (call: VersionCall) => Promise<ModelInferResponse>;

export interface VersionRunOptions {
  /** --enable-fault-injection: the test-only fault hooks are honoured (refused otherwise). */
  readonly faultInjection: boolean;
  /** The version's bound histograms; undefined: no metrics (tests). */
  readonly metrics: VersionMetrics | undefined;
}

/** The run step of `version`'s path. */
export function versionRun(version: ModelVersion, options: VersionRunOptions): VersionStep {
  const batched = version.signature.maxBatchSize > 0;
  const { metrics, faultInjection } = options;

  /** The one path of numeric requests: statistics of the execution are recorded where the batch runs (VersionBatcher). */
  const runBatched = async (request: ModelInferRequest, batcher: VersionBatcher, context: RequestContext, elapsedNs: () => number) => {
    const prepared = prepareInference(request, version.signature, undefined, { copy: false });
    // One pass over the inputs: the batcher's bytes and dims arrays, nothing else per input.
    const count = prepared.inputs.length;
    const bytes = new Array<Uint8Array>(count);
    const dims = new Array<readonly number[]>(count);
    for (let i = 0; i < count; i += 1) {
      const input = prepared.inputs[i]!;
      if (isArenaPayload(input)) throw new Error('unexpected arena input before batching');
      bytes[i] = new Uint8Array(input.data.buffer, input.data.byteOffset, input.data.byteLength);
      dims[i] = input.dims;
    }
    if (version.native !== undefined) {
      const byName = new Map(
        version.signature.inputs.map((spec, i) => [spec.name, { bytes: bytes[i]!, datatype: spec.datatype }] as const),
      );
      const problem = version.native.checkIndices(byName);
      if (problem !== undefined) throw invalidArgument(`model '${version.modelName}': ${problem}`);
    }
    let rows: RequestRows;
    const enqueuedAtMs = epochMs();
    try {
      rows = await batcher.infer({
        rows: prepared.batchSize,
        inputs: bytes,
        dims,
        priority: prepared.scheduling.priority,
        timeoutUs: prepared.scheduling.timeoutUs,
        deadlineMs: context.deadlineMs,
      });
    } catch (err) {
      if (err instanceof BatcherRejection && err.reason === 'OVER_QUOTA') throw quotaFailure(version, bytes, err);
      throw err;
    }
    let response: ModelInferResponse;
    try {
      throwIfCancelledBefore(context, enqueuedAtMs + (rows.batcherQueueNs + rows.result.timing.queueNs) / 1e6, version);
      const outputs = prepared.outputs.map((spec) => {
        const output = rows.result.outputs.get(spec.name);
        if (output === undefined) throw new Error(`model produced no output named '${spec.name}'`);
        // A copy of this request's rows: the batch's blocks are reused once every request is done.
        const mine = rows.whole
          ? { bytes: output.copy(0, output.byteLength), dims: [...output.dims] }
          : requestRows(output, rows.result.rows, rows.rowOffset, rows.rows);
        return { name: spec.name, type: spec.ortType, dims: mine.dims, data: mine.bytes };
      });
      response = buildInferResponse(request, version.versionLabel, prepared.outputs, outputs, batched);
    } finally {
      rows.done();
    }
    const ran = rows.result.timing;
    // Written out, not spread: the four WorkerTiming fields, the queue including the batcher's.
    const timing: WorkerTiming = {
      queueNs: rows.batcherQueueNs + ran.queueNs,
      computeInputNs: ran.computeInputNs,
      computeInferNs: ran.computeInferNs,
      computeOutputNs: ran.computeOutputNs,
    };
    const totalNs = elapsedNs();
    version.statistics.recordSuccess(prepared.batchSize, totalNs, timing);
    metrics?.observeSuccess(totalNs / 1e6, timing);
    return response;
  };

  /** One request, one execution: inputs copied once into arena blocks the worker maps. */
  const runAlone = async (
    request: ModelInferRequest,
    context: RequestContext,
    elapsedNs: () => number,
    fault: Pick<InferTask, 'fault' | 'faultDelayMs'>,
  ) => {
    let prepared: PreparedInference | undefined;
    let response: ModelInferResponse;
    let result: InferResult;
    let startedAtMs: number;
    try {
      // Inputs are copied once into arena blocks charged to the model's tenant.
      prepared = prepareInference(request, version.signature, (bytes) => version.memory.allocInput(bytes));
      const task: InferTask = {
        kind: 'infer',
        inputs: prepared.inputs,
        outputNames: prepared.outputs.map((spec) => spec.name),
        queuedAtMs: epochMs(),
        deadlineMs: context.deadlineMs,
        ...fault,
      };
      result = await version.run(task, prepared.transfer);
      startedAtMs = task.queuedAtMs + result.timing.queueNs / 1e6;
      response = buildInferResponse(request, version.versionLabel, prepared.outputs, inlineOutputs(result.outputs), batched);
    } finally {
      // The worker dropped its mapping when the run ended; nothing stays charged.
      for (const block of prepared?.blocks ?? []) block.release();
    }
    const totalNs = elapsedNs();
    version.statistics.recordExecution(prepared.batchSize, result.timing);
    metrics?.observeExecution(prepared.batchSize);
    throwIfCancelledBefore(context, startedAtMs, version);
    version.statistics.recordSuccess(prepared.batchSize, totalNs, result.timing);
    metrics?.observeSuccess(totalNs / 1e6, result.timing);
    return response;
  };

  // Counts the request on its version (unload waits for it) and pins the version's memory.
  return ({ request, context, elapsedNs }) =>
    version.admit(async () => {
      // In use from here: the version is not evictable while the request runs.
      version.memory.requestStarted();
      try {
        const fault = faultFor(request, version, faultInjection);
        // Test-only model faults (config parameters): added latency, injected failures.
        if (faultInjection) await actOnModelFaults(version);
        // Cancelled while it waited for the model (a load, say): it never runs.
        throwIfCancelledBefore(context, Infinity, version);
        // Test-only worker faults act on one request, so a request carrying one runs alone.
        const batcher = fault.fault === undefined && fault.faultDelayMs === undefined ? batcherOf(version) : undefined;
        return batcher === undefined
          ? await runAlone(request, context, elapsedNs, fault)
          : await runBatched(request, batcher, context, elapsedNs);
      } finally {
        version.memory.requestFinished();
      }
    });
}

/**
 * The test-only fault hooks, refused unless the server runs with
 * --enable-fault-injection. 'device-error' / 'device-lost' make the native
 * executor's next batch fail with a simulated transient / sticky device
 * error (the request itself then runs normally, in that batch or the next).
 */
function faultFor(request: ModelInferRequest, version: ModelVersion, faultInjection: boolean): Pick<InferTask, 'fault' | 'faultDelayMs'> {
  const fault = stringParameter(request.parameters, FAULT_PARAMETER);
  if (fault === undefined) return {};
  if (!faultInjection) {
    throw invalidArgument(
      `parameter '${FAULT_PARAMETER}' is refused: fault injection is disabled (start the server with --enable-fault-injection)`,
    );
  }
  if (fault === 'crash-worker' || fault === 'crash-worker-once') return { fault };
  if (fault === 'device-error' || fault === 'device-lost') {
    const native = version.native;
    if (native === undefined || !native.active) {
      throw invalidArgument(
        `parameter '${FAULT_PARAMETER}': '${fault}' needs a model running on the native executor; ` +
          `model '${version.modelName}' runs on ${version.executorKind}`,
      );
    }
    native.injectFault(fault === 'device-error' ? 'transient' : 'sticky');
    return {};
  }
  const delay = /^delay:(\d{1,6})$/.exec(fault);
  if (delay !== null) return { faultDelayMs: Number(delay[1]) };
  throw invalidArgument(
    `parameter '${FAULT_PARAMETER}': expected 'crash-worker', 'crash-worker-once', 'device-error', 'device-lost' or 'delay:<ms>', got ${echo(fault)}`,
  );
}

/**
 * A request whose client cancelled the call before it started executing fails
 * CANCELED, as Triton counts it (nv_inference_request_failure). Neither the
 * batcher nor the pool can withdraw a queued request, so it may have run;
 * its answer goes nowhere and it is not a success. One cancelled once it was
 * executing completes as a success, as in Triton.
 */
function throwIfCancelledBefore(context: RequestContext, startedAtMs: number, version: ModelVersion): void {
  const cancelledAtMs = context.cancelledAtMs?.();
  if (cancelledAtMs !== undefined && cancelledAtMs < startedAtMs) {
    throw new ServingError('cancelled', `model '${version.modelName}': the client cancelled the request before it started executing`);
  }
}

/**
 * The batcher's quota refusal, worded as the same refusal reads when inputs
 * are placed one by one (the tenant, the input, its size, usage and quota):
 * placing them again names the input that does not fit. Only on this failure
 * path; if everything fits now (memory was freed meanwhile), the batcher's own
 * refusal stands.
 */
function quotaFailure(version: ModelVersion, inputs: readonly Uint8Array[], rejection: BatcherRejection): unknown {
  const placed: { release(): unknown }[] = [];
  try {
    for (const input of inputs) placed.push(version.memory.allocInput(input.byteLength));
    return rejection;
  } catch (err) {
    return err;
  } finally {
    for (const block of placed) block.release();
  }
}
