/**
 * Assembles the request path both doors call, once per server: the payload
 * archive, the drift checks, the response cache and the tenants' admission
 * limits around the InferenceRunner, with the routes (RoutedInference) in
 * front once the routes file is loaded. Its one job is that assembly and the
 * teardown of what it assembled; the doors that call it and the phases that
 * start and drain it are the server's (src/server).
 *
 * Ownership: this object owns the archive, the drift checks, the cache and
 * the routes, and closes them in `close` (after every request is answered).
 * It borrows the model manager, the metrics and the memory arena. Main
 * thread only.
 */
import type { Logger } from 'pino';
import type { ModelManager } from '../repository/model-manager.js';
import type { ServerMetrics } from '../observability/metrics.js';
import { AccessLog } from '../observability/access-log.js';
import type { Arena } from '../native/arena.js';
import { TenantLimiter, type TenantLimitSpec } from '../security/tenant-limits.js';
import { visibleTo, type Caller } from '../security/caller.js';
import { PayloadArchive, type ArchiveSettings } from '../datachecks/archive/payload-archive.js';
import { DriftChecks } from '../datachecks/drift/drift-checks.js';
import { readReference } from '../datachecks/drift/drift-reference.js';
import { ResponseCache } from '../datachecks/cache/response-cache.js';
import { arenaCharge } from '../datachecks/cache/cache-charge.js';
import type { ReloadResult } from '../routing/routes-reloader.js';
import { notFound } from '../common/serving-error.js';
import { echo } from '../common/echo.js';
import { InferenceRunner } from './inference-runner.js';
import { RouteService } from './routing/route-service.js';
import { RoutedInference } from './routing/routed-inference.js';
import { buildDoorCatalog, type DoorCatalog } from './door-catalog.js';
import type { SharedGate } from '../common/shared-gate.js';

/** The server options the request path is built from (see ServerOptions for each). */
export interface RequestPathOptions {
  readonly faultInjection: boolean;
  readonly accessLogSampleRate: number;
  readonly tenantLimits?: readonly TenantLimitSpec[] | undefined;
  readonly archive?: ArchiveSettings | undefined;
  readonly responseCacheBytes?: number | undefined;
  readonly routesFile?: string | undefined;
  /** Routes are scoped to tenants when keys are required. */
  readonly requireApiKey?: boolean | undefined;
  readonly shadowQueueSize?: number | undefined;
  readonly shadowConcurrency?: number | undefined;
  readonly logger: Logger;
}

/** What the request path borrows from the server. */
export interface RequestPathParts {
  readonly models: ModelManager;
  readonly metrics: ServerMetrics;
  /** The host arena the response cache charges its entries to. */
  readonly arena: Arena;
  /** The model's directory (drift's reference file). */
  readonly modelDir: (model: string) => string;
  /** A version's drift degraded mark changed: the server refreshes its health. */
  readonly onDegradedChange: () => void;
  /** New routes took over: the front-door threads' catalog changes (door-catalog.ts). */
  readonly onRoutesSwapped?: () => void;
  /**
   * Threads that admit requests: 1 (the main thread), or 1 + N with N
   * front-door threads, whose limits then live in shared memory (one count
   * per tenant for the whole process). Default 1.
   */
  readonly admittingThreads?: number;
}

export class RequestPath {
  /** The runner behind the routes: what both doors' inference calls. */
  readonly inference: RoutedInference;
  readonly runner: InferenceRunner;
  /** Drift checks of the models whose config turns them on (hotpath_drift). */
  readonly drift: DriftChecks;
  /** The payload archive (--archive); undefined when off. */
  private readonly archive: PayloadArchive | undefined;
  /** The response cache (--cache-config); undefined when off. */
  private readonly responseCache: ResponseCache<Uint8Array> | undefined;
  /** The tenants' admission limits, shared with the gRPC door's admission; undefined when no tenant has one. */
  readonly limits: TenantLimiter | undefined;
  /** The routes (`--routes`), from `startRoutes` on; undefined without a routes file. */
  private routesValue: RouteService | undefined;
  /** The last door catalog's generation. */
  private doorGeneration = 0;
  /**
   * Every gate a door catalog listed, until it is closed and empty: a
   * replaced version's gate stays here while its unload waits, though the
   * version has left the repository's lists, so a door thread that dies is
   * forgotten in it too.
   */
  private readonly doorGates = new Set<SharedGate>();

  constructor(
    private readonly options: RequestPathOptions,
    private readonly parts: RequestPathParts,
  ) {
    const { models, metrics } = parts;
    this.archive = options.archive === undefined ? undefined : new PayloadArchive(options.archive, options.logger);
    const archive = this.archive;
    if (archive !== undefined) metrics.setArchiveSource(() => archive.counts());
    this.drift = new DriftChecks({
      logger: options.logger,
      modelDir: parts.modelDir,
      onDegradedChange: parts.onDegradedChange,
      isServing: (version) => models.versions(version.modelName).some((served) => served === version),
    });
    metrics.setDriftSource(() => this.drift.gauges());
    this.responseCache =
      options.responseCacheBytes === undefined
        ? undefined
        : new ResponseCache({ sizeBytes: options.responseCacheBytes, charge: arenaCharge(parts.arena) });
    this.limits = tenantLimiter(options.tenantLimits ?? [], metrics, parts.admittingThreads ?? 1);
    this.runner = new InferenceRunner({
      models,
      faultInjection: options.faultInjection,
      logger: options.logger,
      accessLog: new AccessLog(options.logger, options.accessLogSampleRate),
      metrics,
      limits: this.limits,
      archive: this.archive,
      drift: this.drift,
      responseCache: this.responseCache,
    });
    this.inference = new RoutedInference(this.runner, () => this.routesValue);
  }

  /** The routes (`--routes`) once loaded; undefined without a routes file. */
  get routes(): RouteService | undefined {
    return this.routesValue;
  }

  /**
   * Loads the routes file, checked against the models loaded by now (once;
   * the server calls it after the start-up models). A routes file that
   * cannot serve throws RoutesFileError.
   */
  startRoutes(): void {
    if (this.options.routesFile === undefined || this.routesValue !== undefined) return;
    this.routesValue = new RouteService({
      file: this.options.routesFile,
      models: this.parts.models,
      metrics: this.parts.metrics,
      logger: this.options.logger,
      tenantScoped: this.options.requireApiKey === true,
      shadowQueueSize: this.options.shadowQueueSize ?? 256,
      shadowConcurrency: this.options.shadowConcurrency ?? 2,
      onSwap: this.parts.onRoutesSwapped,
    });
    this.routesValue.start();
    // Shadow work is shed first: once the drain refuses requests, queued shadows are dropped.
    this.runner.onStopAccepting(() => this.routesValue?.close());
  }

  /**
   * What `doors` front-door threads serve ModelInfer for themselves now
   * (door-catalog.ts): built on each change, never cached, so a version's
   * gate and plan are read as they are now.
   */
  doorCatalog(doors: number): DoorCatalog {
    const { models, metrics } = this.parts;
    this.doorGeneration += 1;
    return buildDoorCatalog(
      {
        versions: () => models.versions(),
        latest: (model) => {
          try {
            return models.resolve(model, '');
          } catch {
            return undefined;
          }
        },
        runOnly: (version) => {
          const plan = this.runner.planOf(version);
          return plan.serve === plan.shadow;
        },
        routeNames: () => this.routesValue?.names() ?? [],
        faultInjection: this.options.faultInjection,
        doors,
        keepGate: (gate) => this.doorGates.add(gate),
        shareStatistics: (version) => version.statistics.share(),
        shareMetrics: (version) => metrics.shareVersion(version),
      },
      this.doorGeneration,
    );
  }

  /** Door thread `door` exited: its requests inside any version's gate, unloading ones included, will never leave. */
  forgetDoor(door: number): void {
    for (const gate of this.openDoorGates()) if (door < gate.doors) gate.forget(door);
  }

  /** Requests the front-door threads serve now, on every version (hotpath_inflight_requests). */
  get doorRequests(): number {
    let inside = 0;
    for (const gate of this.openDoorGates()) inside += gate.inside;
    return inside;
  }

  /** The gates still in use; closed and empty ones (their versions unloaded) are dropped here. */
  private openDoorGates(): Set<SharedGate> {
    for (const gate of this.doorGates) if (!gate.isOpen && gate.inside === 0) this.doorGates.delete(gate);
    return this.doorGates;
  }

  /**
   * Reads the routes file again (SIGHUP, or an embedder's call): the new
   * routes when it is valid, the current ones (and an error log naming the
   * problem) when not. Undefined without a routes file or before it loaded.
   */
  reloadRoutes(why: string): Promise<ReloadResult> | undefined {
    return this.routesValue?.reload(why);
  }

  /**
   * GET /v2/models/{m}/drift: the versions drift follows (those that served
   * since load), newest first. `reference` is the newest one's reference, or
   * the model directory's file before any request, or null when it has none.
   */
  async driftReport(name: string, version: string, caller: Caller): Promise<unknown> {
    if (!this.parts.models.isKnown(name, visibleTo(caller))) throw notFound(`model ${echo(name)} is not found in the repository`);
    const versions = this.drift
      .report(name)
      .filter((entry) => version === '' || entry.version === version)
      .sort((a, b) => Number(b.version) - Number(a.version));
    let reference: unknown = versions[0]?.reference ?? null;
    if (versions.length === 0) {
      const file = await readReference(this.parts.modelDir(name)).catch(() => undefined);
      reference = file === undefined ? null : { source: file.source, rows: file.rows, created: file.created };
    }
    return { model: name, reference, versions };
  }

  /**
   * Once every request is answered (the drain): what the archive still holds
   * is written and synced, drift stops, and the cache lets its entries go.
   */
  async close(): Promise<void> {
    await this.archive?.close();
    await this.drift.close();
    this.responseCache?.clear();
  }
}

/**
 * The tenants' admission limits; each refusal is counted in
 * hotpath_tenant_rejected_total: pushed by a one-thread server, read from the
 * shared limiter at scrape time when door threads admit too. Undefined when
 * no tenant has one.
 */
function tenantLimiter(specs: readonly TenantLimitSpec[], metrics: ServerMetrics, threads: number): TenantLimiter | undefined {
  if (specs.length === 0) return undefined;
  metrics.initTenantRejections(specs.map((spec) => spec.tenant));
  if (threads === 1) return new TenantLimiter(specs, { onRejected: (tenant, reason) => metrics.countTenantRejection(tenant, reason) });
  const limiter = new TenantLimiter(specs, { shards: threads });
  metrics.setTenantRejectionSource(() => limiter.rejections());
  return limiter;
}
