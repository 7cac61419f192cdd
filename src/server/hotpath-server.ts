/**
 * Wires the pieces into one server: the model manager, the gRPC
 * GRPCInferenceService and grpc.health.v1.Health on one port, the HTTP health
 * endpoints on another, and Prometheus metrics on a third.
 *
 * Lifecycle: `listen()` binds the ports (live from here); `loadModels()` loads,
 * warms and checks the repository (ready once every start-up model is READY);
 * `drain()` is the graceful shutdown:
 *   1. readiness and grpc.health turn NOT_SERVING at once;
 *   2. after `drainDelayMs` (the window for load balancers to notice) new
 *      requests are refused and the gRPC server stops accepting calls;
 *   3. in-flight requests finish within `drainTimeoutMs` (then calls are cut);
 *   4. the worker pools close, then the HTTP servers; the memory arena last.
 */
import path from 'node:path';
import http from 'node:http';
import { once } from 'node:events';
import { Server, ServerCredentials, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import type { Logger } from 'pino';
import { GRPCInferenceService, ModelInferRequestSchema, type ModelInferResponse } from '../generated/grpc_service_pb.js';
import { ModelManager } from '../repository/model-manager.js';
import { ModelRoots } from '../repository/model-roots.js';
import { AccessLog } from '../observability/access-log.js';
import { createMetricsHttpServer } from '../observability/metrics-http.js';
import { ServerMetrics } from '../observability/metrics.js';
import { serviceDefinitionFor } from './grpc-service-definition.js';
import { prescanInferRequest } from './infer-request-prescan.js';
import { inferHandlers } from './handlers/infer-handlers.js';
import { repositoryHandlers } from './handlers/repository-handlers.js';
import { serverHandlers } from './handlers/server-handlers.js';
import { unimplementedHandlers } from './handlers/unimplemented-handlers.js';
import type { HealthReport } from './http/health-endpoints.js';
import { createRestHttpServer } from './http/rest-server.js';
import { InferenceRunner } from '../inference/inference-runner.js';
import { ServerMemory, type DeviceLedgerOptions } from '../tenancy/server-memory.js';
import { LeakPatrol } from '../patrol/leak-patrol.js';
import type { PatrolSettings } from '../patrol/patrol-options.js';
import { DeviceHealth } from '../executor/device-health.js';
import type { TenantQuota } from '../tenancy/tenant-config.js';
import type { ModelControlMode } from '../repository/model-control.js';
import type { LogFormat } from '../observability/logger.js';
import { ServerTls, TlsFileError, type CertificateSummary, type TlsDoor, type TlsFiles } from '../security/tls.js';
import { applyHttpConnectionLimits, grpcConnectionOptions, type ConnectionLimits } from '../security/connection-limits.js';
import { TenantLimiter, type TenantLimitSpec } from '../security/tenant-limits.js';
import { connectionCaps, DOOR_LIMIT_DEFAULTS, type DoorLimits } from '../security/door-limits.js';
import { ConnectionGate } from './connection-gate.js';
import { GrpcListener } from './grpc-listener.js';
import { doorGates, logAccess, type AccessSettings, type CallGate } from '../security/caller.js';
import { GrpcAdmission } from './admission.js';
import { RefusalLog } from '../observability/refusal-log.js';
import { RouteService } from '../inference/routing/route-service.js';
import { RoutedInference } from '../inference/routing/routed-inference.js';
import { PayloadArchive, type ArchiveSettings } from '../datachecks/archive/payload-archive.js';
import { DriftChecks } from '../datachecks/drift/drift-checks.js';
import { readReference } from '../datachecks/drift/drift-reference.js';
import { ResponseCache } from '../datachecks/cache/response-cache.js';
import { arenaCharge } from '../datachecks/cache/cache-charge.js';
import { visibleTo, type Caller } from '../security/caller.js';
import { notFound } from '../common/serving-error.js';
import { echo } from '../common/echo.js';
import type { ReloadResult } from '../routing/routes-reloader.js';

/** AccessSettings: API keys, the admin tenant and restricted groups (security/caller.ts). */
export interface ServerOptions extends AccessSettings {
  /** The repository's roots (`--model-repository`, repeatable), served as one repository. */
  readonly modelRepositories: readonly string[];
  readonly host: string;
  /** The address the gRPC port binds (`--grpc-address`); default: `host`. */
  readonly grpcAddress?: string | undefined;
  /** The address the HTTP port binds (`--http-address`); default: `host`. */
  readonly httpAddress?: string | undefined;
  readonly grpcPort: number;
  /** -1 disables the HTTP health endpoints. */
  readonly httpPort: number;
  /** -1 disables the metrics endpoint. */
  readonly metricsPort: number;
  /** The address the metrics port binds (`--metrics-address`); default: `host`. */
  readonly metricsAddress?: string | undefined;
  /** `--metrics-tenant-labels` (default true): false, and no metric names a tenant (observability/metrics.ts). */
  readonly metricsTenantLabels?: boolean | undefined;
  /** `--metrics-interval-ms`: the CPU utilisation gauge samples at most this often (default 1000). */
  readonly metricsIntervalMs?: number | undefined;
  /** Streams per gRPC connection, idle and request timeouts (`--grpc-max-concurrent-streams`...); defaults in security/connection-limits.ts. */
  readonly connections?: ConnectionLimits | undefined;
  /** Body budget, JSON parse queue, connection caps and timeouts of the doors (`--http-body-budget`...); defaults in security/door-limits.ts. */
  readonly doors?: DoorLimits | undefined;
  /** Per-tenant request rate and in-flight caps (tenants file `rate`, `burst`, `max_inflight`). */
  readonly tenantLimits?: readonly TenantLimitSpec[] | undefined;
  readonly intraOpThreads: number;
  readonly modelLoadConcurrency: number;
  readonly defaultWarmup: boolean;
  /** Fraction (0..1) of successful requests that are access-logged; errors always are. */
  readonly accessLogSampleRate: number;
  readonly drainDelayMs: number;
  readonly drainTimeoutMs: number;
  /** `--model-load-timeout` in ms: one model's load, warm-up and golden checks (repository/load-deadline.ts); 0 or absent: none. */
  readonly modelLoadTimeoutMs?: number;
  /** `--strict-readiness` (default true): ready only while every start-up model is; false: ready once serving. */
  readonly strictReadiness?: boolean;
  readonly faultInjection: boolean;
  /** The arena's capacity: request buffers + model reservations, all tenants together. */
  readonly memoryCapacityBytes: number;
  readonly tenants: readonly TenantQuota[];
  /** The device ledger (`--device`, `--tenant-device`...); default: device 0, no device quotas. */
  readonly device?: DeviceLedgerOptions;
  /** After a transient device error, how often a model on CPU tries the device again (default 5 s). */
  readonly deviceProbeIntervalMs?: number;
  /** The leak patrol's settings (see src/patrol); undefined: no patrol. */
  readonly patrol?: PatrolSettings | undefined;
  /**
   * The largest request body either front door takes (`--max-message-size`):
   * grpc-js's receive limit and the HTTP body limit (413 above it).
   */
  readonly maxMessageBytes: number;
  /** Whether each front door is started at all (`--allow-grpc`, `--allow-http`, `--allow-metrics`). */
  readonly allowGrpc: boolean;
  readonly allowHttp: boolean;
  readonly allowMetrics: boolean;
  /**
   * Triton's `--model-control-mode`; 'default' (no flag) loads every model at
   * start-up and allows load and unload (see repository/model-control.ts).
   */
  readonly modelControlMode: ModelControlMode;
  /** `--load-model` names (explicit mode's start-up models); '*' stands for all. */
  readonly startupModels: readonly string[];
  /** Poll mode: seconds between repository scans. */
  readonly repositoryPollSecs: number;
  /** Complete partial configs from the ONNX model (off: `--disable-auto-complete-config`). */
  readonly autoCompleteConfig: boolean;
  /** max_batch_size of auto-completed configs that can batch (`--backend-config=onnxruntime,default-max-batch-size=N`; default 4). */
  readonly defaultMaxBatchSize?: number | undefined;
  readonly logFormat: LogFormat;
  /** TLS on the gRPC port (`--grpc-use-ssl...`); undefined: plaintext. */
  readonly grpcTls?: TlsFiles | undefined;
  /** TLS on the HTTP port (`--http-use-ssl...`); undefined: plaintext. Metrics stay plaintext. */
  readonly httpTls?: TlsFiles | undefined;
  /**
   * The routes file (`--routes`): virtual model names with arms, shadow,
   * breakers and rollback (src/routing). Loaded once the start-up models are;
   * an invalid file fails `loadModels` with a RoutesFileError.
   */
  readonly routesFile?: string | undefined;
  /** Shadow requests waiting, at most, all routes together (`--shadow-queue-size`; default 256). */
  readonly shadowQueueSize?: number | undefined;
  /** Shadow requests running at once (`--shadow-concurrency`; default 2). */
  readonly shadowConcurrency?: number | undefined;
  /** The payload archive (`--archive DIR`...; src/datachecks/archive); undefined: off. */
  readonly archive?: ArchiveSettings | undefined;
  /** The response cache's size (`--cache-config local,size=BYTES`; src/datachecks/cache); undefined: off. */
  readonly responseCacheBytes?: number | undefined;
  readonly serverName: string;
  readonly serverVersion: string;
  readonly logger: Logger;
}

export type { PatrolSettings };

/** The ports bound; undefined for a front door that is off (`--allow-*=false`, port -1). */
export interface BoundPorts {
  readonly grpc: number | undefined;
  readonly http: number | undefined;
  readonly metrics: number | undefined;
}

type Phase = 'starting' | 'serving' | 'draining' | 'stopped';

export class HotpathServer {
  readonly models: ModelManager;
  /** The repository's roots (`--model-repository`, repeatable). */
  private readonly roots: ModelRoots;
  readonly metrics: ServerMetrics;
  readonly memory: ServerMemory;
  private readonly runner: InferenceRunner;
  /** The payload archive (--archive); undefined when off. */
  private readonly archive: PayloadArchive | undefined;
  /** Drift checks of the models whose config turns them on (hotpath_drift). */
  readonly drift: DriftChecks;
  /** The response cache (--cache-config); undefined when off. */
  private readonly responseCache: ResponseCache<Uint8Array> | undefined;
  /** The runner behind the routes: what both doors' inference calls. */
  private readonly inference: RoutedInference;
  /** The routes (`--routes`), from `loadModels` on; undefined without a routes file. */
  private routes: RouteService | undefined;
  /** The GRPCInferenceService implementation, served over gRPC and behind the REST endpoints. */
  private readonly protocol: UntypedServiceImplementation;
  /** The HTTP door's admission (the gRPC door's is the interceptor `grpcAdmission`). */
  private readonly httpGate: CallGate;
  private readonly grpc: Server;
  /** The gRPC door's admission interceptor (server/admission.ts): decides each call from its metadata, before its message. */
  private readonly grpcAdmission: GrpcAdmission;
  /** Every door's connections, counted against --max-connections and --max-connections-per-peer. */
  private readonly connectionGate: ConnectionGate;
  /** The gRPC port's own listener (connection caps, header timeout); set by `listen`. */
  private grpcListener: GrpcListener | undefined;
  private readonly health = new HealthImplementation({ '': 'NOT_SERVING' });
  private readonly httpServers: http.Server[] = [];
  private phase: Phase = 'starting';
  private drained: Promise<boolean> | undefined;
  private readonly log: Logger;
  private readonly patrol: LeakPatrol | undefined;
  /** A sticky device error marks the device lost for the process (see executor/device-health.ts). */
  readonly deviceHealth = new DeviceHealth();
  /** Each door's certificates, reloaded by `reloadCertificates` (SIGHUP). */
  private readonly tls: { readonly grpc: ServerTls | undefined; readonly http: ServerTls | undefined };

  constructor(private readonly options: ServerOptions) {
    this.log = options.logger.child({ component: 'server' });
    // First: a certificate file that cannot be used stops start-up before anything is allocated (TlsFileError).
    this.tls = {
      grpc: options.grpcTls === undefined || !options.allowGrpc ? undefined : new ServerTls('grpc', options.grpcTls),
      http: options.httpTls === undefined || !options.allowHttp ? undefined : new ServerTls('http', options.httpTls),
    };
    this.grpc = new Server({
      // One request-size limit for both front doors (--max-message-size).
      'grpc.max_receive_message_length': options.maxMessageBytes,
      // Outputs can be large; Triton's clients accept up to about 2 GiB.
      'grpc.max_send_message_length': 256 * 1024 * 1024,
      // Streams per connection, idle and age limits, keepalive (--grpc-max-concurrent-streams...).
      ...grpcConnectionOptions(options.connections),
      // Admission runs before grpc-js reads a call's message; bound late (the gate and limits are built below).
      interceptors: [(descriptor, call) => this.grpcAdmission.interceptor(descriptor, call)],
    });
    this.connectionGate = new ConnectionGate(
      connectionCaps(options.doors ?? {}),
      new RefusalLog(options.logger.child({ component: 'connections' })),
    );
    this.roots = new ModelRoots(options.modelRepositories);
    this.memory = ServerMemory.create({
      capacityBytes: options.memoryCapacityBytes,
      tenants: options.tenants,
      device: options.device ?? { ordinal: 0, capacityBytes: undefined, tenants: [], backend: 'cuda' },
      logger: options.logger,
    });
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
      onStateChange: () => this.refreshHealth(),
      deviceHealth: this.deviceHealth,
      deviceProbeIntervalMs: options.deviceProbeIntervalMs ?? 5000,
      onDeviceFallback: (version, reason) => this.metrics.countDeviceFallback(version.modelName, reason),
      autoCompleteConfig: options.autoCompleteConfig,
      ...(options.defaultMaxBatchSize === undefined ? {} : { defaultMaxBatchSize: options.defaultMaxBatchSize }),
      loadTimeoutMs: options.modelLoadTimeoutMs ?? 0,
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
      inflightRequests: () => this.runner.inflightRequests,
      tenantLabels: options.metricsTenantLabels,
      cpuSampleIntervalMs: options.metricsIntervalMs,
    });
    // Native counters, read at scrape time.
    this.metrics.setTenantMemorySource(() => this.memory.tenantStats());
    this.metrics.setGpuSource(() => this.memory.gpuStats());
    this.archive = options.archive === undefined ? undefined : new PayloadArchive(options.archive, options.logger);
    const archive = this.archive;
    if (archive !== undefined) this.metrics.setArchiveSource(() => archive.counts());
    this.drift = new DriftChecks({
      logger: options.logger,
      modelDir: (model) => this.modelDir(model),
      onDegradedChange: () => this.refreshHealth(),
      isServing: (version) => this.models.versions(version.modelName).some((served) => served === version),
    });
    this.metrics.setDriftSource(() => this.drift.gauges());
    this.responseCache =
      options.responseCacheBytes === undefined
        ? undefined
        : new ResponseCache({ sizeBytes: options.responseCacheBytes, charge: arenaCharge(this.memory.arena) });
    const tenantLimits = this.tenantLimiter(options.tenantLimits ?? []);
    this.runner = new InferenceRunner({
      models: this.models,
      faultInjection: options.faultInjection,
      logger: options.logger,
      accessLog: new AccessLog(options.logger, options.accessLogSampleRate),
      metrics: this.metrics,
      limits: tenantLimits,
      archive: this.archive,
      drift: this.drift,
      responseCache: this.responseCache,
    });
    this.inference = new RoutedInference(this.runner, () => this.routes);
    const identity = { name: options.serverName, version: options.serverVersion, isReady: () => this.isReady() };
    const routes = () => this.routes;
    // One implementation for both doors: the REST endpoints run these RPCs' operations (see http/rest-handlers.ts).
    this.protocol = {
      ...serverHandlers(this.models, identity, routes),
      ...inferHandlers(this.inference),
      ...repositoryHandlers(this.models, routes),
      ...unimplementedHandlers(),
    };
    // Every gRPC call passes its door's gate first (server/admission.ts), grpc.health.v1 too (Triton's 'health' group).
    const gates = doorGates(options);
    logAccess(this.log, options, gates);
    this.httpGate = gates.http;
    this.grpcAdmission = new GrpcAdmission({
      gate: gates.grpc,
      refusals: new RefusalLog(options.logger.child({ component: 'auth' })),
      limits: tenantLimits,
    });
    // ModelInferRequest bytes are pre-scanned before decoding (bounded decoding, infer-request-prescan.ts).
    const definition = serviceDefinitionFor(GRPCInferenceService, {
      guards: new Map([[ModelInferRequestSchema.typeName, prescanInferRequest]]),
    });
    this.grpcAdmission.register(definition);
    this.grpc.addService(definition, this.protocol);
    this.health.addToServer({
      addService: (service, implementation) => {
        this.grpcAdmission.register(service, (method) => `Health${method}`);
        this.grpc.addService(service, implementation);
      },
    } as Pick<Server, 'addService'> as Server);
    this.patrol = options.patrol === undefined ? undefined : this.createPatrol(options.patrol);
  }

  /** The tenants' admission limits; each refusal is counted in hotpath_tenant_rejected_total. Undefined when no tenant has one. */
  private tenantLimiter(specs: readonly TenantLimitSpec[]): TenantLimiter | undefined {
    if (specs.length === 0) return undefined;
    this.metrics.initTenantRejections(specs.map((spec) => spec.tenant));
    return new TenantLimiter(specs, { onRejected: (tenant, reason) => this.metrics.countTenantRejection(tenant, reason) });
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

  /**
   * --grpc-ignore-idle-stream-frames on a plaintext gRPC port: the listener's
   * frame filter, its drops logged rate-limited. On TLS the bytes are
   * encrypted where the listener sees them, so the flag is refused at
   * start-up there (warned, and off).
   */
  private idleStreamFilter(): { onDropped: () => void } | undefined {
    if (this.options.doors?.grpcIgnoreIdleStreamFrames !== true) return undefined;
    if (this.tls.grpc !== undefined) {
      this.log.warn('--grpc-ignore-idle-stream-frames is ignored: the gRPC port uses TLS, and the filter reads plaintext HTTP/2 frames');
      return undefined;
    }
    const drops = new RefusalLog(this.options.logger.child({ component: 'connections' }));
    return {
      onDropped: () =>
        drops.refused('grpc:idle-stream-frame', {}, 'dropped a frame for a gRPC stream the client never opened (a call it cancelled at once)'),
    };
  }

  /** Binds the ports and logs them: the process is live from here, not yet ready. */
  async listen(): Promise<BoundPorts> {
    let grpcPort: number | undefined;
    if (this.options.allowGrpc) {
      // Our listener, grpc-js's HTTP/2 (server/grpc-listener.ts): connections are capped and timed before grpc-js sees them.
      this.grpcListener = new GrpcListener(
        this.grpc,
        this.tls.grpc?.grpcCredentials() ?? ServerCredentials.createInsecure(),
        this.connectionGate,
        this.options.doors?.headerTimeoutMs ?? DOOR_LIMIT_DEFAULTS.headerTimeoutMs,
        this.idleStreamFilter(),
      );
      const address = this.options.grpcAddress ?? this.options.host;
      grpcPort = await this.grpcListener.listen(address, this.options.grpcPort).catch((err: unknown) => {
        throw portError(err, 'grpc', address, this.options.grpcPort);
      });
    }
    const httpPort = await this.listenHttp(this.options.allowHttp ? this.options.httpPort : -1, () => {
      const server = createRestHttpServer({
        tls: this.tls.http?.httpsOptions(),
        health: {
          isLive: () => this.phase !== 'stopped',
          isReady: () => this.isReady(),
          report: () => this.healthReport(),
        },
        runner: this.inference,
        protocol: this.protocol,
        gate: this.httpGate,
        maxMessageBytes: this.options.maxMessageBytes,
        logger: this.options.logger,
        connections: this.options.connections,
        doors: this.options.doors,
        driftReport: (name, version, caller) => this.driftReport(name, version, caller),
      });
      this.tls.http?.follow(server);
      this.connectionGate.guard(server, 'http');
      return server;
    }, this.options.httpAddress ?? this.options.host, 'http');
    const metricsPort = await this.listenHttp(
      this.options.allowMetrics ? this.options.metricsPort : -1,
      () => {
        const server = createMetricsHttpServer(this.metrics);
        applyHttpConnectionLimits(server, this.options.connections);
        this.connectionGate.guard(server, 'metrics');
        return server;
      },
      this.options.metricsAddress ?? this.options.host,
      'metrics',
    );
    const ports = { grpc: grpcPort, http: httpPort, metrics: metricsPort };
    this.log.info(
      {
        grpc_port: ports.grpc,
        http_port: ports.http,
        metrics_port: ports.metrics,
        grpc_tls: tlsMode(this.tls.grpc),
        http_tls: tlsMode(this.tls.http),
        max_connections: this.connectionGate.caps.total,
        max_connections_per_peer: this.connectionGate.caps.perPeer,
      },
      'listening',
    );
    for (const door of [this.tls.grpc, this.tls.http]) if (door !== undefined) this.logCertificate(door.door, door.certificate, 'serving certificate');
    return ports;
  }

  /**
   * Reads every door's certificate files again (SIGHUP). New handshakes use
   * the new certificates; open connections and streams keep theirs. A door
   * whose files fail a check keeps its current certificates, and the error is
   * logged naming the file. Returns which doors took new certificates.
   */
  reloadCertificates(): { readonly reloaded: TlsDoor[]; readonly failed: TlsDoor[] } {
    const reloaded: TlsDoor[] = [];
    const failed: TlsDoor[] = [];
    for (const door of [this.tls.grpc, this.tls.http]) {
      if (door === undefined) continue;
      try {
        this.logCertificate(door.door, door.reload(), 'certificates reloaded');
        reloaded.push(door.door);
      } catch (err) {
        if (!(err instanceof TlsFileError)) throw err;
        this.log.error({ door: door.door, error: err.message }, 'certificate reload failed: keeping the current certificates');
        failed.push(door.door);
      }
    }
    if (reloaded.length === 0 && failed.length === 0) this.log.info('certificate reload: no TLS configured, nothing to reload');
    return { reloaded, failed };
  }

  private logCertificate(door: TlsDoor, certificate: CertificateSummary, msg: string): void {
    const fields = {
      door,
      subject: certificate.subject,
      issuer: certificate.issuer,
      serial: certificate.serial,
      not_after: certificate.notAfter,
      fingerprint256: certificate.fingerprint256,
    };
    if (certificate.outsideValidity) this.log.warn({ ...fields, not_before: certificate.notBefore }, `${msg}: outside its validity dates, clients will refuse it`);
    else this.log.info(fields, msg);
  }

  /**
   * Loads, warms and checks the start-up models (see ModelManager.loadStartupModels),
   * then the routes file, which is checked against them; ready after (unless
   * draining). A routes file that cannot serve throws RoutesFileError.
   */
  async loadModels(): Promise<void> {
    await this.models.loadStartupModels();
    if (this.options.routesFile !== undefined && this.routes === undefined) {
      this.routes = new RouteService({
        file: this.options.routesFile,
        models: this.models,
        metrics: this.metrics,
        logger: this.options.logger,
        tenantScoped: this.options.requireApiKey === true,
        shadowQueueSize: this.options.shadowQueueSize ?? 256,
        shadowConcurrency: this.options.shadowConcurrency ?? 2,
      });
      this.routes.start();
      // Shadow work is shed first: once the drain refuses requests, queued shadows are dropped.
      this.runner.onStopAccepting(() => this.routes?.close());
    }
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
    return this.routes?.reload(why);
  }

  /** `listen()` then `loadModels()`. */
  async start(): Promise<BoundPorts> {
    const ports = await this.listen();
    await this.loadModels();
    return ports;
  }

  /** Keeps grpc.health.v1 in step with ServerReady. */
  refreshHealth(): void {
    this.health.setStatus('', this.isReady() ? 'SERVING' : 'NOT_SERVING');
  }

  /**
   * GET /v2/models/{m}/drift: the versions drift follows (those that served
   * since load), newest first. `reference` is the newest one's reference, or
   * the model directory's file before any request, or null when it has none.
   */
  async driftReport(name: string, version: string, caller: Caller): Promise<unknown> {
    if (!this.models.isKnown(name, visibleTo(caller))) throw notFound(`model ${echo(name)} is not found in the repository`);
    const versions = this.drift
      .report(name)
      .filter((entry) => version === '' || entry.version === version)
      .sort((a, b) => Number(b.version) - Number(a.version));
    let reference: unknown = versions[0]?.reference ?? null;
    if (versions.length === 0) {
      const file = await readReference(this.modelDir(name)).catch(() => undefined);
      reference = file === undefined ? null : { source: file.source, rows: file.rows, created: file.created };
    }
    return { model: name, reference, versions };
  }

  async healthReport(): Promise<HealthReport> {
    // A version at drift's 'act' with hotpath_drift_action 'degrade' is marked, and so is the server's status.
    const models = (await this.models.index(false)).map((entry) =>
      this.drift.isDegraded(entry.name, entry.version) ? { ...entry, drift: 'act', reason: entry.reason || 'input drift at act' } : entry,
    );
    const lost = this.deviceHealth.lost;
    const drifted = this.drift.degradedReason();
    const status =
      this.phase === 'draining' || this.phase === 'stopped'
        ? 'draining'
        : lost !== undefined || (drifted !== undefined && this.isReady())
          ? 'degraded'
          : this.isReady()
            ? 'ready'
            : 'not_ready';
    return {
      status,
      models,
      ...(lost !== undefined ? { reason: `CUDA device lost: ${lost}` } : drifted !== undefined ? { reason: drifted } : {}),
      ...(this.routes !== undefined ? { routes: this.routes.healthSnapshot() } : {}),
    };
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
    this.log.info({ drain_delay_ms: delayMs, inflight: this.runner.inflightRequests }, 'draining: readiness is off');
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));

    this.runner.stopAccepting();
    this.grpcListener?.stopAccepting();
    this.log.info({ inflight: this.runner.inflightRequests, drain_timeout_ms: timeoutMs }, 'draining: no longer accepting requests');
    const deadline = performance.now() + timeoutMs;
    const callsDone = await withinTime(new Promise<void>((resolve) => this.grpc.tryShutdown(() => resolve())), timeoutMs);
    if (!callsDone) {
      this.log.warn({ inflight: this.runner.inflightRequests }, 'drain timeout: cutting the calls still open');
      this.grpc.forceShutdown();
    }
    const poolsClosed = await withinTime(this.models.close(), Math.max(0, deadline - performance.now()) + 1000);
    if (!poolsClosed) this.log.warn('drain timeout: worker pools did not close in time');
    await Promise.all(this.httpServers.map((server) => closeHttp(server)));
    // Every version destroyed its owner on unload; closing frees whatever is left.
    // Every request is answered: what the archive still holds is written and synced.
    await this.archive?.close();
    await this.drift.close();
    this.responseCache?.clear();
    if (poolsClosed) this.memory.close();
    this.phase = 'stopped';
    this.log.info({ graceful: callsDone && poolsClosed }, 'stopped');
    return callsDone && poolsClosed;
  }

  private async listenHttp(port: number, make: () => http.Server, host: string, door: Door): Promise<number | undefined> {
    if (port < 0) return undefined;
    const server = make();
    server.listen(port, host);
    await once(server, 'listening').catch((err: unknown) => {
      throw portError(err, door, host, port);
    });
    this.httpServers.push(server);
    const address = server.address();
    return typeof address === 'object' && address !== null ? address.port : undefined;
  }
}

/** A door: the gRPC port, the HTTP port, the metrics port. */
export type Door = 'grpc' | 'http' | 'metrics';

/** A port another process (or another door) holds: which door, which address and port. */
export class PortInUseError extends Error {
  readonly code = 'EADDRINUSE';
  constructor(
    readonly door: Door,
    readonly address: string,
    readonly port: number,
  ) {
    super(`the ${door} port ${port} on ${address} is in use by another process (EADDRINUSE)`);
  }
}

/** EADDRINUSE as a PortInUseError naming the door; any other error as it is. */
function portError(err: unknown, door: Door, address: string, port: number): unknown {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE' ? new PortInUseError(door, address, port) : err;
}

function tlsMode(door: ServerTls | undefined): 'off' | 'tls' | 'mutual' {
  return door === undefined ? 'off' : door.mutual ? 'mutual' : 'tls';
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

async function closeHttp(server: http.Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Keep-alive connections from probes and scrapers would hold close() open.
  server.closeAllConnections();
  await closed;
}
