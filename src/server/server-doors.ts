/**
 * The server's doors: the gRPC port (GRPCInferenceService and
 * grpc.health.v1, behind the admission interceptor and our own listener),
 * the HTTP port (the REST endpoints and the health endpoints) and the
 * metrics port. Its one job is to build them, bind them, reload their
 * certificates and close them; what a request runs is the request path's
 * (inference/request-path.ts), and when the doors open and close is the
 * phase machine's (hotpath-server.ts).
 *
 * Ownership: this object owns the grpc-js Server, the gRPC listener, the
 * HTTP servers, the connection gate and each door's TLS state. Main thread
 * only.
 */
import http from 'node:http';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Server, ServerCredentials, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { HealthImplementation } from 'grpc-health-check';
import type { Logger } from 'pino';
import type { ModelManager } from '../repository/model-manager.js';
import { createMetricsHttpServer } from '../observability/metrics-http.js';
import type { ServerMetrics } from '../observability/metrics.js';
import { RefusalLog } from '../observability/refusal-log.js';
import { ServerTls, TlsFileError, type CertificateSummary, type TlsDoor } from '../security/tls.js';
import { applyHttpConnectionLimits, grpcConnectionOptions } from '../security/connection-limits.js';
import type { TenantLimiter } from '../security/tenant-limits.js';
import { connectionCaps, DOOR_LIMIT_DEFAULTS } from '../security/door-limits.js';
import { doorGates, logAccess, type CallGate, type Caller } from '../security/caller.js';
import type { RouteService } from '../inference/routing/route-service.js';
import type { RoutedInference } from '../inference/routing/routed-inference.js';
import { inferenceServiceDefinition } from './grpc-service-definition.js';
import { inferHandlers } from './handlers/infer-handlers.js';
import { repositoryHandlers } from './handlers/repository-handlers.js';
import { serverHandlers } from './handlers/server-handlers.js';
import { unimplementedHandlers } from './handlers/unimplemented-handlers.js';
import type { HealthProbes } from './http/health-endpoints.js';
import { createRestHttpServer } from './http/rest-server.js';
import { BodyBudget, doorThreadSlot, MAIN_THREAD_SLOT, type BodyBudgetShare } from './http/body-budget.js';
import { ConnectionGate } from './connection-gate.js';
import { GrpcListener } from './grpc-listener.js';
import { grpcBodyIdleInterceptors } from './grpc-body-idle.js';
import { GrpcAdmission } from './admission.js';
import type { ServerOptions } from './server-options.js';
import { DoorAcceptor } from './door-acceptor.js';
import { FrontDoorThreads, frontDoorThreadCount } from './door-threads.js';
import type { DoorCatalog } from '../inference/door-catalog.js';
import type { DeviceFaultReport } from '../inference/door-inference.js';
import type { DoorThreadSettings } from './door-thread-settings.js';

/** A door: the gRPC port, the HTTP port, the metrics port. */
export type Door = 'grpc' | 'http' | 'metrics';

/** The ports bound; undefined for a front door that is off (`--allow-*=false`, port -1). */
export interface BoundPorts {
  readonly grpc: number | undefined;
  readonly http: number | undefined;
  readonly metrics: number | undefined;
}

/** Each door's certificates; undefined for a plaintext door or one that is off. */
export interface DoorTls {
  readonly grpc: ServerTls | undefined;
  readonly http: ServerTls | undefined;
}

/**
 * Reads each door's certificate files. The server calls it first, so a
 * certificate file that cannot be used stops start-up before anything is
 * allocated (TlsFileError).
 */
export function doorTls(options: ServerOptions): DoorTls {
  return {
    grpc: options.grpcTls === undefined || !options.allowGrpc ? undefined : new ServerTls('grpc', options.grpcTls),
    http: options.httpTls === undefined || !options.allowHttp ? undefined : new ServerTls('http', options.httpTls),
  };
}

/** What the doors serve, built by the server before them. */
export interface DoorParts {
  readonly models: ModelManager;
  readonly metrics: ServerMetrics;
  /** The request path both doors' inference calls (routes in front). */
  readonly inference: RoutedInference;
  readonly routes: () => RouteService | undefined;
  /** The tenants' limits, applied by the gRPC admission; undefined: none. */
  readonly limits: TenantLimiter | undefined;
  /** The grpc.health.v1 service registered on the gRPC port. */
  readonly grpcHealth: HealthImplementation;
  /** The HTTP health endpoints' answers. */
  readonly probes: HealthProbes;
  /** GET /v2/models/{m}/drift. */
  readonly driftReport: (name: string, version: string, caller: Caller) => Promise<unknown>;
  /** What front-door threads serve themselves (inference/door-catalog.ts); undefined: they forward every call. */
  readonly doorCatalog?: (doors: number) => DoorCatalog;
  /** Door thread `index` exited (its requests inside the versions' gates no longer count). */
  readonly onDoorExit?: (index: number) => void;
  /** A door thread's batch failed on the device: the version moves to CPU (VersionExecutor.fallBack). */
  readonly onDoorDeviceFault?: (report: DeviceFaultReport) => void;
}

export class ServerDoors {
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
  private readonly httpServers: http.Server[] = [];
  /** `--front-door-threads N` > 1 (listenWithDoorThreads): the threads, the acceptor, the private sockets' folder. */
  private doorThreads: { readonly threads: FrontDoorThreads; readonly acceptor: DoorAcceptor; readonly internal: net.Server[]; readonly dir: string } | undefined;
  private readonly log: Logger;

  constructor(
    private readonly options: ServerOptions,
    /** Each door's certificates, reloaded by `reloadCertificates` (SIGHUP). */
    private readonly tls: DoorTls,
    private readonly parts: DoorParts,
  ) {
    this.log = options.logger.child({ component: 'server' });
    this.grpc = new Server({
      // One request-size limit for both front doors (--max-message-size).
      'grpc.max_receive_message_length': options.maxMessageBytes,
      // Outputs can be large; Triton's clients accept up to about 2 GiB.
      'grpc.max_send_message_length': 256 * 1024 * 1024,
      // No channelz: hotpath serves no channelz service, so its per-call
      // trackers (closures, listeners, timestamps on every message) bought nothing.
      'grpc.enable_channelz': 0,
      // Streams per connection, idle and age limits, keepalive (--grpc-max-concurrent-streams...).
      ...grpcConnectionOptions(options.connections),
      // Admission runs before grpc-js reads a call's message; bound late (the gate and limits are built below).
      // The body-idle watch comes first: it must be given grpc-js's base call (server/grpc-body-idle.ts).
      interceptors: [
        ...grpcBodyIdleInterceptors(options.doors?.bodyIdleTimeoutMs ?? DOOR_LIMIT_DEFAULTS.bodyIdleTimeoutMs, options.logger),
        (descriptor, call) => this.grpcAdmission.interceptor(descriptor, call),
      ],
    });
    this.connectionGate = new ConnectionGate(
      connectionCaps(options.doors ?? {}),
      new RefusalLog(options.logger.child({ component: 'connections' })),
    );
    const identity = { name: options.serverName, version: options.serverVersion, isReady: parts.probes.isReady };
    // One implementation for both doors: the REST endpoints run these RPCs' operations (see http/rest-handlers.ts).
    this.protocol = {
      ...serverHandlers(parts.models, identity, parts.routes),
      ...inferHandlers(parts.inference),
      ...repositoryHandlers(parts.models, parts.routes),
      ...unimplementedHandlers(),
    };
    // Every gRPC call passes its door's gate first (server/admission.ts), grpc.health.v1 too (Triton's 'health' group).
    const gates = doorGates(options);
    logAccess(this.log, options, gates);
    this.httpGate = gates.http;
    this.grpcAdmission = new GrpcAdmission({
      gate: gates.grpc,
      refusals: new RefusalLog(options.logger.child({ component: 'auth' })),
      limits: parts.limits,
    });
    const definition = inferenceServiceDefinition();
    this.grpcAdmission.register(definition);
    this.grpc.addService(definition, this.protocol);
    parts.grpcHealth.addToServer({
      addService: (service, implementation) => {
        this.grpcAdmission.register(service, (method) => `Health${method}`);
        this.grpc.addService(service, implementation);
      },
    } as Pick<Server, 'addService'> as Server);
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

  /** Binds the ports and logs them. */
  async listen(): Promise<BoundPorts> {
    const threads = frontDoorThreadCount(this.options.frontDoorThreads ?? 1);
    if (threads > 1) return this.logPorts(await this.listenWithDoorThreads(threads));
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
    const httpPort = await this.listenHttp(
      this.options.allowHttp ? this.options.httpPort : -1,
      () => {
        const server = this.restServer(this.tls.http);
        this.connectionGate.guard(server, 'http');
        return server;
      },
      this.options.httpAddress ?? this.options.host,
      'http',
    );
    const metricsPort = await this.listenMetrics();
    return this.logPorts({ grpc: grpcPort, http: httpPort, metrics: metricsPort });
  }

  private logPorts(ports: BoundPorts): BoundPorts {
    this.log.info(
      {
        grpc_port: ports.grpc,
        http_port: ports.http,
        metrics_port: ports.metrics,
        grpc_tls: tlsMode(this.tls.grpc),
        http_tls: tlsMode(this.tls.http),
        max_connections: this.connectionGate.caps.total,
        max_connections_per_peer: this.connectionGate.caps.perPeer,
        front_door_threads: this.doorThreads?.threads.count ?? 1,
      },
      'listening',
    );
    for (const door of [this.tls.grpc, this.tls.http]) if (door !== undefined) this.logCertificate(door.door, door.certificate, 'serving certificate');
    return ports;
  }

  /**
   * `--front-door-threads N` (N > 1): the main thread binds the public gRPC
   * and HTTP ports with the acceptor (door-acceptor.ts), which hands each
   * connection to a door thread; the door threads serve inference on the
   * door catalog's versions themselves and forward every other call to this
   * thread's own gRPC server and REST server, which listen only on unix
   * sockets in a private folder (mode 0700). Connections are counted once,
   * at the acceptor; the private sockets are not gated. The metrics port is
   * bound as with one thread.
   */
  private async listenWithDoorThreads(count: number): Promise<BoundPorts> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hotpath-doors-'));
    const internal: net.Server[] = [];
    const listenPrivate = async (server: net.Server, file: string) => {
      internal.push(server);
      server.listen(file);
      await once(server, 'listening');
      return file;
    };
    const injector = this.grpc.createConnectionInjector(ServerCredentials.createInsecure());
    const grpcForward = this.options.allowGrpc
      ? await listenPrivate(
          // Calls from door threads, already admitted there, admitted here again by the same interceptor.
          net.createServer((socket) => injector.injectConnection(socket)),
          path.join(dir, 'grpc.sock'),
        )
      : undefined;
    let httpForward: string | undefined;
    // --http-body-budget bounds the bodies the main thread and every door thread hold, together: one slot each.
    const bodyBudgetMemory = BodyBudget.newMemory(1 + count);
    const doorBudgetShare = (index: number): BodyBudgetShare => ({ memory: bodyBudgetMemory, slot: doorThreadSlot(index) });
    if (this.options.allowHttp && this.options.httpPort >= 0) {
      // The REST server without TLS (the door threads terminate it), reached only through the private socket.
      const rest = this.restServer(undefined, { memory: bodyBudgetMemory, slot: MAIN_THREAD_SLOT });
      this.httpServers.push(rest);
      httpForward = await listenPrivate(rest, path.join(dir, 'http.sock'));
    }
    const filter = this.idleStreamFilter() !== undefined;
    const doors = this.options.doors ?? {};
    const settingsOf = (index: number): DoorThreadSettings => ({
      index,
      logLevel: this.options.logger.level,
      maxMessageBytes: this.options.maxMessageBytes,
      accessLogSampleRate: this.options.accessLogSampleRate,
      connections: this.options.connections,
      headerTimeoutMs: doors.headerTimeoutMs ?? DOOR_LIMIT_DEFAULTS.headerTimeoutMs,
      bodyIdleTimeoutMs: doors.bodyIdleTimeoutMs ?? DOOR_LIMIT_DEFAULTS.bodyIdleTimeoutMs,
      httpBodyBudgetBytes: doors.httpBodyBudgetBytes,
      httpBodyBudgetMemory: doorBudgetShare(index),
      httpJsonQueue: doors.httpJsonQueue,
      grpcIgnoreIdleStreamFrames: filter,
      // One count per tenant for the whole process (the limiter is built shared when door threads admit).
      tenantLimits: this.parts.limits?.share(),
      access: {
        requireApiKey: this.options.requireApiKey,
        apiKeys: (this.options.apiKeys ?? []).map((key) => ({ tenant: key.tenant, sha256: new Uint8Array(key.sha256) })),
        adminTenant: this.options.adminTenant,
        grpcRestrictedProtocol: this.options.grpcRestrictedProtocol ?? [],
        httpRestrictedApi: this.options.httpRestrictedApi ?? [],
      },
      grpc: grpcForward === undefined ? undefined : { tls: this.options.grpcTls, forwardPath: grpcForward },
      http: httpForward === undefined ? undefined : { tls: this.options.httpTls, forwardPath: httpForward },
    });
    const threads = new FrontDoorThreads(count, settingsOf, this.options.logger, {
      catalog: this.parts.doorCatalog,
      onExit: (index) => {
        this.parts.onDoorExit?.(index);
        // Leases the dead thread held are never released: their bytes go back to the budget here. FrontDoorThreads
        // calls this before it starts a replacement, so the replacement starts its slot from 0.
        BodyBudget.forgetThread(doorBudgetShare(index));
      },
      onDeviceFault: this.parts.onDoorDeviceFault,
    });
    const acceptor = new DoorAcceptor(this.connectionGate, threads.handOff, this.options.logger);
    this.doorThreads = { threads, acceptor, internal, dir };
    this.parts.metrics.setDoorThreadSource(() => threads.figures(), () => threads.exits);
    const bind = async (door: 'grpc' | 'http', host: string, port: number) =>
      acceptor.listen(door, host, port).catch((err: unknown) => {
        throw portError(err, door, host, port);
      });
    try {
      const grpcPort = grpcForward === undefined ? undefined : await bind('grpc', this.options.grpcAddress ?? this.options.host, this.options.grpcPort);
      const httpPort = httpForward === undefined ? undefined : await bind('http', this.options.httpAddress ?? this.options.host, this.options.httpPort);
      await threads.start();
      const metricsPort = await this.listenMetrics();
      return { grpc: grpcPort, http: httpPort, metrics: metricsPort };
    } catch (err) {
      // Nothing is served yet: the threads and the private sockets go, and the bind's error is the start-up's.
      acceptor.stopAccepting();
      await this.closeDoorThreads();
      throw err;
    }
  }

  /** The door catalog may have changed: the front-door threads get it now (nothing without them). */
  publishDoorCatalog(): void {
    this.doorThreads?.threads.publish();
  }

  /** The door threads, their private sockets and folder (after the drain, or a failed start). */
  private async closeDoorThreads(): Promise<void> {
    const doors = this.doorThreads;
    if (doors === undefined) return;
    this.doorThreads = undefined;
    await doors.threads.close();
    for (const server of doors.internal) if (server.listening) server.close();
    rmSync(doors.dir, { recursive: true, force: true });
  }

  /** The REST server (rest-server.ts); `tls` undefined: plain HTTP. */
  private restServer(tls: ServerTls | undefined, bodyBudgetMemory?: BodyBudgetShare): http.Server {
    const server = createRestHttpServer({
      tls: tls?.httpsOptions(),
      health: this.parts.probes,
      runner: this.parts.inference,
      protocol: this.protocol,
      gate: this.httpGate,
      maxMessageBytes: this.options.maxMessageBytes,
      logger: this.options.logger,
      connections: this.options.connections,
      doors: this.options.doors,
      bodyBudgetMemory,
      driftReport: this.parts.driftReport,
    });
    tls?.follow(server);
    return server;
  }

  private listenMetrics(): Promise<number | undefined> {
    return this.listenHttp(
      this.options.allowMetrics ? this.options.metricsPort : -1,
      () => {
        const server = createMetricsHttpServer(this.parts.metrics);
        applyHttpConnectionLimits(server, this.options.connections);
        this.connectionGate.guard(server, 'metrics');
        return server;
      },
      this.options.metricsAddress ?? this.options.host,
      'metrics',
    );
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
    // Each door thread reads the same files again (a file that failed here fails there too, and it keeps its certificates).
    if (reloaded.length > 0) this.doorThreads?.threads.reloadCertificates();
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

  /** The drain's step 2 on the gRPC port: new connections are refused. */
  stopAccepting(): void {
    this.grpcListener?.stopAccepting();
    this.doorThreads?.acceptor.stopAccepting();
  }

  /**
   * Resolves once every open gRPC call finished (grpc-js stops accepting calls
   * at once). With door threads: first every door thread finishes its open
   * calls (each forwarded here, so this server keeps serving them), then this
   * server shuts down.
   */
  async callsFinished(): Promise<void> {
    await this.doorThreads?.threads.drain();
    await new Promise<void>((resolve) => this.grpc.tryShutdown(() => resolve()));
  }

  /** Cuts the gRPC calls still open (the drain timed out). */
  cutCalls(): void {
    this.doorThreads?.threads.cut();
    this.grpc.forceShutdown();
  }

  /** Closes the HTTP and metrics ports, keep-alive connections included. */
  async closeHttp(): Promise<void> {
    await this.closeDoorThreads();
    await Promise.all(this.httpServers.map((server) => closeHttp(server)));
  }
}

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

async function closeHttp(server: http.Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Keep-alive connections from probes and scrapers would hold close() open.
  server.closeAllConnections();
  await closed;
}
