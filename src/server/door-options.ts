/**
 * The front doors' flags (options table, common/option-table.ts): where each
 * door binds, whether it runs, the request-size limit, and the server's name.
 *
 *   --host, --grpc-address, --http-address, --metrics-address
 *   --grpc-port, --http-port, --metrics-port
 *   --allow-grpc, --allow-http, --allow-metrics
 *   --max-message-size, --id, --http-thread-count
 *   --front-door-threads (server/door-threads.ts)
 */
import { isIP } from 'node:net';
import { booleanFlag, byteSizeFlag, integerFlag, UsageError } from '../common/flag-values.js';
import { integerIn, isBoolean, option, type OptionEntry } from '../common/option-table.js';

export const DEFAULT_MAX_MESSAGE_SIZE = '64MiB';
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** grpc-js takes lengths up to 2^31 - 1; Triton's clients send up to about 2 GiB. */
const MAX_MESSAGE_BYTES_LIMIT = 2 ** 31 - 1;

export interface DoorOptions {
  host: string;
  /** `--grpc-address`: where the gRPC port binds; undefined: `host`. */
  grpcAddress: string | undefined;
  /** `--http-address`: where the HTTP port binds; undefined: `host`. */
  httpAddress: string | undefined;
  /** `--metrics-address`: where the metrics port binds; undefined: `host`. */
  metricsAddress: string | undefined;
  grpcPort: number;
  httpPort: number;
  metricsPort: number;
  allowGrpc: boolean;
  allowHttp: boolean;
  allowMetrics: boolean;
  /** `--max-message-size`: gRPC's receive limit and the HTTP body limit. */
  maxMessageBytes: number;
  /** `--id`: the server's name in ServerMetadata and `GET /v2`. */
  serverName: string;
  /**
   * `--front-door-threads N|auto`: threads that take the gRPC and HTTP
   * connections (server/door-threads.ts); 1, the default, serves both doors
   * on the main thread as before; 'auto' picks from the cores
   * (frontDoorThreadCount there).
   */
  frontDoorThreads: number | 'auto';
}

/** The most front-door threads one process runs (each is a worker thread with its own heap). */
export const MAX_FRONT_DOOR_THREADS = 64;

const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

/** An address to bind: an IP address or a host name (no port, no brackets). */
function addressProblem(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' && (isIP(value) !== 0 || HOST_NAME.test(value))
    ? undefined
    : 'expected an IP address or a host name to bind, such as 127.0.0.1 or ::1';
}

function address<K extends string>(flag: string, field: K, help: string, triton: boolean) {
  return option<K, string | undefined>({
    flag, field, arg: 'ADDR', default: undefined, help, triton,
    parse: (raw, name) => {
      const problem = addressProblem(raw);
      if (problem !== undefined) throw new UsageError(`${name}: ${problem}, got '${raw}'`);
      return raw;
    },
    check: addressProblem,
  });
}

function port<K extends string>(flag: string, field: K, fallback: number, min: number, help: string) {
  return option<K, number>({
    flag, field, arg: 'N', default: fallback, help, triton: true,
    parse: (raw, name) => integerFlag(name, raw, min, 65535),
    check: integerIn(min, 65535),
  });
}

function allow<K extends string>(flag: string, field: K, help: string) {
  return option<K, boolean>({ flag, field, default: true, help, triton: true, parse: (raw, name) => booleanFlag(name, raw, true), check: isBoolean });
}

export const DOOR_OPTIONS: readonly OptionEntry<object>[] = [
  option({
    flag: 'host', field: 'host', arg: 'HOST', default: '0.0.0.0',
    help: 'address every port binds unless its own --*-address says otherwise (default 0.0.0.0)',
    parse: (raw, name) => {
      const problem = addressProblem(raw);
      if (problem !== undefined) throw new UsageError(`${name}: ${problem}, got '${raw}'`);
      return raw;
    },
    check: (value) => addressProblem(value),
  }),
  address('grpc-address', 'grpcAddress', 'address the gRPC port binds (default: --host)', true),
  address('http-address', 'httpAddress', 'address the HTTP port binds (default: --host)', true),
  address('metrics-address', 'metricsAddress',
    'address the metrics port binds (default: --host); 127.0.0.1 keeps the metrics, which name every model and tenant, off the network', true),
  port('grpc-port', 'grpcPort', 8001, 0, 'KServe V2 / Triton gRPC port (default 8001; 0 = any free port)'),
  port('http-port', 'httpPort', 8000, -1, 'HTTP port (default 8000; 0 = any free port; -1 = off)'),
  port('metrics-port', 'metricsPort', 8002, -1, 'Prometheus GET /metrics port (default 8002; 0 = any free port; -1 = off)'),
  allow('allow-grpc', 'allowGrpc', 'serve gRPC (default true)'),
  allow('allow-http', 'allowHttp', 'serve HTTP (default true)'),
  allow('allow-metrics', 'allowMetrics', 'serve metrics (default true)'),
  {
    flags: [],
    defaults: () => ({}),
    parse: () => ({}),
    check: (o: Pick<DoorOptions, 'allowGrpc' | 'allowHttp'>, name) => {
      if (!o.allowGrpc && !o.allowHttp) {
        throw new UsageError(`${name('allowGrpc')}=false and ${name('allowHttp')}=false: expected at least one of them true, or nothing could reach the models`);
      }
    },
  },
  option({
    flag: 'max-message-size', field: 'maxMessageBytes', arg: 'SIZE', default: DEFAULT_MAX_MESSAGE_BYTES,
    help: `largest request body, gRPC and HTTP alike (default ${DEFAULT_MAX_MESSAGE_SIZE}, at most 2GiB)`,
    parse: (raw, name) => byteSizeFlag(name, raw, MAX_MESSAGE_BYTES_LIMIT),
    check: integerIn(1, MAX_MESSAGE_BYTES_LIMIT),
  }),
  option({
    flag: 'id', field: 'serverName', arg: 'NAME', default: 'hotpath', triton: true,
    help: "the server's name in ServerMetadata and GET /v2 (default hotpath)",
    parse: (raw, name) => {
      if (raw === '') throw new UsageError(`${name}: expected a name, got ''`);
      return raw;
    },
    check: (value) => (typeof value === 'string' && value !== '' ? undefined : 'expected a name'),
  }),
  option({
    flag: 'front-door-threads', field: 'frontDoorThreads', arg: 'N|auto', default: 1 as number | 'auto',
    help: 'threads taking the gRPC and HTTP connections, handed round-robin by one acceptor (default 1: the main thread ' +
      'serves them; auto: one per two cores, at least 2 from 2 cores up, at most 8; see the README)',
    parse: (raw, name) => (raw === 'auto' ? 'auto' : integerFlag(name, raw, 1, MAX_FRONT_DOOR_THREADS)),
    check: (value) =>
      value === 'auto' || (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_FRONT_DOOR_THREADS)
        ? undefined
        : `expected an integer in 1..${MAX_FRONT_DOOR_THREADS} or 'auto'`,
  }),
  {
    flags: [{
      name: 'http-thread-count', arg: 'N', triton: true,
      help: 'accepted for Triton, no effect: --front-door-threads sets the threads taking HTTP and gRPC connections ' +
        '(default 1: the main thread serves both doors); N above 1 logs a warning',
    }],
    defaults: () => ({}),
    parse: (values) => {
      const raw = values['http-thread-count'] as string | undefined;
      if (raw !== undefined) integerFlag('--http-thread-count', raw, 1, 1024);
      return {};
    },
    // HTTP has no threads of its own: --front-door-threads sets the threads for both doors. Said once at start-up.
    warn: (values) => {
      const raw = values['http-thread-count'] as string | undefined;
      if (raw === undefined || Number(raw) <= 1) return [];
      const doorThreads = values['front-door-threads'] as string | undefined;
      if (doorThreads !== undefined && doorThreads !== 'auto' && Number(doorThreads) > 1) {
        return [`--http-thread-count ${raw}: no effect here: the ${doorThreads} front-door threads (--front-door-threads) take HTTP and gRPC connections alike`];
      }
      return [`--http-thread-count ${raw}: no effect here: one thread (the main thread) serves HTTP and gRPC`];
    },
  },
];
