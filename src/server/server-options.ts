/**
 * The options a HotpathServer is built from (filled by the options table,
 * cli/serve-options, for the CLI and createServer alike). Its own file so that
 * the parts of the server (the phase machine, the doors, health) read one
 * definition without importing each other.
 */
import type { Logger } from 'pino';
import type { PatrolSettings } from '../patrol/patrol-options.js';
import type { DeviceLedgerOptions } from '../tenancy/server-memory.js';
import type { TenantQuota } from '../tenancy/tenant-config.js';
import type { ModelControlMode } from '../repository/model-control.js';
import type { LogFormat } from '../observability/logger.js';
import type { TlsFiles } from '../security/tls.js';
import type { ConnectionLimits } from '../security/connection-limits.js';
import type { TenantLimitSpec } from '../security/tenant-limits.js';
import type { DoorLimits } from '../security/door-limits.js';
import type { AccessSettings } from '../security/caller.js';
import type { ArchiveSettings } from '../datachecks/archive/payload-archive.js';

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
  /**
   * `--front-door-threads N|auto` (server/door-threads.ts): threads taking the
   * gRPC and HTTP connections; 1 or absent: the main thread serves them.
   */
  readonly frontDoorThreads?: number | 'auto' | undefined;
  readonly serverVersion: string;
  readonly logger: Logger;
}
