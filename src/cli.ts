#!/usr/bin/env node
/**
 * The `hotpath` command line.
 *
 *   hotpath serve --model-repository DIR [--grpc-port 8001] [--http-port 8000]
 *
 * Triton's default ports are the defaults here. Validation of the flags lives
 * in `parseServeOptions`, with one message format per flag.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { parseArgs } from 'node:util';
import type { LevelWithSilent } from 'pino';
import { createRootLogger } from './observability/logger.js';
import {
  DEFAULT_TENANT,
  mergeTenants,
  parseByteSize,
  parseTenantFlag,
  readTenantsFile,
  TenantConfigError,
  type TenantQuota,
} from './tenancy/tenant-config.js';
import { HotpathServer, type PatrolSettings } from './server/hotpath-server.js';
import type { DeviceLedgerOptions } from './tenancy/server-memory.js';

const USAGE = `usage: hotpath serve --model-repository DIR [options]

options:
  --model-repository DIR       Triton-layout model repository (required)
  --host HOST                  address to bind (default 0.0.0.0)
  --grpc-port N                KServe V2 / Triton gRPC port (default 8001; 0 = any free port)
  --http-port N                HTTP health port (default 8000; 0 = any free port; -1 = off)
  --metrics-port N             Prometheus GET /metrics port (default 8002; 0 = any free port; -1 = off)
  --intra-op-threads N         onnxruntime intra-op threads per worker (default 1)
  --model-load-concurrency N   models loaded and warmed at once (default 2)
  --no-default-warmup          skip the default warm-up of models without model_warmup
  --access-log-sample-rate R   fraction of successful requests access-logged, 0..1 (default 0.01);
                               failed requests are always logged
  --drain-delay S              on SIGTERM/SIGINT, seconds between turning unready and
                               refusing new calls (default 5)
  --drain-timeout S            seconds in-flight requests get to finish after that (default 30)
  --memory-capacity SIZE       memory arena capacity for request buffers and model footprints,
                               all tenants together (default: half the machine's memory)
  --tenant NAME:QUOTA          a tenant and its hard memory quota, e.g. ads:512MiB (repeatable);
                               models pick theirs with the config parameter 'tenant'
  --tenants-file FILE          tenants as JSON: {"tenants": {"NAME": "QUOTA", ...}} or, with a
                               device quota, {"tenants": {"NAME": {"quota": Q, "device_quota": Q}}}
  --device N                   the CUDA device for the device ledger and the native executor (default 0)
  --device-memory-capacity SIZE
                               device ledger capacity, all tenants together (default: the device's memory)
  --tenant-device NAME:QUOTA   a tenant's hard quota on device memory, e.g. ads:4GiB (repeatable)
  --device-probe-interval S    after a transient device error, how often to try moving a model
                               back from CPU to the device (default 5)
  --device-ledger host         test hook (needs --enable-fault-injection): back the device ledger
                               with host memory, so device quotas can be tested without a GPU
  --log-level LEVEL            trace|debug|info|warn|error|fatal|silent (default info)
  --enable-fault-injection     honour test-only fault hooks (never in production)
  --patrol-interval S          leak patrol sampling interval in seconds (default 30; 0 = off)
  --patrol-leak-threshold SIZE a worker generation leaking more restarts its pool (default 500MiB)
  --patrol-growth-rate SIZE    sustained growth per second over the window that restarts it (default 1MiB)
  --patrol-window K            samples in the growth window (default 5)
  --patrol-max-restarts N      restarts before a model whose leak comes back is marked degraded (default 3)

signals: SIGTERM or SIGINT drains and exits 0; a second signal exits at once (code 1).
`;

export interface ServeOptions {
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
  faultInjection: boolean;
  memoryCapacityBytes: number;
  tenants: TenantQuota[];
  device: DeviceLedgerOptions;
  deviceProbeIntervalMs: number;
  /** Undefined when --patrol-interval is 0. */
  patrol: PatrolSettings | undefined;
}

const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export function parseServeOptions(argv: string[]): ServeOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      'model-repository': { type: 'string' },
      host: { type: 'string', default: '0.0.0.0' },
      'grpc-port': { type: 'string', default: '8001' },
      'http-port': { type: 'string', default: '8000' },
      'metrics-port': { type: 'string', default: '8002' },
      'intra-op-threads': { type: 'string', default: '1' },
      'model-load-concurrency': { type: 'string', default: '2' },
      'no-default-warmup': { type: 'boolean', default: false },
      'access-log-sample-rate': { type: 'string', default: '0.01' },
      'drain-delay': { type: 'string', default: '5' },
      'drain-timeout': { type: 'string', default: '30' },
      'log-level': { type: 'string', default: 'info' },
      'enable-fault-injection': { type: 'boolean', default: false },
      'memory-capacity': { type: 'string' },
      tenant: { type: 'string', multiple: true, default: [] },
      'tenants-file': { type: 'string' },
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
  const repository = values['model-repository'];
  if (!repository) throw new UsageError('--model-repository is required');
  const level = values['log-level'] as LevelWithSilent;
  if (!LOG_LEVELS.includes(level)) {
    throw new UsageError(`--log-level: expected one of ${LOG_LEVELS.join('|')}, got '${level}'`);
  }
  return {
    modelRepository: path.resolve(repository),
    host: values.host as string,
    grpcPort: integerFlag('--grpc-port', values['grpc-port'] as string, 0, 65535),
    httpPort: integerFlag('--http-port', values['http-port'] as string, -1, 65535),
    metricsPort: integerFlag('--metrics-port', values['metrics-port'] as string, -1, 65535),
    intraOpThreads: integerFlag('--intra-op-threads', values['intra-op-threads'] as string, 1, 1024),
    modelLoadConcurrency: integerFlag('--model-load-concurrency', values['model-load-concurrency'] as string, 1, 64),
    defaultWarmup: !(values['no-default-warmup'] as boolean),
    accessLogSampleRate: numberFlag('--access-log-sample-rate', values['access-log-sample-rate'] as string, 0, 1),
    drainDelayMs: Math.round(numberFlag('--drain-delay', values['drain-delay'] as string, 0, 3600) * 1000),
    drainTimeoutMs: Math.round(numberFlag('--drain-timeout', values['drain-timeout'] as string, 0, 3600) * 1000),
    logLevel: level,
    faultInjection: values['enable-fault-injection'] as boolean,
    ...memoryOptions(values),
    deviceProbeIntervalMs: Math.round(numberFlag('--device-probe-interval', values['device-probe-interval'] as string, 0.01, 3600) * 1000),
    patrol: patrolOptions(values),
  };
}

function patrolOptions(values: Record<string, unknown>): PatrolSettings | undefined {
  const intervalS = numberFlag('--patrol-interval', values['patrol-interval'] as string, 0, 86400);
  if (intervalS === 0) return undefined;
  const size = (flag: string) => {
    try {
      return parseByteSize(values[flag] as string, `--${flag}`);
    } catch (err) {
      if (err instanceof TenantConfigError) throw new UsageError(err.message);
      throw err;
    }
  };
  return {
    intervalMs: Math.max(1, Math.round(intervalS * 1000)),
    leakThresholdBytes: size('patrol-leak-threshold'),
    growthBytesPerSecond: size('patrol-growth-rate'),
    window: integerFlag('--patrol-window', values['patrol-window'] as string, 2, 1000),
    maxRestarts: integerFlag('--patrol-max-restarts', values['patrol-max-restarts'] as string, 0, 1000),
  };
}

function memoryOptions(values: Record<string, unknown>): Pick<ServeOptions, 'memoryCapacityBytes' | 'tenants' | 'device'> {
  try {
    const capacity = values['memory-capacity'] as string | undefined;
    const memoryCapacityBytes = capacity === undefined
      ? Math.floor(os.totalmem() / 2)
      : parseByteSize(capacity, '--memory-capacity');
    const file = values['tenants-file'] as string | undefined;
    const fromFile = file ? readTenantsFile(file) : { host: [], device: [] };
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
    if (ledger === 'host' && !(values['enable-fault-injection'] as boolean)) {
      throw new UsageError('--device-ledger host is a test hook: it needs --enable-fault-injection');
    }
    return {
      memoryCapacityBytes,
      tenants,
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

class UsageError extends Error {}

function integerFlag(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${flag}: expected an integer in ${min}..${max}, got '${raw}'`);
  }
  return value;
}

function numberFlag(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < min || value > max) {
    throw new UsageError(`${flag}: expected a number in ${min}..${max}, got '${raw}'`);
  }
  return value;
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
  const options = parseServeOptions(argv);
  const root = createRootLogger(options.logLevel);
  const logger = root.child({ component: 'cli' });
  const server = new HotpathServer({
    modelRepository: options.modelRepository,
    host: options.host,
    grpcPort: options.grpcPort,
    httpPort: options.httpPort,
    metricsPort: options.metricsPort,
    intraOpThreads: options.intraOpThreads,
    modelLoadConcurrency: options.modelLoadConcurrency,
    defaultWarmup: options.defaultWarmup,
    accessLogSampleRate: options.accessLogSampleRate,
    drainDelayMs: options.drainDelayMs,
    drainTimeoutMs: options.drainTimeoutMs,
    memoryCapacityBytes: options.memoryCapacityBytes,
    tenants: options.tenants,
    device: options.device,
    deviceProbeIntervalMs: options.deviceProbeIntervalMs,
    faultInjection: options.faultInjection,
    patrol: options.patrol,
    serverName: 'hotpath',
    serverVersion: packageVersion(),
    logger: root,
  });
  if (options.faultInjection) logger.warn('fault injection is enabled: test-only hooks are honoured');
  let signals = 0;
  const shutdown = (signal: string) => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: exiting without waiting for the drain');
      process.exit(1);
    }
    logger.info({ signal }, 'shutting down');
    server.drain().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ error: err instanceof Error ? err.message : String(err) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const ports = await server.listen();
  await server.loadModels();
  // One machine-readable line for harnesses that start the server on port 0.
  logger.info(
    { grpc_port: ports.grpc, http_port: ports.http, metrics_port: ports.metrics, ready: server.isReady() },
    'hotpath serving',
  );
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') return serve(rest);
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  throw new UsageError(command ? `unknown command '${command}'` : 'missing command');
}

const invokedDirectly = process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly || process.argv[1]?.endsWith('/hotpath')) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    if (err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`hotpath: ${err.message}\n\n${USAGE}`);
      process.exit(2);
    }
    process.stderr.write(`hotpath: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  });
}
