/**
 * Wires the pieces into one server: the model manager, the gRPC
 * GRPCInferenceService and grpc.health.v1.Health on one port, and the HTTP
 * health endpoints on another. The process is live as soon as the ports are
 * bound; it turns ready once every model present at start-up is ready.
 */
import http from 'node:http';
import { once } from 'node:events';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import type { Logger } from 'pino';
import { GRPCInferenceService } from '../generated/grpc_service_pb.js';
import { ModelManager } from '../repository/model-manager.js';
import { serviceDefinitionFor } from './grpc-service-definition.js';
import { inferHandlers } from './handlers/infer-handlers.js';
import { repositoryHandlers } from './handlers/repository-handlers.js';
import { serverHandlers } from './handlers/server-handlers.js';
import { unimplementedHandlers } from './handlers/unimplemented-handlers.js';
import { createHealthHttpServer } from './http-endpoints.js';
import { InferenceRunner } from './inference-runner.js';

export interface ServerOptions {
  readonly modelRepository: string;
  readonly host: string;
  readonly grpcPort: number;
  /** 0 disables the HTTP health endpoints. */
  readonly httpPort: number;
  readonly intraOpThreads: number;
  readonly modelLoadConcurrency: number;
  readonly faultInjection: boolean;
  readonly serverName: string;
  readonly serverVersion: string;
  readonly logger: Logger;
}

export interface BoundPorts {
  readonly grpc: number;
  readonly http: number | undefined;
}

export class HotpathServer {
  readonly models: ModelManager;
  private readonly grpc = new Server({
    // Tensors can be large; Triton clients send up to the protocol's limits.
    'grpc.max_receive_message_length': 256 * 1024 * 1024,
    'grpc.max_send_message_length': 256 * 1024 * 1024,
  });
  private readonly health = new HealthImplementation({ '': 'NOT_SERVING' });
  private http: http.Server | undefined;
  private startupDone = false;
  private stopping = false;
  private readonly log: Logger;

  constructor(private readonly options: ServerOptions) {
    this.log = options.logger.child({ component: 'server' });
    this.models = new ModelManager({
      repository: options.modelRepository,
      intraOpThreads: options.intraOpThreads,
      faultInjection: options.faultInjection,
      loadConcurrency: options.modelLoadConcurrency,
      logger: options.logger,
      onStateChange: () => this.refreshHealth(),
    });
    const runner = new InferenceRunner({
      models: this.models,
      faultInjection: options.faultInjection,
      logger: options.logger,
    });
    const identity = { name: options.serverName, version: options.serverVersion, isReady: () => this.isReady() };
    this.grpc.addService(serviceDefinitionFor(GRPCInferenceService), {
      ...serverHandlers(this.models, identity),
      ...inferHandlers(runner),
      ...repositoryHandlers(this.models),
      ...unimplementedHandlers(),
    });
    this.health.addToServer(this.grpc);
  }

  isReady(): boolean {
    return this.startupDone && !this.stopping && this.models.allStartupModelsReady();
  }

  /** Binds the ports (live from here), then loads the repository (ready after). */
  async start(): Promise<BoundPorts> {
    const grpcPort = await new Promise<number>((resolve, reject) => {
      this.grpc.bindAsync(
        `${this.options.host}:${this.options.grpcPort}`,
        ServerCredentials.createInsecure(),
        (err, port) => (err ? reject(err) : resolve(port)),
      );
    });
    let httpPort: number | undefined;
    if (this.options.httpPort >= 0) {
      this.http = createHealthHttpServer({ isLive: () => !this.stopping, isReady: () => this.isReady() });
      this.http.listen(this.options.httpPort, this.options.host);
      await once(this.http, 'listening');
      const address = this.http.address();
      httpPort = typeof address === 'object' && address !== null ? address.port : undefined;
    }
    this.log.info({ grpc_port: grpcPort, http_port: httpPort }, 'listening');
    await this.models.loadAll();
    this.startupDone = true;
    this.refreshHealth();
    this.log.info({ ready: this.isReady() }, 'model repository loaded');
    return { grpc: grpcPort, http: httpPort };
  }

  /** Keeps grpc.health.v1 in step with ServerReady. */
  refreshHealth(): void {
    this.health.setStatus('', this.isReady() ? 'SERVING' : 'NOT_SERVING');
  }

  /** Stops taking calls, lets in-flight ones finish, unloads every model. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.refreshHealth();
    await new Promise<void>((resolve) => this.grpc.tryShutdown(() => resolve()));
    await this.models.close();
    if (this.http) await new Promise<void>((resolve) => this.http?.close(() => resolve()));
    this.log.info('stopped');
  }
}
