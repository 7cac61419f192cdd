#!/usr/bin/env node
/**
 * The `hotpath` command line.
 *
 *   hotpath serve --model-repository DIR [--grpc-port 8001] [--http-port 8000]
 *
 * Triton's default ports are the defaults here, and Triton's flags are taken
 * as Triton spells them (`--model-store`, `--model-control-mode`,
 * `--allow-http=false`...), so a tritonserver command line works as it is.
 * Validation of the flags lives in `parseServeOptions`, with one message
 * format per flag (common/flag-values.ts).
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import type { LevelWithSilent } from 'pino';
import { createRootLogger, type LogFormat } from './observability/logger.js';
import {
  DEFAULT_TENANT,
  mergeTenants,
  parseByteSize,
  parseTenantFlag,
  readTenantsFile,
  TenantConfigError,
  type TenantKey,
  type TenantLimitsConfig,
  type TenantQuota,
} from './tenancy/tenant-config.js';
import { HotpathServer, type PatrolSettings } from './server/hotpath-server.js';
import type { DeviceLedgerOptions } from './tenancy/server-memory.js';
import { defaultMemoryCapacity } from './tenancy/memory-limit.js';
import { ALL_MODELS, MODEL_CONTROL_MODES, type ModelControlMode } from './repository/model-control.js';
import { modelNameProblem } from './repository/model-directory.js';
import { CONNECTION_LIMIT_DEFAULTS, MAX_TIMER_MS, type ConnectionLimits } from './security/connection-limits.js';
import { readTlsMaterial, TlsFileError, tlsFlag, type TlsDoor, type TlsFiles } from './security/tls.js';
import { AccessSettingsError, doorGates } from './security/caller.js';
import { installShutdown } from './cli/shutdown.js';
import { LIFECYCLE_BOOLEAN_FLAGS, LIFECYCLE_USAGE, lifecycleFlagOptions, lifecycleOptions, startMemoryTrimmer, type LifecycleOptions } from './cli/lifecycle-options.js';
import { RestrictedApiSpecError } from './security/restricted-api.js';
import { readRoutesFile, RoutesFileError } from './routing/routes-file.js';
import { ARCHIVE_USAGE, archiveFlagOptions, archiveSettings } from './datachecks/archive/archive-options.js';
import { DOOR_BOOLEAN_FLAGS, DOOR_LIMITS_USAGE, doorLimitFlagOptions, doorLimits } from './security/door-limit-options.js';
import type { DoorLimits } from './security/door-limits.js';
import type { ArchiveSettings } from './datachecks/archive/payload-archive.js';
import { CACHE_USAGE, cacheFlagOptions, cacheSizeBytes } from './datachecks/cache/cache-options.js';
import {
  aliasedFlag,
  booleanFlag,
  byteSizeFlag,
  choiceFlag,
  integerFlag,
  numberFlag,
  UsageError,
  withBooleanValues,
} from './common/flag-values.js';

const USAGE = `usage: hotpath serve --model-repository DIR [options]
       hotpath archive ls|cat DIR        (hotpath archive --help)
       hotpath replay --archive DIR --url HOST:PORT [options]   (hotpath replay --help)
       hotpath drift-reference --model-dir DIR --archive DIR|--csv FILE   (hotpath drift-reference --help)
       hotpath --version | --help

Boolean flags take --flag, --flag=true|false or --flag true|false. Sizes take
4096, 512MiB / 512Mi, 2GiB / 2Gi, 100MB. [T] marks Triton's name for a flag.

options:
  --model-repository DIR       Triton-layout model repository (required)
  --model-store DIR            [T] the same as --model-repository
  --host HOST                  address to bind (default 0.0.0.0)
  --grpc-port N                KServe V2 / Triton gRPC port (default 8001; 0 = any free port)
  --http-port N                HTTP port (default 8000; 0 = any free port; -1 = off)
  --metrics-port N             Prometheus GET /metrics port (default 8002; 0 = any free port; -1 = off)
  --metrics-address ADDR       [T] address the metrics port binds (default: --host); 127.0.0.1 keeps
                               the metrics, which name every model and tenant, off the network
  --metrics-tenant-labels BOOL no metric names a tenant when false: model series carry an empty
                               tenant label, per-tenant series are not exported (default true)
  --allow-grpc BOOL            [T] serve gRPC (default true)
  --allow-http BOOL            [T] serve HTTP (default true)
  --allow-metrics BOOL         [T] serve metrics (default true)
  --max-message-size SIZE      largest request body, gRPC and HTTP alike (default 64MiB, at most 2GiB)
  --grpc-use-ssl BOOL          [T] TLS on the gRPC port (needs --grpc-server-cert and --grpc-server-key)
  --grpc-use-ssl-mutual BOOL   [T] mutual TLS on the gRPC port: clients need a certificate signed by
                               --grpc-root-cert (implies --grpc-use-ssl)
  --grpc-server-cert FILE      [T] PEM certificate chain of the gRPC port
  --grpc-server-key FILE       [T] PEM private key of that certificate (unencrypted)
  --grpc-root-cert FILE        [T] PEM CA certificates that sign client certificates (mutual TLS)
  --http-use-ssl BOOL          HTTPS on the HTTP port (needs --http-server-cert and --http-server-key)
  --http-use-ssl-mutual BOOL   mutual TLS on the HTTP port (needs --http-root-cert; implies --http-use-ssl)
  --http-server-cert FILE      PEM certificate chain of the HTTP port
  --http-server-key FILE       PEM private key of that certificate (unencrypted)
  --http-root-cert FILE        PEM CA certificates that sign client certificates (mutual TLS)
                               SIGHUP reloads every certificate file without dropping connections
  --grpc-max-concurrent-streams N
                               calls one gRPC connection may have open at once (default 1000); a
                               client queues the calls above it
  --grpc-max-connection-idle MS
                               GOAWAY to a gRPC connection without calls for MS ms (default 0 = never)
  --grpc-max-connection-age MS [T] GOAWAY to a gRPC connection MS ms old (default 0 = never)
  --grpc-max-connection-age-grace MS
                               [T] then its open calls get MS ms more before it is closed (default 0 =
                               as long as they need)
  --grpc-keepalive-time MS     [T] ping a gRPC connection MS ms after the last ping (default 7200000;
                               0 = never)
  --grpc-keepalive-timeout MS  [T] close it when the ping is not answered in MS ms (default 20000)
  --http-idle-timeout MS       close a kept-alive HTTP connection idle for MS ms (default 65000)
  --http-request-timeout MS    an HTTP request's headers and body must arrive within MS ms (default
                               300000; 0 = no limit)
  --http-max-requests-per-socket N
                               requests one HTTP connection carries before it is closed (default 0 =
                               no limit)
${DOOR_LIMITS_USAGE}  --model-control-mode MODE    [T] none|explicit|poll; without it every model loads at start-up and
                               load/unload are allowed (Triton's default is none, which refuses them)
  --load-model NAME            [T] explicit mode: a model to load at start-up (repeatable; '*' = all)
  --repository-poll-secs S     [T] poll mode: seconds between repository scans (default 15)
  --disable-auto-complete-config
                               [T] do not complete configs from the ONNX model: a config must name
                               every input and output, with data_type and dims (default: complete)
  --strict-model-config BOOL   [T] true = --disable-auto-complete-config (default false)
  --intra-op-threads N         onnxruntime intra-op threads per worker (default 1)
  --model-load-concurrency N   models loaded and warmed at once (default 2)
  --no-default-warmup          skip the default warm-up of models without model_warmup
${LIFECYCLE_USAGE}  --access-log-sample-rate R   fraction of successful requests access-logged, 0..1 (default 0.01);
                               failed requests are always logged
  --drain-delay S              on SIGTERM/SIGINT, seconds between turning unready and
                               refusing new calls (default 5)
  --drain-timeout S            seconds in-flight requests get to finish after that (default 30)
  --exit-timeout-secs S        [T] the same as --drain-timeout
  --memory-capacity SIZE       memory arena capacity for request buffers and model footprints,
                               all tenants together (default: half the machine's memory)
  --tenant NAME:QUOTA          a tenant and its hard memory quota, e.g. ads:512MiB (repeatable);
                               models pick theirs with the config parameter 'tenant'
  --tenants-file FILE          tenants as JSON: {"tenants": {"NAME": "QUOTA", ...}} or, with a
                               device quota, {"tenants": {"NAME": {"quota": Q, "device_quota": Q}}};
                               an entry may also list "keys": ["sha256:<hex>"] and the limits
                               "rate", "burst", "max_inflight" (README, Security)
  --require-api-key BOOL       every call but the health probes carries 'authorization: Bearer KEY'
                               of a tenant in --tenants-file, and sees only that tenant's models
                               (default false)
  --admin-tenant NAME          with --require-api-key: the tenant whose keys see every model and may
                               load and unload (nobody may without it)
  --grpc-restricted-protocol GROUPS:KEY=VALUE
                               [T] gRPC calls of GROUPS (comma-separated: health, metadata, inference,
                               shared-memory, model-config, model-repository, statistics, trace,
                               logging) need the header triton-grpc-protocol-KEY: VALUE (repeatable)
  --http-restricted-api GROUPS:KEY=VALUE
                               [T] the same on HTTP, with the header KEY: VALUE (repeatable)
  --routes FILE                routes (YAML; README, Rollouts): virtual model names with canary, A/B,
                               shadow, circuit breakers and rollback. Checked against the loaded models
                               at start-up (an invalid file exits 2); reloaded when it changes and on
                               SIGHUP (an invalid file is logged and the current routes stay)
  --shadow-queue-size N        shadow requests waiting, all routes together (default 256); beyond it
                               they are dropped and counted
  --shadow-concurrency N       shadow requests running at once (default 2)
${ARCHIVE_USAGE}${CACHE_USAGE}  --device N                   the CUDA device for the device ledger and the native executor (default 0)
  --device-memory-capacity SIZE
                               device ledger capacity, all tenants together (default: the device's memory)
  --tenant-device NAME:QUOTA   a tenant's hard quota on device memory, e.g. ads:4GiB (repeatable)
  --device-probe-interval S    after a transient device error, how often to try moving a model
                               back from CPU to the device (default 5)
  --device-ledger host         test hook (needs --enable-fault-injection): back the device ledger
                               with host memory, so device quotas can be tested without a GPU
  --log-level LEVEL            trace|debug|info|warn|error|fatal|silent (default info)
  --log-format FORMAT          json|pretty (default json); [T] default and ISO8601 mean pretty
  --enable-fault-injection     honour test-only fault hooks (never in production)
  --patrol-interval S          leak patrol sampling interval in seconds (default 30; 0 = off)
  --patrol-leak-threshold SIZE a worker generation leaking more restarts its pool (default 500MiB)
  --patrol-growth-rate SIZE    sustained growth per second over the window that restarts it (default 1MiB)
  --patrol-window K            samples in the growth window (default 5)
  --patrol-max-restarts N      restarts before a model whose leak comes back is marked degraded (default 3)
  --version                    print the version and exit
  --help, -h                   print this and exit

signals: SIGTERM or SIGINT drains and exits 0 (1 when the drain timed out or a worker thread is stuck,
         always within --drain-delay + --drain-timeout + 4 s); a second signal exits at once (code 1).
         SIGHUP reloads the TLS certificate files and the routes file (a file that fails its
         checks is logged, and the current certificates or routes stay).
`;

export interface ServeOptions extends LifecycleOptions {
  modelRepository: string;
  host: string;
  grpcPort: number;
  httpPort: number;
  metricsPort: number;
  intraOpThreads: number;
  modelLoadConcurrency: number;
  defaultWarmup: boolean;
  accessLogSampleRate: number;
  drainDelayMs: number;
  drainTimeoutMs: number;
  logLevel: LevelWithSilent;
  logFormat: LogFormat;
  faultInjection: boolean;
  memoryCapacityBytes: number;
  tenants: TenantQuota[];
  device: DeviceLedgerOptions;
  deviceProbeIntervalMs: number;
  /** Undefined when --patrol-interval is 0. */
  patrol: PatrolSettings | undefined;
  /** `--max-message-size`: gRPC's receive limit and the HTTP body limit. */
  maxMessageBytes: number;
  allowGrpc: boolean;
  allowHttp: boolean;
  allowMetrics: boolean;
  /** 'default' when no --model-control-mode is given (see repository/model-control.ts). */
  modelControlMode: ModelControlMode;
  /** `--load-model` names, in order; '*' = every model. */
  startupModels: string[];
  repositoryPollSecs: number;
  autoCompleteConfig: boolean;
  /** `--metrics-address`: where the metrics port binds; undefined: `host`. */
  metricsAddress: string | undefined;
  /** Streams per gRPC connection, idle and request timeouts (`--grpc-max-concurrent-streams`...); absent fields take their defaults. */
  connections: ConnectionLimits;
  /** `rate`, `burst` and `max_inflight` of the tenants file, per tenant. */
  tenantLimits: TenantLimitsConfig[];
  /** `--grpc-use-ssl...`: the gRPC port's TLS files; undefined: plaintext. */
  grpcTls: TlsFiles | undefined;
  /** `--http-use-ssl...`: the HTTP port's TLS files; undefined: plaintext. */
  httpTls: TlsFiles | undefined;
  /** The tenants file's `keys` (SHA-256 digests), per tenant. */
  apiKeys: TenantKey[];
  /** `--require-api-key`: calls carry a tenant's key and see only its models (security/caller.ts). */
  requireApiKey: boolean;
  /** `--admin-tenant`: the tenant whose keys see every model and may load and unload. */
  adminTenant: string | undefined;
  /** `--grpc-restricted-protocol` values, Triton's `<group>[,<group>...]:<key>=<value>`. */
  grpcRestrictedProtocol: string[];
  /** `--http-restricted-api` values. */
  httpRestrictedApi: string[];
  /** `--routes`: the routes file (absolute); undefined: no routes. */
  routesFile: string | undefined;
  /** `--shadow-queue-size`: shadow requests waiting, at most. */
  shadowQueueSize: number;
  /** `--shadow-concurrency`: shadow requests running at once, at most. */
  shadowConcurrency: number;
  /** `--archive DIR` and its flags: the payload archive; undefined: off. */
  archive: ArchiveSettings | undefined;
  /** `--cache-config local,size=BYTES`: the response cache's size; undefined: no cache. */
  responseCacheBytes: number | undefined;
  /** `--http-body-budget`, `--max-connections`...: the doors' process-wide limits (security/door-limits.ts). */
  doors: DoorLimits;
  /** `--metrics-tenant-labels`: false, and no metric names a tenant. */
  metricsTenantLabels: boolean;
}

const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
/** Triton's `--log-format` values are kinds of pretty: one readable line a record. */
const LOG_FORMATS = ['json', 'pretty', 'default', 'ISO8601'] as const;

export const DEFAULT_MAX_MESSAGE_SIZE = '64MiB';
/** grpc-js takes lengths up to 2^31 - 1; Triton's clients send up to about 2 GiB. */
const MAX_MESSAGE_BYTES_LIMIT = 2 ** 31 - 1;

/** Flags that take a boolean; see withBooleanValues for the forms they accept. */
const BOOLEAN_FLAGS = new Set([
  'no-default-warmup',
  'enable-fault-injection',
  'disable-auto-complete-config',
  'strict-model-config',
  'allow-grpc',
  'allow-http',
  'allow-metrics',
  'metrics-tenant-labels',
  'grpc-use-ssl',
  'grpc-use-ssl-mutual',
  'http-use-ssl',
  'http-use-ssl-mutual',
  'require-api-key',
  ...DOOR_BOOLEAN_FLAGS,
  ...LIFECYCLE_BOOLEAN_FLAGS,
]);

export function parseServeOptions(argv: string[]): ServeOptions {
  const { values } = parseArgs({
    args: withBooleanValues(argv, BOOLEAN_FLAGS),
    strict: true,
    options: {
      'model-repository': { type: 'string' },
      'model-store': { type: 'string' },
      host: { type: 'string', default: '0.0.0.0' },
      'grpc-port': { type: 'string', default: '8001' },
      'http-port': { type: 'string', default: '8000' },
      'metrics-port': { type: 'string', default: '8002' },
      'metrics-address': { type: 'string' },
      'metrics-tenant-labels': { type: 'string' },
      ...connectionFlagOptions(),
      'allow-grpc': { type: 'string' },
      'allow-http': { type: 'string' },
      'allow-metrics': { type: 'string' },
      'max-message-size': { type: 'string', default: DEFAULT_MAX_MESSAGE_SIZE },
      ...tlsFlagOptions('grpc'),
      ...tlsFlagOptions('http'),
      'model-control-mode': { type: 'string' },
      'load-model': { type: 'string', multiple: true, default: [] },
      'repository-poll-secs': { type: 'string', default: '15' },
      'disable-auto-complete-config': { type: 'string' },
      'strict-model-config': { type: 'string' },
      'intra-op-threads': { type: 'string', default: '1' },
      'model-load-concurrency': { type: 'string', default: '2' },
      'no-default-warmup': { type: 'string' },
      ...lifecycleFlagOptions(),
      'access-log-sample-rate': { type: 'string', default: '0.01' },
      'drain-delay': { type: 'string', default: '5' },
      'drain-timeout': { type: 'string' },
      'exit-timeout-secs': { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      'log-format': { type: 'string', default: 'json' },
      'enable-fault-injection': { type: 'string' },
      'memory-capacity': { type: 'string' },
      tenant: { type: 'string', multiple: true, default: [] },
      'tenants-file': { type: 'string' },
      'require-api-key': { type: 'string' },
      'admin-tenant': { type: 'string' },
      'grpc-restricted-protocol': { type: 'string', multiple: true, default: [] },
      'http-restricted-api': { type: 'string', multiple: true, default: [] },
      routes: { type: 'string' },
      'shadow-queue-size': { type: 'string', default: '256' },
      'shadow-concurrency': { type: 'string', default: '2' },
      ...archiveFlagOptions(),
      ...doorLimitFlagOptions(),
      ...cacheFlagOptions(),
      device: { type: 'string', default: '0' },
      'device-memory-capacity': { type: 'string' },
      'tenant-device': { type: 'string', multiple: true, default: [] },
      'device-probe-interval': { type: 'string', default: '5' },
      'device-ledger': { type: 'string' },
      'patrol-interval': { type: 'string', default: '30' },
      'patrol-leak-threshold': { type: 'string', default: '500MiB' },
      'patrol-growth-rate': { type: 'string', default: '1MiB' },
      'patrol-window': { type: 'string', default: '5' },
      'patrol-max-restarts': { type: 'string', default: '3' },
    },
  });
  const repository = aliasedFlag(values, 'model-repository', 'model-store');
  if (!repository) throw new UsageError('--model-repository (or --model-store) is required');
  const level = values['log-level'] as LevelWithSilent;
  if (!LOG_LEVELS.includes(level)) {
    throw new UsageError(`--log-level: expected one of ${LOG_LEVELS.join('|')}, got '${level}'`);
  }
  const faultInjection = booleanFlag('--enable-fault-injection', values['enable-fault-injection'], false);
  return {
    modelRepository: path.resolve(repository),
    host: values.host as string,
    grpcPort: integerFlag('--grpc-port', values['grpc-port'] as string, 0, 65535),
    httpPort: integerFlag('--http-port', values['http-port'] as string, -1, 65535),
    metricsPort: integerFlag('--metrics-port', values['metrics-port'] as string, -1, 65535),
    metricsAddress: addressFlag('--metrics-address', values['metrics-address'] as string | undefined),
    connections: connectionOptions(values),
    ...frontDoorOptions(values),
    grpcTls: tlsOptions('grpc', values),
    httpTls: tlsOptions('http', values),
    ...modelControlOptions(values),
    autoCompleteConfig: autoCompleteOption(values),
    intraOpThreads: integerFlag('--intra-op-threads', values['intra-op-threads'] as string, 1, 1024),
    modelLoadConcurrency: integerFlag('--model-load-concurrency', values['model-load-concurrency'] as string, 1, 64),
    defaultWarmup: !booleanFlag('--no-default-warmup', values['no-default-warmup'], false),
    ...lifecycleOptions(values),
    accessLogSampleRate: numberFlag('--access-log-sample-rate', values['access-log-sample-rate'] as string, 0, 1),
    drainDelayMs: Math.round(numberFlag('--drain-delay', values['drain-delay'] as string, 0, 3600) * 1000),
    drainTimeoutMs: drainTimeoutMs(values),
    logLevel: level,
    logFormat: choiceFlag('--log-format', values['log-format'] as string, LOG_FORMATS) === 'json' ? 'json' : 'pretty',
    faultInjection,
    ...withAccess(values, memoryOptions(values, faultInjection)),
    deviceProbeIntervalMs: Math.round(numberFlag('--device-probe-interval', values['device-probe-interval'] as string, 0.01, 3600) * 1000),
    patrol: patrolOptions(values),
    routesFile: routesFileOption(values['routes'] as string | undefined),
    shadowQueueSize: integerFlag('--shadow-queue-size', values['shadow-queue-size'] as string, 1, 1_000_000),
    shadowConcurrency: integerFlag('--shadow-concurrency', values['shadow-concurrency'] as string, 1, 1024),
    archive: archiveSettings(values),
    responseCacheBytes: cacheSizeBytes(values),
    doors: doorLimits(values),
    metricsTenantLabels: booleanFlag('--metrics-tenant-labels', values['metrics-tenant-labels'] as string | undefined, true),
  };
}

/**
 * `--routes FILE`, read and validated now (YAML, schema, the rules between
 * fields), so a malformed file exits 2 before anything starts; whether its
 * models fit is checked once they are loaded (serve, below).
 */
function routesFileOption(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (raw === '') throw new UsageError("--routes: expected a routes file, got ''");
  const file = path.resolve(raw);
  try {
    readRoutesFile(file);
  } catch (err) {
    if (err instanceof RoutesFileError) throw new UsageError(`--routes: ${err.message}`);
    throw err;
  }
  return file;
}

type FlagValues = Readonly<Record<string, unknown>>;

/** The connection-limit flags: each one field of ConnectionLimits, an integer in min..max (security/connection-limits.ts). */
const CONNECTION_FLAGS: readonly { flag: string; field: keyof ConnectionLimits; min: number }[] = [
  { flag: 'grpc-max-concurrent-streams', field: 'grpcMaxConcurrentStreams', min: 1 },
  { flag: 'grpc-max-connection-idle', field: 'grpcMaxConnectionIdleMs', min: 0 },
  { flag: 'grpc-max-connection-age', field: 'grpcMaxConnectionAgeMs', min: 0 },
  { flag: 'grpc-max-connection-age-grace', field: 'grpcMaxConnectionAgeGraceMs', min: 0 },
  { flag: 'grpc-keepalive-time', field: 'grpcKeepaliveTimeMs', min: 0 },
  { flag: 'grpc-keepalive-timeout', field: 'grpcKeepaliveTimeoutMs', min: 1 },
  { flag: 'http-idle-timeout', field: 'httpIdleTimeoutMs', min: 1 },
  { flag: 'http-request-timeout', field: 'httpRequestTimeoutMs', min: 0 },
  { flag: 'http-max-requests-per-socket', field: 'httpMaxRequestsPerSocket', min: 0 },
];

function connectionFlagOptions(): Record<string, { type: 'string'; default: string }> {
  return Object.fromEntries(
    CONNECTION_FLAGS.map(({ flag, field }) => [flag, { type: 'string', default: String(CONNECTION_LIMIT_DEFAULTS[field]) }]),
  );
}

function connectionOptions(values: FlagValues): Required<ConnectionLimits> {
  const limits: Record<string, number> = {};
  // Node's and grpc-js's timers and HTTP/2's settings all take up to 2^31 - 1.
  for (const { flag, field, min } of CONNECTION_FLAGS) limits[field] = integerFlag(`--${flag}`, values[flag] as string, min, MAX_TIMER_MS);
  return limits as Required<ConnectionLimits>;
}

/** An address to bind: an IP address or a host name (no port, no brackets); undefined when absent. */
function addressFlag(flag: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (isIP(raw) === 0 && !/^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(raw)) {
    throw new UsageError(`${flag}: expected an IP address or a host name to bind, such as 127.0.0.1 or ::1, got '${raw}'`);
  }
  return raw;
}

function frontDoorOptions(values: FlagValues): Pick<ServeOptions, 'allowGrpc' | 'allowHttp' | 'allowMetrics' | 'maxMessageBytes'> {
  const allowGrpc = booleanFlag('--allow-grpc', values['allow-grpc'] as string | undefined, true);
  const allowHttp = booleanFlag('--allow-http', values['allow-http'] as string | undefined, true);
  if (!allowGrpc && !allowHttp) {
    throw new UsageError('--allow-grpc=false and --allow-http=false: expected at least one of them true, or nothing could reach the models');
  }
  return {
    allowGrpc,
    allowHttp,
    allowMetrics: booleanFlag('--allow-metrics', values['allow-metrics'] as string | undefined, true),
    maxMessageBytes: byteSizeFlag('--max-message-size', values['max-message-size'] as string, MAX_MESSAGE_BYTES_LIMIT),
  };
}

function tlsFlagOptions(door: TlsDoor): Record<string, { type: 'string' }> {
  const names = ['use-ssl', 'use-ssl-mutual', 'server-cert', 'server-key', 'root-cert'];
  return Object.fromEntries(names.map((name) => [`${door}-${name}`, { type: 'string' }]));
}

/**
 * A door's TLS flags, as Triton reads them (`--grpc-use-ssl-mutual` implies
 * `--grpc-use-ssl`), and its files read and checked now, so a missing or
 * unusable file stops start-up (exit 2) with a message naming it.
 */
function tlsOptions(door: TlsDoor, values: FlagValues): TlsFiles | undefined {
  const raw = (name: string) => values[`${door}-${name}`] as string | undefined;
  const useSsl = booleanFlag(tlsFlag(door, 'use-ssl'), raw('use-ssl'), undefined);
  const mutual = booleanFlag(tlsFlag(door, 'use-ssl-mutual'), raw('use-ssl-mutual'), undefined);
  const [certFile, keyFile, rootCertFile] = [raw('server-cert'), raw('server-key'), raw('root-cert')];
  if (!useSsl && !mutual) {
    const file = (['server-cert', 'server-key', 'root-cert'] as const).find((name) => raw(name) !== undefined);
    // Triton ignores the files without --grpc-use-ssl; serving plaintext by mistake is worse than a refusal.
    if (file !== undefined && useSsl === undefined && mutual === undefined) {
      throw new UsageError(
        `${tlsFlag(door, file)}: given without ${tlsFlag(door, 'use-ssl')}; expected ${tlsFlag(door, 'use-ssl')} ` +
          `(or ${tlsFlag(door, 'use-ssl-mutual')}) with it, or ${tlsFlag(door, 'use-ssl')}=false to serve plaintext on purpose`,
      );
    }
    return undefined;
  }
  const enabledBy = mutual ? tlsFlag(door, 'use-ssl-mutual') : tlsFlag(door, 'use-ssl');
  for (const [name, given] of [['server-cert', certFile], ['server-key', keyFile]] as const) {
    if (given === undefined) throw new UsageError(`${enabledBy}: expected ${tlsFlag(door, name)} FILE with it, got none`);
  }
  if (mutual && rootCertFile === undefined) {
    throw new UsageError(`${enabledBy}: expected ${tlsFlag(door, 'root-cert')} FILE with it (the CA certificates that sign client certificates), got none`);
  }
  const files: TlsFiles = {
    certFile: path.resolve(certFile!),
    keyFile: path.resolve(keyFile!),
    rootCertFile: rootCertFile === undefined ? undefined : path.resolve(rootCertFile),
    mutual: mutual ?? false,
  };
  try {
    readTlsMaterial(door, files);
  } catch (err) {
    if (err instanceof TlsFileError) throw new UsageError(err.message);
    throw err;
  }
  return files;
}

function modelControlOptions(values: FlagValues): Pick<ServeOptions, 'modelControlMode' | 'startupModels' | 'repositoryPollSecs'> {
  const rawMode = values['model-control-mode'] as string | undefined;
  // Triton writes the modes in capitals too (--model-control-mode=EXPLICIT).
  const mode: ModelControlMode = rawMode === undefined ? 'default' : choiceFlag('--model-control-mode', rawMode, MODEL_CONTROL_MODES);
  const startupModels = values['load-model'] as string[];
  if (startupModels.length > 0 && mode !== 'explicit') {
    throw new UsageError(
      `--load-model: expected only with --model-control-mode=explicit, got it with ${rawMode === undefined ? 'no --model-control-mode' : `--model-control-mode=${rawMode}`} ` +
        '(every model loads at start-up in the other modes)',
    );
  }
  for (const name of startupModels) {
    const problem = name === ALL_MODELS ? undefined : modelNameProblem(name);
    if (problem !== undefined) throw new UsageError(`--load-model: ${problem}, got '${name}'`);
  }
  if (startupModels.includes(ALL_MODELS) && startupModels.length > 1) {
    throw new UsageError(`--load-model: expected '${ALL_MODELS}' alone (it already means every model), got ${startupModels.map((n) => `'${n}'`).join(', ')}`);
  }
  const repositoryPollSecs = numberFlag('--repository-poll-secs', values['repository-poll-secs'] as string, 0, 86400);
  if (mode === 'poll' && repositoryPollSecs === 0) {
    throw new UsageError(`--repository-poll-secs: expected a number above 0 with --model-control-mode=poll, got '${values['repository-poll-secs'] as string}'`);
  }
  return { modelControlMode: mode, startupModels, repositoryPollSecs };
}

/** `--disable-auto-complete-config` and Triton's `--strict-model-config` say the same thing, inverted. */
function autoCompleteOption(values: FlagValues): boolean {
  const disabled = booleanFlag('--disable-auto-complete-config', values['disable-auto-complete-config'] as string | undefined, undefined);
  const strict = booleanFlag('--strict-model-config', values['strict-model-config'] as string | undefined, undefined);
  if (disabled !== undefined && strict !== undefined && disabled !== strict) {
    throw new UsageError(
      `--disable-auto-complete-config=${disabled} and --strict-model-config=${strict} disagree; expected one of them, or the same value`,
    );
  }
  return !(disabled ?? strict ?? false);
}

function drainTimeoutMs(values: FlagValues): number {
  const raw = aliasedFlag(values, 'drain-timeout', 'exit-timeout-secs') ?? '30';
  const flag = values['drain-timeout'] === undefined && values['exit-timeout-secs'] !== undefined ? '--exit-timeout-secs' : '--drain-timeout';
  return Math.round(numberFlag(flag, raw, 0, 3600) * 1000);
}

function patrolOptions(values: FlagValues): PatrolSettings | undefined {
  const intervalS = numberFlag('--patrol-interval', values['patrol-interval'] as string, 0, 86400);
  if (intervalS === 0) return undefined;
  return {
    intervalMs: Math.max(1, Math.round(intervalS * 1000)),
    leakThresholdBytes: byteSizeFlag('--patrol-leak-threshold', values['patrol-leak-threshold'] as string),
    growthBytesPerSecond: byteSizeFlag('--patrol-growth-rate', values['patrol-growth-rate'] as string),
    window: integerFlag('--patrol-window', values['patrol-window'] as string, 2, 1000),
    maxRestarts: integerFlag('--patrol-max-restarts', values['patrol-max-restarts'] as string, 0, 1000),
  };
}

function memoryOptions(
  values: FlagValues,
  faultInjection: boolean,
): Pick<ServeOptions, 'memoryCapacityBytes' | 'tenants' | 'device' | 'tenantLimits' | 'apiKeys'> {
  try {
    const capacity = values['memory-capacity'] as string | undefined;
    const memoryCapacityBytes = capacity === undefined
      ? defaultMemoryCapacity()
      : parseByteSize(capacity, '--memory-capacity');
    const file = values['tenants-file'] as string | undefined;
    const fromFile = file ? readTenantsFile(file) : { host: [], device: [], keys: [], limits: [] };
    const tenants = mergeTenants(fromFile.host, (values.tenant as string[]).map((spec) => parseTenantFlag(spec)));
    const tooBig = tenants.find((t) => t.quotaBytes > memoryCapacityBytes);
    if (tooBig !== undefined) {
      throw new UsageError(
        `--tenant ${tooBig.name}: quota ${tooBig.quotaBytes} bytes exceeds the memory capacity of ${memoryCapacityBytes} bytes`,
      );
    }
    const deviceTenants = mergeTenants(
      fromFile.device,
      (values['tenant-device'] as string[]).map((spec) => parseTenantFlag(spec, '--tenant-device')),
    );
    const missingHost = deviceTenants.find((t) => t.name !== DEFAULT_TENANT && !tenants.some((h) => h.name === t.name));
    if (missingHost !== undefined) {
      throw new UsageError(
        `--tenant-device ${missingHost.name}: tenant '${missingHost.name}' has no host quota; add --tenant ${missingHost.name}:QUOTA ` +
          '(its models also use host memory for request buffers)',
      );
    }
    const deviceCapacity = values['device-memory-capacity'] as string | undefined;
    const ledger = values['device-ledger'] as string | undefined;
    if (ledger !== undefined && ledger !== 'host') throw new UsageError(`--device-ledger: expected 'host', got '${ledger}'`);
    if (ledger === 'host' && !faultInjection) {
      throw new UsageError('--device-ledger host is a test hook: it needs --enable-fault-injection');
    }
    return {
      memoryCapacityBytes,
      tenants,
      tenantLimits: fromFile.limits,
      apiKeys: fromFile.keys,
      device: {
        ordinal: integerFlag('--device', values.device as string, 0, 1024),
        capacityBytes: deviceCapacity === undefined ? undefined : parseByteSize(deviceCapacity, '--device-memory-capacity'),
        tenants: deviceTenants,
        backend: ledger === 'host' ? 'host' : 'cuda',
      },
    };
  } catch (err) {
    if (err instanceof TenantConfigError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * The memory options and the access flags, which need the tenants file's
 * keys: --require-api-key, --admin-tenant and the restricted groups, checked
 * together now (doorGates) so a bad combination exits 2 naming the flag.
 * A restriction's message names its group or header key, never its value.
 */
function withAccess<T extends Pick<ServeOptions, 'apiKeys'>>(
  values: FlagValues,
  memory: T,
): T & Pick<ServeOptions, 'requireApiKey' | 'adminTenant' | 'grpcRestrictedProtocol' | 'httpRestrictedApi'> {
  const adminTenant = values['admin-tenant'] as string | undefined;
  if (adminTenant === '') throw new UsageError("--admin-tenant: expected a tenant name, got ''");
  const access = {
    requireApiKey: booleanFlag('--require-api-key', values['require-api-key'] as string | undefined, false),
    adminTenant,
    grpcRestrictedProtocol: values['grpc-restricted-protocol'] as string[],
    httpRestrictedApi: values['http-restricted-api'] as string[],
  };
  try {
    doorGates({ ...access, apiKeys: memory.apiKeys });
  } catch (err) {
    if (err instanceof AccessSettingsError || err instanceof RestrictedApiSpecError) throw new UsageError(err.message);
    throw err;
  }
  return { ...memory, ...access };
}

function packageVersion(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.join(here, '..', 'package.json'), path.join(here, '..', '..', 'package.json')]) {
    try {
      return (JSON.parse(readFileSync(candidate, 'utf8')) as { version: string }).version;
    } catch {
      // try the next location: src/ under vitest, dist/src/ when compiled
    }
  }
  return '0.0.0';
}

async function serve(argv: string[]): Promise<void> {
  const flags = argv.slice(0, argv.includes('--') ? argv.indexOf('--') : argv.length);
  if (flags.includes('--help') || flags.includes('-h')) return printUsage();
  if (flags.includes('--version')) return printVersion();
  const options = parseServeOptions(argv);
  requireDirectory(options.modelRepository);
  const root = createRootLogger(options.logLevel, options.logFormat);
  const logger = root.child({ component: 'cli' });
  const server = new HotpathServer({ ...options, serverName: 'hotpath', serverVersion: packageVersion(), logger: root });
  if (options.faultInjection) logger.warn('fault injection is enabled: test-only hooks are honoured');
  installShutdown(server, logger, options);
  startMemoryTrimmer(options.memoryTrimIntervalMs, logger, () => server.releaseCachedMemory());
  // Certificate rotation and the routes file; with the handler, SIGHUP no longer ends the process (Node's default).
  process.on('SIGHUP', () => {
    logger.info({ signal: 'SIGHUP' }, options.routesFile === undefined ? 'reloading certificates' : 'reloading certificates and routes');
    try {
      server.reloadCertificates();
    } catch (err) {
      // A signal must never take the server down: the current certificates stay.
      logger.error({ error: err instanceof Error ? err.message : String(err) }, 'certificate reload failed');
    }
    // Both reloads run on every SIGHUP; a refused routes file is logged by the routes component.
    server.reloadRoutes('SIGHUP')?.catch((err: unknown) => {
      logger.error({ error: err instanceof Error ? err.message : String(err) }, 'routes reload failed');
    });
  });
  const ports = await server.listen();
  try {
    await server.loadModels();
  } catch (err) {
    // The routes do not fit the loaded models: exit 2 naming each problem, as for a malformed file.
    if (err instanceof RoutesFileError) throw new UsageError(`--routes: ${err.message}`);
    throw err;
  }
  // One machine-readable line for harnesses that start the server on port 0.
  logger.info(
    { grpc_port: ports.grpc, http_port: ports.http, metrics_port: ports.metrics, ready: server.isReady() },
    'hotpath serving',
  );
}

/** The repository must exist when the server starts (the parser itself reads no files but tenants files). */
function requireDirectory(dir: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    throw new UsageError(`--model-repository: expected an existing directory, got '${dir}' (it does not exist)`);
  }
  if (!isDirectory) throw new UsageError(`--model-repository: expected a directory, got '${dir}' (a file)`);
}

function printUsage(): void {
  process.stdout.write(USAGE);
}

function printVersion(): void {
  process.stdout.write(`hotpath ${packageVersion()}\n`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') return serve(rest);
  // The archive tools load only when asked for: serve never needs them.
  if (command === 'archive') return (await import('./datachecks/archive/archive-cli.js')).archiveCommand(rest);
  if (command === 'replay') return (await import('./datachecks/archive/replay-cli.js')).replayCommand(rest);
  if (command === 'drift-reference') return (await import('./datachecks/drift/drift-reference-cli.js')).driftReferenceCommand(rest);
  if (command === '--help' || command === '-h' || command === 'help') return printUsage();
  if (command === '--version') return printVersion();
  // tritonserver has no subcommand: `hotpath --model-store=/mnt/models ...`
  // (a KServe runtime's args after the image's entrypoint) serves.
  if (command?.startsWith('--')) return serve(argv);
  throw new UsageError(command ? `unknown command '${command}'` : 'missing command');
}

// Runs only as the program itself: `node dist/src/cli.js`, or the `hotpath`
// bin link (npx, node_modules/.bin), which resolves to this file. Importing
// the module (the embedding API reads parseServeOptions) never starts a server,
// whatever the importing script is called.
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(path.resolve(script)) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}
if (invokedDirectly()) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    if (err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`hotpath: ${err.message}\n\n${USAGE}`);
      process.exit(2);
    }
    process.stderr.write(`hotpath: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  });
}
