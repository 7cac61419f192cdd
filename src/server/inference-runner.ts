/**
 * The request path shared by ModelInfer and ModelStreamInfer: resolve the model
 * version, validate and prepare the inputs, run them on the version's worker
 * pool, and build the response. On the way it records the version's
 * statistics, the latency histograms and the access log, and it counts
 * in-flight requests (the autoscaling signal, and what a drain waits for).
 */
import type { Logger } from 'pino';
import { status } from '@grpc/grpc-js';
import type { ModelInferRequest, ModelInferResponse } from '../generated/grpc_service_pb.js';
import type { ModelManager } from '../repository/model-manager.js';
import type { ModelVersion } from '../repository/model-version.js';
import { classifyError, invalidArgument, ServingError, toServiceError, unavailable } from '../common/serving-error.js';
import { failureReasonOf } from '../common/error-kinds.js';
import { echo } from '../common/echo.js';
import type { AccessLog } from '../observability/access-log.js';
import type { ServerMetrics } from '../observability/metrics.js';
import type { AdmissionRelease, TenantLimiter } from '../security/tenant-limits.js';
import { epochMs, inlineOutputs, isArenaPayload, type InferResult, type InferTask } from '../workers/worker-protocol.js';
import { batcherOf, requestRows, type RequestRows, type VersionBatcher } from '../batching/version-batcher.js';
import { BatcherRejection } from '../native/batcher.js';
import { actOnModelFaults } from '../repository/fault-parameters.js';
import {
  FAULT_PARAMETER,
  prepareInference,
  stringParameter,
  type PreparedInference,
} from '../tensor/infer-request.js';
import { buildInferResponse } from './infer-response.js';
import type { RequestContext } from './request-context.js';
import { scopeFailure, visibleTo, type Caller } from '../security/caller.js';
import type { RequestView } from '../routing/arm-choice.js';
import type { ArchiveEntry } from '../datachecks/archive/payload-archive.js';
import type { ResponseCache } from '../datachecks/cache/response-cache.js';
import { cacheableBy, cachedAnswer } from '../datachecks/cache/cached-inference.js';

/**
 * A request's context with the caller its door admitted (security/caller.ts),
 * and what routing reads: the request's headers (HTTP) or metadata (gRPC)
 * and its peer (`view`), and whether it is a route's shadow copy.
 */
export type InferContext = RequestContext & {
  readonly caller: Caller;
  /** Headers / metadata and peer, for a route's arm choice; absent: none. */
  readonly view?: RequestView | undefined;
  /**
   * A shadow copy of a routed request (src/server/routing): it does not count
   * against the tenant's rate and in-flight limits, which are the clients'.
   */
  readonly shadow?: boolean | undefined;
};

/** The request path as the front doors call it: the runner itself, or the runner behind routes. */
export interface InferencePath {
  infer(request: ModelInferRequest, context: InferContext, method?: string): Promise<ModelInferResponse>;
  readonly isAccepting: boolean;
  onStopAccepting(listener: () => void): () => void;
}

export interface InferenceRunnerOptions {
  readonly models: ModelManager;
  readonly faultInjection: boolean;
  readonly logger: Logger;
  readonly accessLog: AccessLog;
  readonly metrics?: ServerMetrics;
  /** Per-tenant rate and in-flight limits (tenants file); undefined: none. */
  readonly limits?: TenantLimiter | undefined;
  /** The payload archive (--archive): offered each answered request; it never blocks or throws. */
  readonly archive?: { record(entry: ArchiveEntry): void } | undefined;
  /** Drift checks (models with hotpath_drift on): offered each answered request; it never blocks or throws. */
  readonly drift?: { record(version: ModelVersion, request: ModelInferRequest, response: ModelInferResponse): void } | undefined;
  /** The response cache (--cache-config); models opt in with response_cache { enable: true }. */
  readonly responseCache?: ResponseCache<Uint8Array> | undefined;
}

export class InferenceRunner implements InferencePath {
  private inflight = 0;
  private accepting = true;
  private readonly stopListeners = new Set<() => void>();

  constructor(private readonly options: InferenceRunnerOptions) {}

  /** Requests received and not yet answered. */
  get inflightRequests(): number {
    return this.inflight;
  }

  /** From now on every new request is answered UNAVAILABLE (the drain); admitted ones finish. */
  stopAccepting(): void {
    this.accepting = false;
    for (const listener of [...this.stopListeners]) listener();
  }

  get isAccepting(): boolean {
    return this.accepting;
  }

  /** Calls `listener` when the drain stops accepting (open streams end then); returns an unsubscribe. */
  onStopAccepting(listener: () => void): () => void {
    this.stopListeners.add(listener);
    return () => this.stopListeners.delete(listener);
  }

  /**
   * `context.caller` is the admitted caller: a model it may not see reads as
   * missing, and a failure is worded for it (scopeFailure).
   */
  async infer(request: ModelInferRequest, context: InferContext, method = 'ModelInfer'): Promise<ModelInferResponse> {
    const started = process.hrtime.bigint();
    const elapsedNs = () => Number(process.hrtime.bigint() - started);
    this.inflight += 1;
    let version: ModelVersion | undefined;
    let release: AdmissionRelease | undefined;
    try {
      if (!this.accepting) throw unavailable('server is shutting down; retry on another replica');
      version = await this.options.models.resolveForRequest(request.modelName, request.modelVersion, visibleTo(context.caller));
      // The model's tenant's rate and in-flight limits: after everything that
      // decides whether the caller may use the model at all, before any memory is taken.
      release = context.shadow === true ? undefined : this.options.limits?.admit(version.tenant);
      const resolved = version;
      const run = () => this.run(request, resolved, context, elapsedNs);
      // A route's shadow copy exercises the model itself: never answered from the cache.
      const cache = context.shadow === true || !cacheableBy(request, version) ? undefined : this.options.responseCache;
      const response = cache === undefined ? await run() : await cachedAnswer(cache, request, version, elapsedNs, run);
      if (this.options.accessLog.sampleSuccess()) {
        this.options.accessLog.recordSampledSuccess({
          ...this.describe(request, context, method, version, elapsedNs()),
          code: status.OK,
        });
      }
      this.archive(request, context, version, elapsedNs(), status.OK, response);
      // A route's shadow copy is not traffic the model served to clients.
      if (context.shadow !== true) this.options.drift?.record(version, request, response);
      return response;
    } catch (err) {
      const failure = toServiceError(err);
      version?.statistics.recordFailure(elapsedNs(), failureReasonOf(classifyError(err).kind));
      this.options.accessLog.record({
        ...this.describe(request, context, method, version, elapsedNs()),
        code: failure.code,
        error: failure.details,
      });
      this.archive(request, context, version, elapsedNs(), failure.code, undefined, failure.details);
      throw scopeFailure(err, context.caller);
    } finally {
      release?.();
      this.inflight -= 1;
    }
  }

  /** Counts the request on its version (unload waits for it) and pins the version's memory. */
  private async run(
    request: ModelInferRequest,
    version: ModelVersion,
    context: RequestContext,
    elapsedNs: () => number,
  ): Promise<ModelInferResponse> {
    return version.admit(async () => {
      // In use from here: the version is not evictable while the request runs.
      version.memory.requestStarted();
      try {
        const fault = this.faultFor(request, version);
        // Test-only model faults (config parameters): added latency, injected failures.
        if (this.options.faultInjection) await actOnModelFaults(version);
        // Cancelled while it waited for the model (a load, say): it never runs.
        throwIfCancelledBefore(context, Infinity, version);
        // Test-only worker faults act on one request, so a request carrying one runs alone.
        const batcher = fault.fault === undefined && fault.faultDelayMs === undefined ? batcherOf(version) : undefined;
        return batcher === undefined
          ? await this.runAlone(request, version, context, elapsedNs, fault)
          : await this.runBatched(request, version, batcher, context, elapsedNs);
      } finally {
        version.memory.requestFinished();
      }
    });
  }

  /**
   * The one path of numeric requests: the native batcher copies the inputs
   * once into its batch, whose executed outputs answer it. Statistics of the
   * execution are recorded where the batch is executed (VersionBatcher);
   * here only the request's own success.
   */
  private async runBatched(
    request: ModelInferRequest,
    version: ModelVersion,
    batcher: VersionBatcher,
    context: RequestContext,
    elapsedNs: () => number,
  ): Promise<ModelInferResponse> {
    const prepared = prepareInference(request, version.signature, undefined, { copy: false });
    const inputs = prepared.inputs.map((input) => {
      if (isArenaPayload(input)) throw new Error('unexpected arena input before batching');
      return { bytes: new Uint8Array(input.data.buffer, input.data.byteOffset, input.data.byteLength), dims: input.dims };
    });
    if (version.native !== undefined) {
      const byName = new Map(
        version.signature.inputs.map((spec, i) => [spec.name, { bytes: inputs[i]!.bytes, datatype: spec.datatype }] as const),
      );
      const problem = version.native.checkIndices(byName);
      if (problem !== undefined) throw invalidArgument(`model '${version.modelName}': ${problem}`);
    }
    let rows: RequestRows;
    const enqueuedAtMs = epochMs();
    try {
      rows = await batcher.infer({
        rows: prepared.batchSize,
        inputs: inputs.map((input) => input.bytes),
        dims: inputs.map((input) => input.dims),
        ...prepared.scheduling,
        deadlineMs: context.deadlineMs,
      });
    } catch (err) {
      if (err instanceof BatcherRejection && err.reason === 'OVER_QUOTA') throw quotaFailure(version, inputs, err);
      throw err;
    }
    let response: ModelInferResponse;
    try {
      throwIfCancelledBefore(context, enqueuedAtMs + (rows.batcherQueueNs + rows.result.timing.queueNs) / 1e6, version);
      const outputs = prepared.outputs.map((spec) => {
        const output = rows.result.outputs.get(spec.name);
        if (output === undefined) throw new Error(`model produced no output named '${spec.name}'`);
        const mine = rows.whole
          ? { bytes: output.bytes, dims: [...output.dims] }
          : requestRows(output, rows.result.rows, rows.rowOffset, rows.rows);
        // A copy of this request's rows: the batch's blocks are reused once every request is done.
        return { name: spec.name, type: spec.ortType, dims: mine.dims, data: mine.bytes.slice() };
      });
      response = buildInferResponse(request, version.versionLabel, prepared.outputs, outputs, version.signature.maxBatchSize > 0);
    } finally {
      rows.done();
    }
    const timing = { ...rows.result.timing, queueNs: rows.batcherQueueNs + rows.result.timing.queueNs };
    const totalNs = elapsedNs();
    version.statistics.recordSuccess(prepared.batchSize, totalNs, timing);
    this.options.metrics?.observeSuccess(version, totalNs / 1e6, timing);
    return response;
  }

  /** One request, one execution: inputs copied once into arena blocks the worker maps. */
  private async runAlone(
    request: ModelInferRequest,
    version: ModelVersion,
    context: RequestContext,
    elapsedNs: () => number,
    fault: Pick<InferTask, 'fault' | 'faultDelayMs'>,
  ): Promise<ModelInferResponse> {
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
      response = buildInferResponse(
        request,
        version.versionLabel,
        prepared.outputs,
        inlineOutputs(result.outputs),
        version.signature.maxBatchSize > 0,
      );
    } finally {
      // The worker dropped its mapping when the run ended; nothing stays charged.
      for (const block of prepared?.blocks ?? []) block.release();
    }
    const totalNs = elapsedNs();
    version.statistics.recordExecution(prepared.batchSize, result.timing);
    this.options.metrics?.observeExecution(version, prepared.batchSize);
    throwIfCancelledBefore(context, startedAtMs, version);
    version.statistics.recordSuccess(prepared.batchSize, totalNs, result.timing);
    this.options.metrics?.observeSuccess(version, totalNs / 1e6, result.timing);
    return response;
  }

  /** The answered request, to the payload archive (not a route's shadow copy: clients never saw it). */
  private archive(
    request: ModelInferRequest,
    context: InferContext,
    version: ModelVersion | undefined,
    latencyNs: number,
    statusCode: number,
    response?: ModelInferResponse,
    statusMessage?: string,
  ): void {
    if (this.options.archive === undefined || context.shadow === true) return;
    this.options.archive.record({
      request,
      response,
      statusCode,
      statusMessage,
      requestId: context.requestId,
      model: version?.modelName ?? request.modelName,
      version: version?.versionLabel ?? request.modelVersion,
      latencyNs,
      modelParameters: version?.config.parameters,
    });
  }

  private describe(
    request: ModelInferRequest,
    context: InferContext,
    method: string,
    version: ModelVersion | undefined,
    elapsedNs: number,
  ) {
    return {
      requestId: context.requestId,
      traceId: context.traceId,
      method,
      model: request.modelName,
      modelVersion: version?.versionLabel ?? (request.modelVersion || undefined),
      // The model's tenant; the caller's when no model was resolved (a key's tenant, never the key).
      tenant: version?.tenant ?? context.caller.tenant,
      latencyMs: elapsedNs / 1e6,
    };
  }

  /**
   * The test-only fault hooks, refused unless the server runs with
   * --enable-fault-injection. 'device-error' / 'device-lost' make the native
   * executor's next batch fail with a simulated transient / sticky device
   * error (the request itself then runs normally, in that batch or the next).
   */
  private faultFor(request: ModelInferRequest, version: ModelVersion): Pick<InferTask, 'fault' | 'faultDelayMs'> {
    const fault = stringParameter(request.parameters, FAULT_PARAMETER);
    if (fault === undefined) return {};
    if (!this.options.faultInjection) {
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
function quotaFailure(version: ModelVersion, inputs: readonly { bytes: Uint8Array }[], rejection: BatcherRejection): unknown {
  const placed: { release(): unknown }[] = [];
  try {
    for (const input of inputs) placed.push(version.memory.allocInput(input.bytes.byteLength));
    return rejection;
  } catch (err) {
    return err;
  } finally {
    for (const block of placed) block.release();
  }
}
