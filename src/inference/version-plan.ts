/**
 * A version's request path, composed once (fastify's per-route context, the
 * scheduler constructor in Triton): the facts that are fixed per loaded
 * version are read when its plan is built, and the path is a chain of steps
 * in which a feature that is not configured for this version is absent, not
 * a branch taken per request.
 *
 *     serve:  archive → drift → cache → run     (each only where configured)
 *     shadow: run                               (a route's shadow copies)
 *
 * - archive (--archive, the version's sample rate above 0): every answered
 *   request of the version, failures included, offered to the payload archive;
 * - drift (hotpath_drift in the version's config): successes offered to the
 *   drift checks;
 * - cache (--cache-config and response_cache { enable: true }, and no
 *   test-only fault parameter in the config): the response cache;
 * - run (version-run.ts): the batcher or the worker pool, statistics and the
 *   version's bound metrics.
 *
 * A plan is built on the version's first request and kept as long as the
 * version object lives (a reload makes a new version, so a new plan);
 * `rebuild()` drops them all when server-wide settings change. Main (door)
 * thread only: the bound metric children belong to that thread's registry.
 */
import type { ModelInferResponse } from '../generated/grpc_service_pb.js';
import type { ModelVersion } from '../repository/model-version.js';
import { classifyError } from '../common/serving-error.js';
import { grpcStatusOf } from '../common/error-kinds.js';
import type { ServerMetrics } from '../observability/metrics.js';
import type { ArchiveEntry, PayloadArchive } from '../datachecks/archive/payload-archive.js';
import type { DriftChecks } from '../datachecks/drift/drift-checks.js';
import type { ResponseCache } from '../datachecks/cache/response-cache.js';
import { cachedAnswer, cacheableVersion, requestAsksForFault } from '../datachecks/cache/cached-inference.js';
import { versionRun, type VersionCall, type VersionStep } from './version-run.js';

export type { VersionCall, VersionStep } from './version-run.js';

/** A step around the next one. */
export type VersionWrapper = (next: VersionStep) => VersionStep;

export interface VersionPlan {
  readonly version: ModelVersion;
  /** Client requests. */
  readonly serve: VersionStep;
  /** A route's shadow copies: the run alone (never cached, archived or fed to drift). */
  readonly shadow: VersionStep;
}

/** The payload archive as the path uses it (datachecks/archive PayloadArchive). */
export type ArchiveSink = Pick<PayloadArchive, 'record' | 'rateFor'>;

export interface PlanSettings {
  readonly faultInjection: boolean;
  readonly metrics?: ServerMetrics | undefined;
  /** The payload archive (--archive); undefined: off. */
  readonly archive?: ArchiveSink | undefined;
  readonly drift?: Pick<DriftChecks, 'tapFor'> | undefined;
  /** The response cache (--cache-config); models opt in with response_cache { enable: true }. */
  readonly responseCache?: ResponseCache<Uint8Array> | undefined;
}

export class VersionPlans {
  private plans = new WeakMap<ModelVersion, VersionPlan>();

  constructor(private readonly settings: PlanSettings) {}

  /** The version's plan, built on first use. */
  of(version: ModelVersion): VersionPlan {
    let plan = this.plans.get(version);
    if (plan === undefined) {
      plan = buildPlan(version, this.settings);
      this.plans.set(version, plan);
    }
    return plan;
  }

  /** Server-wide settings changed: every plan is built again on its version's next request. */
  rebuild(): void {
    this.plans = new WeakMap();
  }
}

export function buildPlan(version: ModelVersion, settings: PlanSettings): VersionPlan {
  const run = versionRun(version, { faultInjection: settings.faultInjection, metrics: settings.metrics?.forVersion(version) });
  return composePlan(version, run, settings);
}

/** What the steps read of the version (a loaded ModelVersion is one). */
export type PlannedVersion = Pick<ModelVersion, 'modelName' | 'versionLabel' | 'tenant' | 'config' | 'signature' | 'statistics'>;

/** The plan around a given run step: the steps `settings` configure for `version`, in the order of the file comment. */
export function composePlan<V extends PlannedVersion>(version: V, run: VersionStep, settings: Omit<PlanSettings, 'faultInjection' | 'metrics'>): { version: V; serve: VersionStep; shadow: VersionStep } {
  let serve = run;
  const cache = settings.responseCache;
  if (cache !== undefined && cacheableVersion(version)) serve = cacheStep(cache, version)(serve);
  const drift = settings.drift?.tapFor(version);
  if (drift !== undefined) serve = driftStep(drift)(serve);
  const archive = settings.archive;
  if (archive !== undefined && archive.rateFor(version.modelName, version.config.parameters) > 0) {
    serve = archiveStep(archive, version)(serve);
  }
  return Object.freeze({ version, serve, shadow: run });
}

/** The response cache: a hit or a shared flight answers without a run; a request carrying a fault always runs. */
function cacheStep(cache: ResponseCache<Uint8Array>, version: PlannedVersion): VersionWrapper {
  return (next) => (call) =>
    requestAsksForFault(call.request) ? next(call) : cachedAnswer(cache, call.request, version, call.elapsedNs, () => next(call));
}

/** Each success is offered to the drift checks (sampled, queued; never blocks). */
function driftStep(tap: (request: VersionCall['request'], response: ModelInferResponse) => void): VersionWrapper {
  return (next) => async (call) => {
    const response = await next(call);
    tap(call.request, response);
    return response;
  };
}

/** Each answered request, failures included, is offered to the payload archive (sampled, queued; never blocks). */
function archiveStep(archive: ArchiveSink, version: PlannedVersion): VersionWrapper {
  return (next) => async (call) => {
    let response: ModelInferResponse;
    try {
      response = await next(call);
    } catch (err) {
      const { kind, message } = classifyError(err);
      archive.record(archiveEntry(call, version, grpcStatusOf(kind), undefined, message));
      throw err;
    }
    archive.record(archiveEntry(call, version, 0, response));
    return response;
  };
}

/**
 * The payload archive's record of one call's outcome: the plan's archive step
 * writes every answered request of a version, the runner the requests refused
 * before a plan ran (`version` undefined when no model was resolved).
 */
export function archiveEntry(
  call: VersionCall,
  version: PlannedVersion | undefined,
  statusCode: number,
  response?: ModelInferResponse,
  statusMessage?: string,
): ArchiveEntry {
  return {
    request: call.request,
    response,
    statusCode,
    statusMessage,
    requestId: call.context.requestId,
    model: version?.modelName ?? call.request.modelName,
    version: version?.versionLabel ?? call.request.modelVersion,
    latencyNs: call.elapsedNs(),
    modelParameters: version?.config.parameters,
  };
}
