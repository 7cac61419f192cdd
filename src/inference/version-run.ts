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
import type { InferenceStatistics } from '../repository/inference-statistics.js';
import type { ModelSignature } from '../tensor/model-signature.js';
import { invalidArgument, ServingError } from '../common/serving-error.js';
import { echo } from '../common/echo.js';
import { epochMs } from '../common/epoch-ms.js';
import type { VersionMetrics } from '../observability/metrics.js';
import type { WorkerTiming } from '../observability/execution-stats.js';
import { inlineOutputs, type InferResult, type InferTask } from '../workers/worker-protocol.js';
import { batcherOf, type RequestRows, type VersionBatcher } from '../batching/version-batcher.js';
import { BatcherRejection } from '../native/batcher.js';
import { actOnModelFaults } from '../repository/fault-parameters.js';
import {
  FAULT_PARAMETER,
  prepareBatchedInference,
  prepareInference,
  stringParameter,
  type PreparedInference,
} from '../tensor/infer-request.js';
import { batchRowsResponse, buildInferResponse } from './infer-response.js';
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

  // The version's number as answers carry it, made once (versionLabel formats it on every read).
  const versionLabel = version.versionLabel;

  // The batched path's view of the version (runBatchedRequest), made once.
  const native = version.native;
  const batchedRun: BatchedRun = {
    modelName: version.modelName,
    versionLabel,
    signature: version.signature,
    batched,
    statistics: version.statistics,
    metrics,
    // Only a version with embedding inputs checks ids (the check builds a map of the inputs per request).
    checkIndices: native === undefined || native.indexBounds.length === 0 ? undefined : (inputs) => native.checkIndices(inputs),
    refused: (rejection, inputs) => (rejection.reason === 'OVER_QUOTA' ? quotaFailure(version, inputs, rejection) : rejection),
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
    throwIfCancelledBefore(context, startedAtMs, version.modelName);
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
        throwIfCancelledBefore(context, Infinity, version.modelName);
        // Test-only worker faults act on one request, so a request carrying one runs alone.
        const batcher = fault.fault === undefined && fault.faultDelayMs === undefined ? batcherOf(version) : undefined;
        return batcher === undefined
          ? await runAlone(request, context, elapsedNs, fault)
          : await runBatchedRequest(batchedRun, request, batcher, context, elapsedNs);
      } finally {
        version.memory.requestFinished();
      }
    });
}

/**
 * What a batched run reads of its version: the loaded version on the main
 * thread (versionRun), a front-door thread's view of it there
 * (door-inference.ts). Built once per version.
 */
export interface BatchedRun {
  readonly modelName: string;
  readonly versionLabel: string;
  readonly signature: ModelSignature;
  /** max_batch_size > 0: answers keep the batch dimension. */
  readonly batched: boolean;
  readonly statistics: Pick<InferenceStatistics, 'recordSuccess'>;
  readonly metrics: VersionMetrics | undefined;
  /** The native executor's embedding-id check (a problem, or undefined); undefined: the version has none. */
  readonly checkIndices: ((inputs: ReadonlyMap<string, { readonly bytes: Uint8Array; readonly datatype: string }>) => string | undefined) | undefined;
  /** What a batcher's refusal becomes (the quota's wording, say); the rejection itself when nothing better. */
  readonly refused: (rejection: BatcherRejection, inputs: readonly Uint8Array[]) => unknown;
}

/**
 * The one path of numeric requests: statistics of the execution are
 * recorded where the batch runs (VersionBatcher). Per request it makes the
 * validated views, the answer and the statistics, and nothing it only reads
 * once: the inputs go to the batcher as views of the request's bytes, in
 * the model's order, and the answer is built from the batch's rows.
 */
export async function runBatchedRequest(
  run: BatchedRun,
  request: ModelInferRequest,
  batcher: Pick<VersionBatcher, 'infer'>,
  context: RequestContext,
  elapsedNs: () => number,
): Promise<ModelInferResponse> {
  const prepared = prepareBatchedInference(request, run.signature);
  if (run.checkIndices !== undefined) {
    const byName = new Map(
      run.signature.inputs.map((spec, i) => [spec.name, { bytes: prepared.inputs[i]!, datatype: spec.datatype }] as const),
    );
    const problem = run.checkIndices(byName);
    if (problem !== undefined) throw invalidArgument(`model '${run.modelName}': ${problem}`);
  }
  let rows: RequestRows;
  const enqueuedAtMs = epochMs();
  try {
    rows = await batcher.infer({
      rows: prepared.batchSize,
      inputs: prepared.inputs,
      dims: prepared.dims,
      priority: prepared.scheduling.priority,
      timeoutUs: prepared.scheduling.timeoutUs,
      deadlineMs: context.deadlineMs,
    });
  } catch (err) {
    throw err instanceof BatcherRejection ? run.refused(err, prepared.inputs) : err;
  }
  let response: ModelInferResponse;
  try {
    throwIfCancelledBefore(context, enqueuedAtMs + (rows.batcherQueueNs + rows.result.timing.queueNs) / 1e6, run.modelName);
    response = batchRowsResponse(request, run.versionLabel, prepared.outputs, rows, run.batched);
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
  run.statistics.recordSuccess(prepared.batchSize, totalNs, timing);
  run.metrics?.observeSuccess(totalNs / 1e6, timing);
  return response;
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
function throwIfCancelledBefore(context: RequestContext, startedAtMs: number, modelName: string): void {
  const cancelledAtMs = context.cancelledAtMs?.();
  if (cancelledAtMs !== undefined && cancelledAtMs < startedAtMs) {
    throw new ServingError('cancelled', `model '${modelName}': the client cancelled the request before it started executing`);
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
