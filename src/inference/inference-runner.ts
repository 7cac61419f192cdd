/**
 * The request path shared by ModelInfer, ModelStreamInfer and the HTTP door:
 * refuse while draining, resolve the model version the caller may see, apply
 * its tenant's rate and in-flight limits, then run the version's plan
 * (version-plan.ts: archive, drift and cache where configured, then the run).
 * On the way it records a failure's statistics and the access log, and it
 * counts in-flight requests (the autoscaling signal, and what a drain waits
 * for). Successes are recorded where they are made (the run, or a cache hit).
 */
import type { Logger } from 'pino';
import { status } from '@grpc/grpc-js';
import type { ModelInferRequest, ModelInferResponse } from '../generated/grpc_service_pb.js';
import type { ModelManager } from '../repository/model-manager.js';
import type { ModelVersion } from '../repository/model-version.js';
import { classifyError, toServiceError, unavailable } from '../common/serving-error.js';
import { failureReasonOf } from '../common/error-kinds.js';
import type { AccessLog } from '../observability/access-log.js';
import type { ServerMetrics } from '../observability/metrics.js';
import type { AdmissionRelease, TenantLimiter } from '../security/tenant-limits.js';
import { scopeFailure, visibleTo } from '../security/caller.js';
import type { DriftChecks } from '../datachecks/drift/drift-checks.js';
import type { ResponseCache } from '../datachecks/cache/response-cache.js';
import type { InferContext, InferencePath } from './infer-context.js';
import { archiveEntry, VersionPlans, type ArchiveSink, type VersionCall, type VersionPlan } from './version-plan.js';

export type { InferContext, InferencePath, RequestContext } from './infer-context.js';

export interface InferenceRunnerOptions {
  readonly models: ModelManager;
  readonly faultInjection: boolean;
  readonly logger: Logger;
  readonly accessLog: AccessLog;
  readonly metrics?: ServerMetrics | undefined;
  /** Per-tenant rate and in-flight limits (tenants file); undefined: none. */
  readonly limits?: TenantLimiter | undefined;
  /** The payload archive (--archive): offered each answered request; it never blocks or throws. */
  readonly archive?: ArchiveSink | undefined;
  /** Drift checks (models with hotpath_drift on): offered each answered request; they never block or throw. */
  readonly drift?: Pick<DriftChecks, 'tapFor'> | undefined;
  /** The response cache (--cache-config); models opt in with response_cache { enable: true }. */
  readonly responseCache?: ResponseCache<Uint8Array> | undefined;
}

export class InferenceRunner implements InferencePath {
  private inflight = 0;
  private accepting = true;
  private readonly stopListeners = new Set<() => void>();
  private readonly plans: VersionPlans;

  constructor(private readonly options: InferenceRunnerOptions) {
    this.plans = new VersionPlans(options);
  }

  /** The version's plan (built on first use; the door catalog reads whether it is the run alone). */
  planOf(version: ModelVersion): VersionPlan {
    return this.plans.of(version);
  }

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
    // performance.now(): a double, where hrtime.bigint() made two BigInts per reading.
    const started = performance.now();
    const elapsedNs = () => Math.round((performance.now() - started) * 1e6);
    const call: VersionCall = { request, context, method, elapsedNs };
    this.inflight += 1;
    let version: ModelVersion | undefined;
    let release: AdmissionRelease | undefined;
    // Once the version's plan runs, its archive step (if any) records the outcome.
    let planned = false;
    try {
      if (!this.accepting) throw unavailable('server is shutting down; retry on another replica');
      // A loaded model resolves without a promise; only a cold start (an evicted model) is awaited.
      const resolved = this.options.models.resolveForRequest(request.modelName, request.modelVersion, visibleTo(context.caller));
      version = resolved instanceof Promise ? await resolved : resolved;
      // The model's tenant's rate and in-flight limits: after everything that
      // decides whether the caller may use the model at all, before any memory is taken.
      const shadow = context.shadow === true;
      release = shadow ? undefined : this.options.limits?.admit(version.tenant);
      const plan = this.plans.of(version);
      planned = true;
      const response = await (shadow ? plan.shadow : plan.serve)(call);
      if (this.options.accessLog.sampleSuccess()) {
        this.options.accessLog.recordSampledSuccess({
          ...requestLogFields(request, context, method, version, elapsedNs()),
          code: status.OK,
        });
      }
      return response;
    } catch (err) {
      const failure = toServiceError(err);
      version?.statistics.recordFailure(elapsedNs(), failureReasonOf(classifyError(err).kind));
      this.options.accessLog.record({
        ...requestLogFields(request, context, method, version, elapsedNs()),
        code: failure.code,
        error: failure.details,
      });
      // Refused before a plan ran (unknown model, draining, a tenant limit): the runner archives it.
      if (!planned && context.shadow !== true) this.options.archive?.record(archiveEntry(call, version, failure.code, undefined, failure.details));
      throw scopeFailure(err, context.caller);
    } finally {
      release?.();
      this.inflight -= 1;
    }
  }
}

/**
 * An answered request's access-log fields, as the main thread's runner and a
 * front-door thread (door-inference.ts) log it. `version` is the version it
 * ran on; undefined when none was resolved.
 */
export function requestLogFields(
  request: ModelInferRequest,
  context: InferContext,
  method: string,
  version: { readonly versionLabel: string; readonly tenant: string } | undefined,
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
