/**
 * The server's phase machine: starting → serving → draining → stopped. It
 * builds the parts (the model manager, the memory, the metrics, the request
 * path, health and the doors), and decides when each phase begins and what it
 * does; the parts do the work. The doors (gRPC, HTTP and metrics ports) are
 * server-doors.ts, the health views server-health.ts, and the request path
 * inference/request-path.ts.
 *
 * Phases: `listen()` binds the ports (live from here); `loadModels()` loads,
 * warms and checks the repository (ready once every start-up model is READY);
 * `drain()` is the graceful shutdown:
 *   1. readiness and grpc.health turn NOT_SERVING at once;
 *   2. after `drainDelayMs` (the window for load balancers to notice) new
 *      requests are refused and the gRPC server stops accepting calls;
 *   3. in-flight requests finish within `drainTimeoutMs` (then calls are cut);
 *   4. the worker pools close, then the HTTP servers; the memory arena last.
 *
 * Main thread only.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { ModelManager } from '../repository/model-manager.js';
import { ModelRoots } from '../repository/model-roots.js';
import { ServerMetrics } from '../observability/metrics.js';
import { ServerMemory } from '../tenancy/server-memory.js';
import { LeakPatrol } from '../patrol/leak-patrol.js';
import type { PatrolSettings } from '../patrol/patrol-options.js';
import { DeviceHealth } from '../executor/device-health.js';
import type { TlsDoor } from '../security/tls.js';
import type { Caller } from '../security/caller.js';
import type { DriftChecks } from '../datachecks/drift/drift-checks.js';
import type { ReloadResult } from '../routing/routes-reloader.js';
import { RequestPath } from '../inference/request-path.js';
import type { HealthReport } from './http/health-endpoints.js';
import type { ServerOptions } from './server-options.js';
import { ServerHealth } from './server-health.js';
import { doorTls, ServerDoors, type BoundPorts } from './server-doors.js';
import { frontDoorThreadCount } from './door-threads.js';
import { batcherOf } from '../batching/version-batcher.js';

export type { ServerOptions } from './server-options.js';
export { PortInUseError, type BoundPorts, type Door } from './server-doors.js';
export type { PatrolSettings };

type Phase = 'starting' | 'serving' | 'draining' | 'stopped';

export class HotpathServer {
  readonly models: ModelManager;
  /** The repository's roots (`--model-repository`, repeatable). */
  private readonly roots: ModelRoots;
  readonly metrics: ServerMetrics;
  readonly memory: ServerMemory;
  /** What both doors' inference calls: runner, archive, drift, cache, routes (inference/request-path.ts). */
  private readonly requestPath: RequestPath;
  /** Drift checks of the models whose config turns them on (hotpath_drift). */
  readonly drift: DriftChecks;
  private readonly health: ServerHealth;
  private readonly doors: ServerDoors;
  private phase: Phase = 'starting';
  private drained: Promise<boolean> | undefined;
  private readonly log: Logger;
  private readonly patrol: LeakPatrol | undefined;
  /** A sticky device error marks the device lost for the process (see executor/device-health.ts). */
  readonly deviceHealth = new DeviceHealth();

  constructor(private readonly options: ServerOptions) {
    this.log = options.logger.child({ component: 'server' });
    // First: a certificate file that cannot be used stops start-up before anything is allocated (TlsFileError).
    const tls = doorTls(options);
    this.roots = new ModelRoots(options.modelRepositories);
    this.memory = ServerMemory.create({
      capacityBytes: options.memoryCapacityBytes,
      tenants: options.tenants,
      device: options.device ?? { ordinal: 0, capacityBytes: undefined, tenants: [], backend: 'cuda' },
      logger: options.logger,
    });
    const statisticsShards = statisticsShardsFor(frontDoorThreadCount(options.frontDoorThreads ?? 1));
    this.models = new ModelManager({
      memory: this.memory,
      batching: {
        onExecuted: (version, rows, timing) => {
          version.statistics.recordExecution(rows, timing);
          this.metrics.observeExecution(version, rows);
        },
      },
      roots: this.roots,
      intraOpThreads: options.intraOpThreads,
      faultInjection: options.faultInjection,
      loadConcurrency: options.modelLoadConcurrency,
      defaultWarmup: options.defaultWarmup,
      logger: options.logger,
      onStateChange: () => {
        this.refreshHealth();
        // A version loaded, unloaded or evicted: what the front-door threads serve changes with it.
        this.doors.publishDoorCatalog();
      },
      deviceHealth: this.deviceHealth,
      deviceProbeIntervalMs: options.deviceProbeIntervalMs ?? 5000,
      onDeviceFallback: (version, reason) => this.metrics.countDeviceFallback(version.modelName, reason),
      autoCompleteConfig: options.autoCompleteConfig,
      ...(options.defaultMaxBatchSize === undefined ? {} : { defaultMaxBatchSize: options.defaultMaxBatchSize }),
      loadTimeoutMs: options.modelLoadTimeoutMs ?? 0,
      statisticsShards,
      control: {
        mode: options.modelControlMode,
        startupModels: options.startupModels,
        pollIntervalMs: Math.round(options.repositoryPollSecs * 1000),
      },
    });
    this.deviceHealth.onLost((reason) => {
      this.log.error({ reason }, 'CUDA device lost: executor models serve on CPU; readiness reports degraded');
      this.refreshHealth();
    });
    this.metrics = new ServerMetrics({
      versions: () => this.models.versions(),
      // The main thread's requests and those the front-door threads serve themselves (inside a version's gate).
      inflightRequests: () => this.requestPath.runner.inflightRequests + this.requestPath.doorRequests,
      tenantLabels: options.metricsTenantLabels,
      cpuSampleIntervalMs: options.metricsIntervalMs,
      statisticsShards,
    });
    // Native counters, read at scrape time.
    this.metrics.setTenantMemorySource(() => this.memory.tenantStats());
    this.metrics.setGpuSource(() => this.memory.gpuStats());
    this.requestPath = new RequestPath(options, {
      models: this.models,
      metrics: this.metrics,
      arena: this.memory.arena,
      modelDir: (model) => this.modelDir(model),
      onDegradedChange: () => this.refreshHealth(),
      onRoutesSwapped: () => this.doors.publishDoorCatalog(),
      // The main thread and each door thread admit requests: one shard each (as the statistics).
      admittingThreads: statisticsShards,
    });
    this.drift = this.requestPath.drift;
    this.health = new ServerHealth({
      isReady: () => this.isReady(),
      isDraining: () => this.phase === 'draining' || this.phase === 'stopped',
      models: this.models,
      drift: this.drift,
      deviceHealth: this.deviceHealth,
      routes: () => this.requestPath.routes,
    });
    this.doors = new ServerDoors(options, tls, {
      models: this.models,
      metrics: this.metrics,
      inference: this.requestPath.inference,
      routes: () => this.requestPath.routes,
      limits: this.requestPath.limits,
      grpcHealth: this.health.grpc,
      probes: {
        isLive: () => this.phase !== 'stopped',
        isReady: () => this.isReady(),
        report: () => this.healthReport(),
      },
      driftReport: (name, version, caller) => this.driftReport(name, version, caller),
      doorCatalog: (doors) => this.requestPath.doorCatalog(doors),
      onDoorExit: (index) => {
        this.requestPath.forgetDoor(index);
        // Its admitted requests never release: their places in their tenants' in-flight counts are freed.
        this.requestPath.limits?.releaseShard(index + 1);
      },
      // As the main thread's own batches do (version-batcher.ts): the version moves to CPU, and the catalog drops it.
      onDoorDeviceFault: (report) => {
        const version = this.models.versions(report.model).find((candidate) => candidate.versionLabel === report.version);
        // Only the version whose batcher failed (not a reload's successor with the same label).
        if (version !== undefined && batcherOf(version)?.id === report.batcher) version.native?.fallBack(report.fault, report.detail);
      },
    });
    this.patrol = options.patrol === undefined ? undefined : this.createPatrol(options.patrol);
  }

  private createPatrol(settings: PatrolSettings): LeakPatrol {
    return new LeakPatrol({
      ...settings,
      versions: () => this.models.versions(),
      tenantAllocatedBytes: (tenant) => this.memory.arena.stats().tenants.find((t) => t.name === tenant)?.allocated ?? 0,
      deviceMemory: () => {
        // The device ledger against what the device itself reports used (all
        // processes, CUDA contexts included); only on a real device.
        const gpu = this.memory.gpuStats();
        const device = this.memory.device;
        if (gpu === undefined || device === undefined) return undefined;
        return { usedBytes: gpu.usedBytes, ledgerBytes: device.arena.stats().backendReserved };
      },
      onRestart: (version, reason) => this.metrics.countPatrolRestart(version.modelName, reason),
      logger: this.options.logger,
    });
  }

  /** The model's directory in the repository's roots (the first root's path when none or two have it: the load reports those). */
  private modelDir(model: string): string {
    try {
      return this.roots.modelDir(model) ?? path.join(this.roots.dirs[0]!, model);
    } catch {
      return path.join(this.roots.dirs[0]!, model);
    }
  }

  /** The start-up models with no ready version, each with why (`--exit-on-error`). */
  failedStartupModels(): { readonly name: string; readonly reason: string }[] {
    return this.models.failedStartupModels();
  }

  /**
   * Ready: serving, every start-up model ready (unless `--strict-readiness`
   * is false), and the device not lost. A lost device leaves the server
   * answering on CPU but unready (degraded), so an orchestrator replaces the pod.
   */
  isReady(): boolean {
    const modelsReady = this.options.strictReadiness === false || this.models.allStartupModelsReady();
    return this.phase === 'serving' && modelsReady && this.deviceHealth.lost === undefined;
  }

  /**
   * Returns the host arena's fully free cached segments to the system (bytes
   * returned): after a burst, so RSS comes back near its baseline (the
   * addon's memory trimmer calls it once the burst is over).
   */
  releaseCachedMemory(): number {
    return this.memory.arena.releaseCached();
  }

  /** Binds the ports and logs them: the process is live from here, not yet ready. */
  listen(): Promise<BoundPorts> {
    return this.doors.listen();
  }

  /** See ServerDoors.reloadCertificates (SIGHUP). */
  reloadCertificates(): { readonly reloaded: TlsDoor[]; readonly failed: TlsDoor[] } {
    return this.doors.reloadCertificates();
  }

  /**
   * Loads, warms and checks the start-up models (see ModelManager.loadStartupModels),
   * then the routes file, which is checked against them; ready after (unless
   * draining). A routes file that cannot serve throws RoutesFileError.
   */
  async loadModels(): Promise<void> {
    await this.models.loadStartupModels();
    this.requestPath.startRoutes();
    // The routes are known now: a model a route names is not served by the door threads.
    this.doors.publishDoorCatalog();
    if (this.phase === 'starting') this.phase = 'serving';
    if (this.phase === 'serving') this.patrol?.start();
    this.refreshHealth();
    this.log.info({ ready: this.isReady() }, 'model repository loaded');
  }

  /**
   * Reads the routes file again (SIGHUP, or an embedder's call): the new
   * routes when it is valid, the current ones (and an error log naming the
   * problem) when not. Undefined without a routes file or before it loaded.
   */
  reloadRoutes(why = 'requested'): Promise<ReloadResult> | undefined {
    return this.requestPath.reloadRoutes(why);
  }

  /** `listen()` then `loadModels()`. */
  async start(): Promise<BoundPorts> {
    const ports = await this.listen();
    await this.loadModels();
    return ports;
  }

  /** Keeps grpc.health.v1 in step with ServerReady. */
  refreshHealth(): void {
    this.health.refresh();
  }

  /** GET /v2/models/{m}/drift (see RequestPath.driftReport). */
  driftReport(name: string, version: string, caller: Caller): Promise<unknown> {
    return this.requestPath.driftReport(name, version, caller);
  }

  /** GET /healthz (see ServerHealth.report). */
  healthReport(): Promise<HealthReport> {
    return this.health.report();
  }

  /**
   * The graceful shutdown (see the file comment). Resolves true when every
   * in-flight request finished and every pool closed in time. Idempotent.
   */
  drain(): Promise<boolean> {
    this.drained ??= this.drainNow(this.options.drainDelayMs, this.options.drainTimeoutMs);
    return this.drained;
  }

  /** Shuts down without the load-balancer delay (tests, embedding). */
  async stop(): Promise<void> {
    this.drained ??= this.drainNow(0, this.options.drainTimeoutMs);
    await this.drained;
  }

  private async drainNow(delayMs: number, timeoutMs: number): Promise<boolean> {
    this.phase = 'draining';
    this.refreshHealth();
    // No restarts while draining: the pools are about to close anyway.
    await this.patrol?.stop();
    this.log.info({ drain_delay_ms: delayMs, inflight: this.requestPath.runner.inflightRequests }, 'draining: readiness is off');
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));

    this.requestPath.runner.stopAccepting();
    this.doors.stopAccepting();
    this.log.info({ inflight: this.requestPath.runner.inflightRequests, drain_timeout_ms: timeoutMs }, 'draining: no longer accepting requests');
    const deadline = performance.now() + timeoutMs;
    const callsDone = await withinTime(this.doors.callsFinished(), timeoutMs);
    if (!callsDone) {
      this.log.warn({ inflight: this.requestPath.runner.inflightRequests }, 'drain timeout: cutting the calls still open');
      this.doors.cutCalls();
    }
    const poolsClosed = await withinTime(this.models.close(), Math.max(0, deadline - performance.now()) + 1000);
    if (!poolsClosed) this.log.warn('drain timeout: worker pools did not close in time');
    await this.doors.closeHttp();
    // Every request is answered: what the archive still holds is written and synced.
    await this.requestPath.close();
    // Every version destroyed its owner on unload; closing frees whatever is left.
    if (poolsClosed) this.memory.close();
    this.phase = 'stopped';
    this.log.info({ graceful: callsDone && poolsClosed }, 'stopped');
    return callsDone && poolsClosed;
  }
}

/** Whether `work` settled within `ms`; the timer never outlives the race. */
async function withinTime(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true, () => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Threads that record statistics and histograms: the main thread (shard 0)
 * and, with door threads (more than one), each of them (shards 1..N).
 */
function statisticsShardsFor(doorThreads: number): number {
  return doorThreads > 1 ? 1 + doorThreads : 1;
}
