/**
 * Connection limits of the front doors, so one client cannot hold the server's
 * connections or multiplex without bound:
 *
 * - gRPC (grpc-js server options): the HTTP/2 concurrent streams a connection
 *   may open (SETTINGS_MAX_CONCURRENT_STREAMS; a client queues the calls
 *   above it), how long a connection may stay idle, how old it may grow
 *   (then GOAWAY, with a grace period for the calls still open), and the
 *   keepalive pings that find dead peers. Triton's flag names where Triton
 *   has the setting (`--grpc-keepalive-time`, `--grpc-max-connection-age`...).
 * - HTTP (node:http server settings, the REST and metrics ports): how long a
 *   kept-alive connection may stay idle, how long a whole request may take to
 *   arrive (slow clients), and how many requests one connection may carry.
 *
 * All durations are milliseconds; 0 means "no limit" where a setting allows it.
 * Every field is optional (an embedder may set a few): the rest take the
 * defaults below.
 */
import type http from 'node:http';

export interface ConnectionLimits {
  /** `--grpc-max-concurrent-streams`: streams (calls) one gRPC connection may have open at once. */
  readonly grpcMaxConcurrentStreams?: number;
  /** `--grpc-max-connection-idle`: a gRPC connection without calls this long gets GOAWAY; 0 = never. */
  readonly grpcMaxConnectionIdleMs?: number;
  /** `--grpc-max-connection-age`: a gRPC connection this old gets GOAWAY; 0 = never. */
  readonly grpcMaxConnectionAgeMs?: number;
  /** `--grpc-max-connection-age-grace`: then its open calls get this long before it is closed; 0 = as long as they need. */
  readonly grpcMaxConnectionAgeGraceMs?: number;
  /** `--grpc-keepalive-time`: the server pings a connection this long after its last ping; 0 = never. */
  readonly grpcKeepaliveTimeMs?: number;
  /** `--grpc-keepalive-timeout`: a ping not answered within this closes the connection. */
  readonly grpcKeepaliveTimeoutMs?: number;
  /** `--http-idle-timeout`: a kept-alive HTTP connection idle this long is closed. */
  readonly httpIdleTimeoutMs?: number;
  /** `--http-request-timeout`: a request (headers and body) must arrive within this; 0 = no limit. */
  readonly httpRequestTimeoutMs?: number;
  /** `--http-max-requests-per-socket`: requests one HTTP connection carries before it is closed; 0 = no limit. */
  readonly httpMaxRequestsPerSocket?: number;
}

/** The longest timer Node and grpc-js take (2^31 - 1 ms, about 24.8 days); grpc-js's "unlimited". */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export const CONNECTION_LIMIT_DEFAULTS: Required<ConnectionLimits> = {
  // Enough for any one client's concurrency (the benchmarks go to 128), and a
  // bound on what one connection can make the server hold.
  grpcMaxConcurrentStreams: 1000,
  // gRPC's own defaults: connections live as long as they are healthy.
  grpcMaxConnectionIdleMs: 0,
  grpcMaxConnectionAgeMs: 0,
  grpcMaxConnectionAgeGraceMs: 0,
  // Triton's defaults (gRPC core's): a ping after 2 h without one, 20 s to answer it.
  grpcKeepaliveTimeMs: 7_200_000,
  grpcKeepaliveTimeoutMs: 20_000,
  // Longer than common load-balancer idle timeouts (AWS ALB: 60 s), so the balancer, not the server, closes idle ones.
  httpIdleTimeoutMs: 65_000,
  // Node's default.
  httpRequestTimeoutMs: 300_000,
  httpMaxRequestsPerSocket: 0,
};

/** `limits` with every absent field at its default. */
export function withConnectionDefaults(limits: ConnectionLimits = {}): Required<ConnectionLimits> {
  const filled: Record<string, number> = { ...CONNECTION_LIMIT_DEFAULTS };
  for (const [key, value] of Object.entries(limits)) if (value !== undefined) filled[key] = value;
  return filled as Required<ConnectionLimits>;
}

/** grpc-js server options for `limits` (a setting that is off is left out: grpc-js's own default is "never"). */
export function grpcConnectionOptions(limits: ConnectionLimits = {}): Record<string, number> {
  const l = withConnectionDefaults(limits);
  const options: Record<string, number> = {
    'grpc.max_concurrent_streams': l.grpcMaxConcurrentStreams,
    'grpc.keepalive_timeout_ms': l.grpcKeepaliveTimeoutMs,
  };
  if (l.grpcMaxConnectionIdleMs > 0) options['grpc.max_connection_idle_ms'] = l.grpcMaxConnectionIdleMs;
  if (l.grpcMaxConnectionAgeMs > 0) options['grpc.max_connection_age_ms'] = l.grpcMaxConnectionAgeMs;
  if (l.grpcMaxConnectionAgeGraceMs > 0) options['grpc.max_connection_age_grace_ms'] = l.grpcMaxConnectionAgeGraceMs;
  if (l.grpcKeepaliveTimeMs > 0) options['grpc.keepalive_time_ms'] = l.grpcKeepaliveTimeMs;
  return options;
}

/** Applies the HTTP settings of `limits` to a node:http (or https) server before it listens. */
export function applyHttpConnectionLimits(server: http.Server, limits: ConnectionLimits = {}): void {
  const l = withConnectionDefaults(limits);
  server.keepAliveTimeout = l.httpIdleTimeoutMs;
  server.requestTimeout = l.httpRequestTimeoutMs;
  // headersTimeout must exceed keepAliveTimeout, or an idle kept-alive socket
  // is cut as a slow request; Node also wants it within requestTimeout.
  const headers = l.httpIdleTimeoutMs + 1000;
  server.headersTimeout = l.httpRequestTimeoutMs > 0 ? Math.min(headers, l.httpRequestTimeoutMs) : headers;
  server.maxRequestsPerSocket = l.httpMaxRequestsPerSocket;
}
