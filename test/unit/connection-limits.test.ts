/**
 * The connection-limit settings (src/security/connection-limits.ts) and their
 * flags, `--metrics-address`, and the tenants file's limits reaching the
 * server options: defaults, what grpc-js and node:http are given, and a
 * message naming the flag, the expected and the actual value for bad values.
 */
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';
import {
  applyHttpConnectionLimits,
  CONNECTION_LIMIT_DEFAULTS,
  grpcConnectionOptions,
  withConnectionDefaults,
} from '../../src/security/connection-limits.js';

const base = ['--model-repository', 'models'];

describe('connection flags', () => {
  it('default to gRPC\'s and Triton\'s settings, with a bound on streams per connection', () => {
    const options = parseServeOptions(base);
    // The default values themselves are pinned below, through what grpc-js and node:http are given.
    expect(options.connections).toEqual(CONNECTION_LIMIT_DEFAULTS);
    expect(options.metricsAddress).toBeUndefined();
    expect(options.tenantLimits).toEqual([]);
  });

  it('take every value, in ms', () => {
    const options = parseServeOptions([
      ...base,
      '--grpc-max-concurrent-streams', '8',
      '--grpc-max-connection-idle=30000',
      '--grpc-max-connection-age', '600000',
      '--grpc-max-connection-age-grace', '10000',
      '--grpc-keepalive-time', '60000',
      '--grpc-keepalive-timeout', '5000',
      '--http-idle-timeout', '5000',
      '--http-request-timeout', '0',
      '--http-max-requests-per-socket', '100',
      '--metrics-address', '127.0.0.1',
    ]);
    expect(options.connections).toEqual({
      grpcMaxConcurrentStreams: 8,
      grpcMaxConnectionIdleMs: 30_000,
      grpcMaxConnectionAgeMs: 600_000,
      grpcMaxConnectionAgeGraceMs: 10_000,
      grpcKeepaliveTimeMs: 60_000,
      grpcKeepaliveTimeoutMs: 5000,
      httpIdleTimeoutMs: 5000,
      httpRequestTimeoutMs: 0,
      httpMaxRequestsPerSocket: 100,
    });
    expect(options.metricsAddress).toBe('127.0.0.1');
    for (const address of ['::1', '0.0.0.0', 'localhost', 'metrics.internal']) {
      expect(parseServeOptions([...base, '--metrics-address', address]).metricsAddress).toBe(address);
    }
  });

  it('refuse bad values, naming the flag, the expected and the actual value', () => {
    const refuse = (args: string[]) => () => parseServeOptions([...base, ...args]);
    expect(refuse(['--grpc-max-concurrent-streams', '0'])).toThrow("--grpc-max-concurrent-streams: expected an integer in 1..2147483647, got '0'");
    expect(refuse(['--grpc-max-connection-idle', '1.5'])).toThrow("--grpc-max-connection-idle: expected an integer in 0..2147483647, got '1.5'");
    expect(refuse(['--grpc-keepalive-timeout', '0'])).toThrow("--grpc-keepalive-timeout: expected an integer in 1..2147483647, got '0'");
    expect(refuse(['--http-idle-timeout=-1'])).toThrow("--http-idle-timeout: expected an integer in 1..2147483647, got '-1'");
    expect(refuse(['--http-request-timeout', 'soon'])).toThrow("--http-request-timeout: expected an integer in 0..2147483647, got 'soon'");
    expect(refuse(['--http-max-requests-per-socket', '1e99'])).toThrow(/--http-max-requests-per-socket: expected an integer in 0\.\.2147483647, got '1e99'/);
    expect(refuse(['--metrics-address', '127.0.0.1:8002'])).toThrow(
      "--metrics-address: expected an IP address or a host name to bind, such as 127.0.0.1 or ::1, got '127.0.0.1:8002'",
    );
    expect(refuse(['--metrics-address', ''])).toThrow(/--metrics-address: expected an IP address or a host name/);
  });
});

describe('grpc-js options', () => {
  it('set the stream limit and keepalive, and leave out what is off (grpc-js reads 0 as "at once")', () => {
    expect(grpcConnectionOptions()).toEqual({
      'grpc.max_concurrent_streams': 1000,
      'grpc.keepalive_time_ms': 7_200_000,
      'grpc.keepalive_timeout_ms': 20_000,
    });
    expect(grpcConnectionOptions({ grpcMaxConnectionIdleMs: 500, grpcMaxConnectionAgeMs: 60_000, grpcMaxConnectionAgeGraceMs: 5000, grpcKeepaliveTimeMs: 0 })).toEqual({
      'grpc.max_concurrent_streams': 1000,
      'grpc.keepalive_timeout_ms': 20_000,
      'grpc.max_connection_idle_ms': 500,
      'grpc.max_connection_age_ms': 60_000,
      'grpc.max_connection_age_grace_ms': 5000,
    });
  });

  it('fill the fields an embedder leaves out', () => {
    expect(withConnectionDefaults({ grpcMaxConcurrentStreams: 4 })).toEqual({ ...CONNECTION_LIMIT_DEFAULTS, grpcMaxConcurrentStreams: 4 });
    expect(withConnectionDefaults({ httpIdleTimeoutMs: undefined as unknown as number })).toEqual(CONNECTION_LIMIT_DEFAULTS);
  });
});

describe('node:http settings', () => {
  it('keep headersTimeout above the idle timeout and within the request timeout', () => {
    const server = http.createServer();
    applyHttpConnectionLimits(server);
    expect([server.keepAliveTimeout, server.headersTimeout, server.requestTimeout, server.maxRequestsPerSocket]).toEqual([65_000, 66_000, 300_000, 0]);
    applyHttpConnectionLimits(server, { httpIdleTimeoutMs: 10_000, httpRequestTimeoutMs: 5000, httpMaxRequestsPerSocket: 3 });
    expect([server.keepAliveTimeout, server.headersTimeout, server.requestTimeout, server.maxRequestsPerSocket]).toEqual([10_000, 5000, 5000, 3]);
    applyHttpConnectionLimits(server, { httpIdleTimeoutMs: 1000, httpRequestTimeoutMs: 0 });
    expect([server.headersTimeout, server.requestTimeout]).toEqual([2000, 0]);
  });
});

describe('tenants file limits', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hotpath-limits-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reach the server options, burst defaulted from the rate', () => {
    const file = path.join(dir, 'tenants.json');
    writeFileSync(
      file,
      JSON.stringify({ tenants: { ads: { quota: '64MiB', rate: 200, burst: 400, max_inflight: 32 }, fraud: { rate: 2.5 }, batch: '1GiB' } }),
    );
    const options = parseServeOptions([...base, '--tenants-file', file]);
    expect(options.tenantLimits).toEqual([
      { tenant: 'ads', rate: 200, burst: 400, maxInflight: 32 },
      { tenant: 'fraud', rate: 2.5, burst: 3 },
    ]);
  });

  it('refuse a malformed limit at start-up, naming the tenant and the field', () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ tenants: { ads: { max_inflight: 0 } } }));
    expect(() => parseServeOptions([...base, '--tenants-file', file])).toThrow(/tenant 'ads': 'max_inflight': expected an integer >= 1, got 0/);
  });
});
