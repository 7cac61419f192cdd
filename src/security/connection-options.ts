/**
 * The connection-limit flags (options table, common/option-table.ts): each
 * one field of ConnectionLimits, an integer in min..MAX_TIMER_MS
 * (security/connection-limits.ts has the defaults and what each does).
 */
import { integerFlag, UsageError } from '../common/flag-values.js';
import type { OptionEntry } from '../common/option-table.js';
import { CONNECTION_LIMIT_DEFAULTS, MAX_TIMER_MS, type ConnectionLimits } from './connection-limits.js';

const CONNECTION_FLAGS: readonly { flag: string; field: keyof ConnectionLimits; min: number; arg: string; triton?: boolean; help: string }[] = [
  { flag: 'grpc-max-concurrent-streams', field: 'grpcMaxConcurrentStreams', min: 1, arg: 'N',
    help: 'calls one gRPC connection may have open at once; a client queues the calls above it' },
  { flag: 'grpc-max-connection-idle', field: 'grpcMaxConnectionIdleMs', min: 0, arg: 'MS', help: 'GOAWAY to a gRPC connection without calls for MS ms (0 = never)' },
  { flag: 'grpc-max-connection-age', field: 'grpcMaxConnectionAgeMs', min: 0, arg: 'MS', triton: true, help: 'GOAWAY to a gRPC connection MS ms old (0 = never)' },
  { flag: 'grpc-max-connection-age-grace', field: 'grpcMaxConnectionAgeGraceMs', min: 0, arg: 'MS', triton: true,
    help: 'then its open calls get MS ms more before it is closed (0 = as long as they need)' },
  { flag: 'grpc-keepalive-time', field: 'grpcKeepaliveTimeMs', min: 0, arg: 'MS', triton: true, help: 'ping a gRPC connection MS ms after the last ping (0 = never)' },
  { flag: 'grpc-keepalive-timeout', field: 'grpcKeepaliveTimeoutMs', min: 1, arg: 'MS', triton: true, help: 'close it when the ping is not answered in MS ms' },
  { flag: 'http-idle-timeout', field: 'httpIdleTimeoutMs', min: 1, arg: 'MS', help: 'close a kept-alive HTTP connection idle for MS ms' },
  { flag: 'http-request-timeout', field: 'httpRequestTimeoutMs', min: 0, arg: 'MS', help: "an HTTP request's headers and body must arrive within MS ms (0 = no limit)" },
  { flag: 'http-max-requests-per-socket', field: 'httpMaxRequestsPerSocket', min: 0, arg: 'N', help: 'requests one HTTP connection carries before it is closed (0 = no limit)' },
];

export interface ConnectionOptions {
  /** Streams per gRPC connection, idle and request timeouts; absent fields take their defaults. */
  connections: ConnectionLimits;
}

export const CONNECTION_OPTIONS: readonly OptionEntry<object>[] = [{
  flags: CONNECTION_FLAGS.map(({ flag, arg, triton, help, field }) => ({ name: flag, arg, triton, help: `${help} (default ${CONNECTION_LIMIT_DEFAULTS[field]})` })),
  defaults: (): ConnectionOptions => ({ connections: { ...CONNECTION_LIMIT_DEFAULTS } }),
  parse: (values): Partial<ConnectionOptions> => {
    const given = CONNECTION_FLAGS.filter(({ flag }) => values[flag] !== undefined);
    if (given.length === 0) return {};
    const limits: Record<string, number> = { ...CONNECTION_LIMIT_DEFAULTS };
    // Node's and grpc-js's timers and HTTP/2's settings all take up to 2^31 - 1.
    for (const { flag, field, min } of given) limits[field] = integerFlag(`--${flag}`, values[flag] as string, min, MAX_TIMER_MS);
    return { connections: limits as ConnectionLimits };
  },
  check: (options: ConnectionOptions, name) => {
    for (const { field, min } of CONNECTION_FLAGS) {
      const value = options.connections?.[field];
      if (value !== undefined && !(Number.isInteger(value) && value >= min && value <= MAX_TIMER_MS)) {
        throw new UsageError(`${name('connections')}.${field}: expected an integer in ${min}..${MAX_TIMER_MS}, got ${value}`);
      }
    }
  },
  fields: Object.fromEntries(CONNECTION_FLAGS.map(({ flag }) => [flag, 'connections'])),
}];
