/**
 * Admission, without a server: API keys (Bearer parsing, constant-time
 * matching of digests, refusals that never show a key), Triton's restricted
 * groups (the flag's syntax, one restriction per group, refusals per door),
 * the gate that combines them (probes open, admin), what a scoped caller
 * may read of a memory refusal, and the command line's checks of the flags
 * (UsageError: exit 2, naming the flag, never a secret).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';
import { UsageError } from '../../src/common/flag-values.js';
import { classifyError, ServingError } from '../../src/common/serving-error.js';
import { httpStatusOf } from '../../src/common/error-kinds.js';
import { ApiKeyRing, keyHash } from '../../src/security/api-keys.js';
import {
  ANONYMOUS_CALLER,
  CallGate,
  doorGates,
  OPEN_CALLER,
  requireAdmin,
  scopeFailure,
  visibleTo,
} from '../../src/security/caller.js';
import { parseRestriction, RestrictedApis } from '../../src/security/restricted-api.js';
import { parseKeyHash } from '../../src/tenancy/tenant-config.js';

const SECRET = 'k3y-of-ads-0123456789abcdef';
const ring = new ApiKeyRing([
  { tenant: 'ads', sha256: parseKeyHash(keyHash(SECRET), 'k') },
  { tenant: 'ads', sha256: parseKeyHash(keyHash('ads-second-key'), 'k') },
  { tenant: 'ops', sha256: parseKeyHash(keyHash('ops-key'), 'k') },
]);
const headers = (entries: Record<string, string>) => (name: string) => entries[name];

function failureOf(work: () => unknown): { kind: string; message: string } {
  try {
    work();
  } catch (err) {
    return classifyError(err);
  }
  throw new Error('expected a failure');
}

describe('API keys', () => {
  it('give the tenant of a Bearer key; any of a tenant\'s keys works (rotation)', () => {
    expect(ring.tenantOf(`Bearer ${SECRET}`)).toBe('ads');
    expect(ring.tenantOf('Bearer ads-second-key')).toBe('ads');
    expect(ring.tenantOf(`bearer   ${SECRET}  `)).toBe('ads');
    expect(ring.tenantOf('Bearer ops-key')).toBe('ops');
    expect([...ring.tenants()].sort()).toEqual(['ads', 'ops']);
  });

  it('refuse a missing, malformed or unknown key UNAUTHENTICATED, without showing it', () => {
    const cases: [string | undefined, RegExp][] = [
      [undefined, /^missing API key: send the header 'authorization: Bearer <key>'$/],
      ['', /^missing API key/],
      [SECRET, /^authorization header: expected 'Bearer <key>', got a value of 27 characters \(a key is one token, without spaces\)$/],
      [`Basic ${SECRET}`, /^authorization header: expected 'Bearer <key>', got the 'Basic' scheme$/],
      [`Bearer ${SECRET} extra`, /^authorization header: expected 'Bearer <key>', got a value of 40 characters \(a key is one token, without spaces\)$/],
      [`Bearer ${SECRET}x`, /^unknown API key \(a value of 28 characters\): no tenant has this key$/],
      [`Bearer ${'x'.repeat(5000)}`, /expected 'Bearer <key>', got a value of 5007 characters \(at most 4096\)/],
    ];
    for (const [header, message] of cases) {
      const failure = failureOf(() => ring.tenantOf(header));
      expect(failure.kind).toBe('unauthenticated');
      expect(failure.message).toMatch(message);
      expect(failure.message).not.toContain(SECRET);
    }
    expect(httpStatusOf('unauthenticated')).toBe(401);
  });

  it('hash keys as the README says (printf %s "$KEY" | sha256sum)', () => {
    // printf %s abc | sha256sum
    expect(keyHash('abc')).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(() => new ApiKeyRing([{ tenant: 'x', sha256: Buffer.alloc(16) }])).toThrow(/expected a 32-byte SHA-256 digest/);
  });
});

describe('restricted groups', () => {
  it("parse Triton's <group>[,<group>...]:<key>=<value>, the gRPC header with Triton's prefix", () => {
    const grpc = parseRestriction('model-repository,statistics:Admin-Key=s3cr=t', 'grpc');
    expect(grpc.groups).toEqual(['model-repository', 'statistics']);
    expect(grpc.header).toBe('triton-grpc-protocol-admin-key');
    expect(parseRestriction('health:probe=v', 'http').header).toBe('probe');
  });

  it('refuse a malformed flag naming the flag and the part, never the value', () => {
    const cases: [string, RegExp][] = [
      ['admin-key=topsecret', /^--grpc-restricted-protocol: expected <group>.*; got no '<group>:' before the header$/],
      ['bogus:admin-key=topsecret', /^--grpc-restricted-protocol: unknown group 'bogus'; expected <group>\[,<group>\.\.\.\]:<header-key>=<value> with groups among health, metadata, inference, shared-memory, model-config, model-repository, statistics, trace, logging$/],
      ['health,health:k=topsecret', /group 'health' is listed twice/],
      ['health:topsecret', /--grpc-restricted-protocol health: .*the header key is missing or not a header name/],
      ['health:bad key=topsecret', /the header key is missing or not a header name/],
      ['health:k=', /the value after 'k=' is empty/],
    ];
    for (const [spec, message] of cases) {
      let thrown: Error | undefined;
      try {
        parseRestriction(spec, 'grpc');
      } catch (err) {
        thrown = err as Error;
      }
      expect(thrown?.message).toMatch(message);
      expect(thrown?.message).not.toContain('topsecret');
    }
    expect(() => RestrictedApis.parse('http', ['health:a=1', 'metadata,health:b=2'])).toThrow(
      /^--http-restricted-api: group 'health' is restricted more than once; a group belongs to one restriction$/,
    );
  });

  it('refuse per door as Triton does: gRPC UNAVAILABLE, HTTP 403, naming the header', () => {
    const grpc = RestrictedApis.parse('grpc', ['model-repository:admin-key=s3cret']);
    const http = RestrictedApis.parse('http', ['model-repository:admin-key=s3cret']);
    const refusal = failureOf(() => grpc.check('model-repository', headers({})));
    expect(refusal).toEqual({ kind: 'restricted', message: "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'" });
    expect(failureOf(() => http.check('model-repository', headers({ 'admin-key': 'wrong' })))).toEqual({
      kind: 'restricted',
      message: "This API is restricted, expecting header 'admin-key'",
    });
    expect(new ServingError('restricted', 'x').code).toBe(status.UNAVAILABLE);
    expect(httpStatusOf('restricted')).toBe(403);
    expect(() => http.check('model-repository', headers({ 'admin-key': 's3cret' }))).not.toThrow();
    expect(() => http.check('inference', headers({}))).not.toThrow();
  });
});

describe('the gate', () => {
  const gate = new CallGate({ restricted: new RestrictedApis('grpc', []), keys: ring, adminTenant: 'ops' });

  it('admits every caller as OPEN without keys', () => {
    expect(CallGate.open('grpc').admit('RepositoryModelLoad', headers({}))).toBe(OPEN_CALLER);
    expect(visibleTo(OPEN_CALLER)('anyone')).toBe(true);
  });

  it('needs a key for every call but the probes, and knows the admin', () => {
    expect(gate.admit('ModelInfer', headers({ authorization: `Bearer ${SECRET}` }))).toEqual({ tenant: 'ads', admin: false });
    expect(gate.admit('RepositoryIndex', headers({ authorization: 'Bearer ops-key' }))).toEqual({ tenant: 'ops', admin: true });
    expect(failureOf(() => gate.admit('ServerMetadata', headers({}))).kind).toBe('unauthenticated');
    for (const probe of ['ServerLive', 'ServerReady', 'HealthCheck', 'HealthWatch', 'Healthz'] as const) {
      expect(gate.admit(probe, headers({}))).toBe(ANONYMOUS_CALLER);
      // A wrong key on a probe is no reason to fail the probe.
      expect(gate.admit(probe, headers({ authorization: 'Bearer wrong' }))).toBe(ANONYMOUS_CALLER);
    }
    expect(gate.admit('Healthz', headers({ authorization: 'Bearer ops-key' })).admin).toBe(true);
    // ModelReady names a model: it is scoped like any model call.
    expect(failureOf(() => gate.admit('ModelReady', headers({}))).kind).toBe('unauthenticated');
  });

  it('scopes what a caller sees to its tenant (a model of unknown tenant: the admin only)', () => {
    const ads = visibleTo({ tenant: 'ads', admin: false });
    expect([ads('ads'), ads('fraud'), ads(undefined)]).toEqual([true, false, false]);
    expect(visibleTo(ANONYMOUS_CALLER)('ads')).toBe(false);
    expect(visibleTo({ tenant: 'ops', admin: true })(undefined)).toBe(true);
  });

  it('lets only the admin load and unload (PERMISSION_DENIED, 403)', () => {
    expect(() => requireAdmin({ tenant: 'ops', admin: true }, 'RepositoryModelLoad')).not.toThrow();
    const refused = failureOf(() => requireAdmin({ tenant: 'ads', admin: false }, 'RepositoryModelLoad'));
    expect(refused).toEqual({
      kind: 'permission_denied',
      message: "RepositoryModelLoad needs an API key of the admin tenant (--admin-tenant); this key belongs to tenant 'ads'",
    });
    expect(httpStatusOf('permission_denied')).toBe(403);
  });
});

describe('memory refusals for a scoped caller', () => {
  const ads = { tenant: 'ads', admin: false };

  it("keep the caller's own quota and usage, and drop who else holds the memory", () => {
    const quota = new ServingError('over_quota', "tenant 'ads' is over its host memory quota: input buffer needs 3.0 MiB, the tenant uses 8.0 MiB of its 10.0 MiB host quota");
    expect(scopeFailure(quota, ads)).toBe(quota);
    const full = new ServingError(
      'over_quota',
      "server host memory is full: input buffer for tenant 'ads' needs 40.0 MiB; held by model 'fraud_model' 20.0 MiB, tenant 'fraud' 20.0 MiB",
    );
    expect(classifyError(scopeFailure(full, ads))).toEqual({
      kind: 'over_quota',
      message: "server host memory is full: input buffer for tenant 'ads' needs 40.0 MiB; other tenants' holdings are not shown",
    });
    // The native ledger's wording (a batch refused by the batcher).
    const native = new ServingError(
      'over_quota',
      "arena 'host' out of memory: 4.0 MiB for tenant 'ads' (no room); capacity 32.0 MiB, backend 32.0 MiB (cached 0 B), reservations 28.0 MiB; held by tenant 'fraud' 28.0 MiB",
    );
    const scoped = classifyError(scopeFailure(native, ads)).message;
    expect(scoped).not.toContain('fraud');
    expect(scoped).toMatch(/^arena 'host' out of memory: 4\.0 MiB for tenant 'ads' .*; other tenants' holdings are not shown$/);
    // The admin (and everyone without keys) reads the whole message.
    expect(scopeFailure(full, { tenant: 'ops', admin: true })).toBe(full);
    expect(scopeFailure(full, OPEN_CALLER)).toBe(full);
  });
});

describe('the command line', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'call-gate-'));
  const file = (tenants: unknown) => {
    const name = path.join(dir, `t${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(name, JSON.stringify({ tenants }));
    return name;
  };
  const withKeys = file({ ads: { quota: '1GiB', keys: [keyHash(SECRET)] }, ops: { keys: [keyHash('ops-key')] } });
  const base = ['--model-repository', 'models'];
  const usage = (args: string[]) => {
    try {
      parseServeOptions([...base, ...args]);
    } catch (err) {
      expect(err).toBeInstanceOf(UsageError);
      return (err as Error).message;
    }
    throw new Error('expected a UsageError');
  };

  it('parse the access flags, all off by default', () => {
    expect(parseServeOptions(base)).toMatchObject({
      requireApiKey: false,
      adminTenant: undefined,
      apiKeys: [],
      grpcRestrictedProtocol: [],
      httpRestrictedApi: [],
    });
    const options = parseServeOptions([
      ...base, '--tenants-file', withKeys, '--require-api-key=true', '--admin-tenant', 'ops',
      '--grpc-restricted-protocol', 'model-repository:admin-key=v1', '--grpc-restricted-protocol', 'health:probe=v2',
      '--http-restricted-api', 'model-repository:admin-key=v1',
    ]);
    expect(options.requireApiKey).toBe(true);
    expect(options.adminTenant).toBe('ops');
    expect(options.apiKeys.map((k) => k.tenant)).toEqual(['ads', 'ops']);
    expect(options.grpcRestrictedProtocol).toEqual(['model-repository:admin-key=v1', 'health:probe=v2']);
    expect(parseServeOptions([...base, '--require-api-key', 'false']).requireApiKey).toBe(false);
  });

  it('refuse combinations that cannot work, naming the flag', () => {
    expect(usage(['--require-api-key'])).toMatch(/^--require-api-key: expected tenants with "keys" in --tenants-file .* got no key$/);
    expect(usage(['--require-api-key=maybe'])).toMatch(/--require-api-key/);
    expect(usage(['--tenants-file', withKeys, '--admin-tenant', 'ops'])).toMatch(/^--admin-tenant ops: expected together with --require-api-key/);
    expect(usage(['--tenants-file', withKeys, '--require-api-key', '--admin-tenant', 'nobody'])).toMatch(
      /^--admin-tenant nobody: expected a tenant with "keys" in --tenants-file, got one without; tenants with keys: ads, ops$/,
    );
    expect(usage(['--admin-tenant='])).toMatch(/^--admin-tenant: expected a tenant name, got ''$/);
    const bad = usage(['--http-restricted-api', 'secrets:admin-key=topsecret']);
    expect(bad).toMatch(/^--http-restricted-api: unknown group 'secrets'/);
    expect(bad).not.toContain('topsecret');
    expect(usage(['--grpc-restricted-protocol', 'health:a=1', '--grpc-restricted-protocol', 'health:b=2'])).toMatch(
      /group 'health' is restricted more than once/,
    );
  });

  it('build both doors\' gates from the same settings', () => {
    const gates = doorGates({ requireApiKey: true, apiKeys: parseServeOptions([...base, '--tenants-file', withKeys]).apiKeys });
    expect(gates.grpc.requiresKeys && gates.http.requiresKeys).toBe(true);
    expect(gates.http.admit('ModelInfer', headers({ authorization: `Bearer ${SECRET}` }))).toEqual({ tenant: 'ads', admin: false });
  });
});
