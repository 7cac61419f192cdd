/**
 * Tenant API keys scope every call (--require-api-key): on both doors, for
 * each RPC group, no key and a wrong key are UNAUTHENTICATED (401), another
 * tenant's key finds the model exactly as missing (NOT_FOUND, the same
 * message), and the right key is served. The index and statistics list
 * only the caller's models, /healthz lists them only for the admin, probes
 * stay open, load and unload need the admin tenant's key (PERMISSION_DENIED
 * otherwise). Last, an audit of everything the server printed finds no key.
 *
 * Real server process, real clients: the proto-loader client and the typed
 * client over gRPC, node:http over REST.
 */
import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { createClient, InferenceError } from '../../src/client/index.js';
import { keyHash } from '../../src/security/api-keys.js';
import { healthCheck, SERVING } from './helpers/probes.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, type Message } from './helpers/triton-client.js';

// Random keys: the audit looks for these exact strings in the server's output.
const key = (tenant: string) => `${tenant}-${randomBytes(18).toString('base64url')}`;
const KEYS = { ads: key('ads'), fraud: key('fraud'), ops: key('ops') };
const WRONG = key('wrong');
const ALL_SECRETS = [...Object.values(KEYS), WRONG];

let served: ServedRepository;

async function identity(dir: string, name: string, tenant: string): Promise<void> {
  await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [-1] });
  // A declared footprint keeps the quota arithmetic exact (see tenant-memory.test.ts).
  await appendFile(
    path.join(dir, name, 'config.pbtxt'),
    `\nparameters { key: "tenant" value: { string_value: "${tenant}" } }\n` +
      'parameters { key: "memory_footprint_bytes" value: { string_value: "1MiB" } }\n',
  );
}

beforeAll(async () => {
  // Outside the repository: a tenants file is not a model directory.
  const secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-keys-'));
  const tenantsFile = path.join(secrets, 'tenants.json');
  await writeFile(
    tenantsFile,
    JSON.stringify({
      tenants: {
        ads: { quota: '8MiB', keys: [keyHash(KEYS.ads)] },
        fraud: { quota: '256MiB', keys: [keyHash(KEYS.fraud)] },
        // The admin tenant owns no model here; it needs no quota.
        ops: { keys: [keyHash(KEYS.ops)] },
      },
    }),
  );
  served = await serveRepository(
    tempRepository(async (dir) => {
      await identity(dir, 'ads_model', 'ads');
      await identity(dir, 'fraud_model', 'fraud');
    }),
    ['--tenants-file', tenantsFile, '--require-api-key', '--admin-tenant', 'ops', '--access-log-sample-rate', '1'],
  );
});

afterAll(() => served?.close());

const bearer = (secret: string | undefined): grpc.Metadata => {
  const metadata = new grpc.Metadata();
  if (secret !== undefined) metadata.set('authorization', `Bearer ${secret}`);
  return metadata;
};

interface Outcome {
  readonly code: grpc.status;
  readonly details: string;
  readonly response?: Message;
}

async function grpcCall(method: string, request: Message, secret: string | undefined): Promise<Outcome> {
  try {
    return { code: grpc.status.OK, details: '', response: await served.client.call(method, request, bearer(secret)) };
  } catch (err) {
    const failure = err as { code: grpc.status; details: string };
    return { code: failure.code, details: failure.details };
  }
}

const inferRequest = (model: string): Message => ({
  model_name: model,
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4] }],
  raw_input_contents: [f32Bytes([1, 2, 3, 4])],
});

/** The model-scoped RPCs, each with its request for a model. */
const SCOPED: readonly { rpc: string; request: (model: string) => Message }[] = [
  { rpc: 'ModelMetadata', request: (name) => ({ name }) },
  { rpc: 'ModelReady', request: (name) => ({ name }) },
  { rpc: 'ModelConfig', request: (name) => ({ name }) },
  { rpc: 'ModelStatistics', request: (name) => ({ name }) },
  { rpc: 'ModelInfer', request: inferRequest },
];

describe('API keys over gRPC', () => {
  for (const { rpc, request } of SCOPED) {
    it(`${rpc}: no key and a wrong key are UNAUTHENTICATED, another tenant's model reads as missing, the right key is served`, async () => {
      const none = await grpcCall(rpc, request('ads_model'), undefined);
      expect([grpc.status[none.code], none.details]).toEqual(['UNAUTHENTICATED', "missing API key: send the header 'authorization: Bearer <key>'"]);
      const wrong = await grpcCall(rpc, request('ads_model'), WRONG);
      expect(grpc.status[wrong.code]).toBe('UNAUTHENTICATED');
      expect(wrong.details).toMatch(/^unknown API key \(a value of \d+ characters\): no tenant has this key$/);

      const other = await grpcCall(rpc, request('ads_model'), KEYS.fraud);
      const missing = await grpcCall(rpc, request('ghost_model'), KEYS.fraud);
      expect(grpc.status[other.code]).toBe('NOT_FOUND');
      expect([other.code, other.details]).toEqual([missing.code, missing.details.replaceAll('ghost_model', 'ads_model')]);
      // What a tenant sees listed as available is its own models, never another's.
      expect(other.details).toMatch(/^model 'ads_model' is not found(; available models: fraud_model)?$/);

      const own = await grpcCall(rpc, request('ads_model'), KEYS.ads);
      expect(grpc.status[own.code]).toBe('OK');
      const admin = await grpcCall(rpc, request('ads_model'), KEYS.ops);
      expect(grpc.status[admin.code]).toBe('OK');
    });
  }

  it('ModelStreamInfer: refused without a key; on the stream another tenant\'s model reads as missing', async () => {
    const refused = await new Promise<grpc.StatusObject>((resolve) => {
      const stream = served.client.raw['ModelStreamInfer']!.call(served.client.raw, bearer(undefined)) as grpc.ClientDuplexStream<Message, Message>;
      stream.on('data', () => undefined);
      stream.on('error', () => undefined);
      stream.on('status', resolve);
      stream.write(inferRequest('ads_model'));
    });
    expect([grpc.status[refused.code], refused.details]).toEqual(['UNAUTHENTICATED', "missing API key: send the header 'authorization: Bearer <key>'"]);

    const answers = await new Promise<Message[]>((resolve, reject) => {
      const stream = served.client.raw['ModelStreamInfer']!.call(served.client.raw, bearer(KEYS.fraud)) as grpc.ClientDuplexStream<Message, Message>;
      const got: Message[] = [];
      stream.on('data', (message: Message) => {
        got.push(message);
        if (got.length === 3) stream.end();
      });
      stream.on('error', reject);
      stream.on('end', () => resolve(got));
      stream.write({ ...inferRequest('ads_model'), id: 'other' });
      stream.write({ ...inferRequest('ghost_model'), id: 'missing' });
      stream.write({ ...inferRequest('fraud_model'), id: 'own' });
    });
    const byId = new Map(answers.map((answer) => [answer['infer_response']['id'], answer]));
    expect(byId.get('other')!['error_message']).toBe(byId.get('missing')!['error_message'].replaceAll('ghost_model', 'ads_model'));
    expect(byId.get('other')!['error_message']).toMatch(/^model 'ads_model' is not found; available models: fraud_model$/);
    expect(byId.get('own')!['error_message']).toBe('');
  });

  it('ServerMetadata needs a key; the index and statistics list only the caller\'s models, all for the admin', async () => {
    expect(grpc.status[(await grpcCall('ServerMetadata', {}, undefined)).code]).toBe('UNAUTHENTICATED');
    expect((await grpcCall('ServerMetadata', {}, KEYS.fraud)).response!['name']).toBe('hotpath');

    const names = async (rpc: string, secret: string) => {
      const { response, code } = await grpcCall(rpc, {}, secret);
      expect(grpc.status[code]).toBe('OK');
      return rpc === 'RepositoryIndex'
        ? response!['models'].map((m: Message) => m['name']).sort()
        : response!['model_stats'].map((m: Message) => m['name']).sort();
    };
    for (const rpc of ['RepositoryIndex', 'ModelStatistics']) {
      expect(grpc.status[(await grpcCall(rpc, {}, undefined)).code]).toBe('UNAUTHENTICATED');
      expect(await names(rpc, KEYS.ads)).toEqual(['ads_model']);
      expect(await names(rpc, KEYS.fraud)).toEqual(['fraud_model']);
      expect(await names(rpc, KEYS.ops)).toEqual(['ads_model', 'fraud_model']);
    }
  });

  it('probes stay open: ServerLive, ServerReady and grpc.health.v1 need no key', async () => {
    expect((await grpcCall('ServerLive', {}, undefined)).response).toEqual({ live: true });
    expect((await grpcCall('ServerReady', {}, undefined)).response).toEqual({ ready: true });
    expect(await healthCheck(served.server.grpcAddress)).toBe(SERVING);
  });

  it("a memory refusal names the caller's own tenant only", async () => {
    const floats = 3 * 1024 * 1024; // 12 MiB of input against the 8 MiB quota of 'ads'
    const request: Message = {
      model_name: 'ads_model',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, floats] }],
      raw_input_contents: [f32Bytes(new Float32Array(floats))],
    };
    const refused = await grpcCall('ModelInfer', request, KEYS.ads);
    expect(grpc.status[refused.code]).toBe('RESOURCE_EXHAUSTED');
    expect(refused.details).toMatch(/^tenant 'ads' is over its host memory quota: .* of its 8\.0 MiB host quota$/);
    expect(refused.details).not.toMatch(/fraud|ops/);
  });

  it('the typed client sends its apiKey as a bearer token', async () => {
    const ads = createClient(served.server.grpcAddress, { apiKey: KEYS.ads });
    const anonymous = createClient(served.server.grpcAddress);
    try {
      const result = await ads.infer('ads_model', { INPUT0: { shape: [1, 4], data: new Float32Array([1, 2, 3, 4]) } });
      expect(Array.from(result.output<Float32Array>('OUTPUT0').data)).toEqual([1, 2, 3, 4]);
      expect((await ads.repositoryIndex()).map((m) => m.name)).toEqual(['ads_model']);
      const refused = await anonymous.repositoryIndex().catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(InferenceError);
      expect((refused as InferenceError).code).toBe(grpc.status.UNAUTHENTICATED);
      expect(() => createClient(served.server.grpcAddress, { apiKey: 'has a space' })).toThrow(
        /^apiKey: expected printable ASCII without spaces .* got a string of 11 characters/,
      );
    } finally {
      ads.close();
      anonymous.close();
    }
  });
});

/** A request over node:http, with the key as a bearer token when given. */
function rest(
  method: 'GET' | 'POST',
  route: string,
  secret: string | undefined,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const request = http.request(
      {
        host: '127.0.0.1',
        port: served.server.httpPort,
        method,
        path: route,
        agent: false,
        headers: {
          ...(secret === undefined ? {} : { authorization: `Bearer ${secret}` }),
          ...(payload === undefined ? {} : { 'content-length': String(payload.length) }),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

const REST_SCOPED: readonly { what: string; method: 'GET' | 'POST'; route: (model: string) => string; body?: unknown }[] = [
  { what: 'metadata', method: 'GET', route: (m) => `/v2/models/${m}` },
  { what: 'ready', method: 'GET', route: (m) => `/v2/models/${m}/ready` },
  { what: 'config', method: 'GET', route: (m) => `/v2/models/${m}/config` },
  { what: 'statistics', method: 'GET', route: (m) => `/v2/models/${m}/stats` },
  {
    what: 'infer',
    method: 'POST',
    route: (m) => `/v2/models/${m}/infer`,
    body: { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] },
  },
];

describe('API keys over REST', () => {
  for (const { what, method, route, body } of REST_SCOPED) {
    it(`${what}: 401 without a key or with a wrong one, 404 as missing for another tenant's model, 200 with the right key`, async () => {
      const none = await rest(method, route('ads_model'), undefined, body);
      expect([none.status, JSON.parse(none.body)]).toEqual([401, { error: "missing API key: send the header 'authorization: Bearer <key>'" }]);
      const wrong = await rest(method, route('ads_model'), WRONG, body);
      expect(wrong.status).toBe(401);
      expect(JSON.parse(wrong.body).error).toMatch(/^unknown API key/);

      const other = await rest(method, route('ads_model'), KEYS.fraud, body);
      const missing = await rest(method, route('ghost_model'), KEYS.fraud, body);
      expect(other.status).toBe(404);
      expect([other.status, other.body]).toEqual([missing.status, missing.body.replaceAll('ghost_model', 'ads_model')]);

      expect((await rest(method, route('ads_model'), KEYS.ads, body)).status).toBe(200);
      expect((await rest(method, route('ads_model'), KEYS.ops, body)).status).toBe(200);
    });
  }

  it('server metadata needs a key; the index and statistics list only the caller\'s models', async () => {
    expect((await rest('GET', '/v2', undefined)).status).toBe(401);
    expect((await rest('GET', '/v2', KEYS.ads)).status).toBe(200);
    expect((await rest('POST', '/v2/repository/index', undefined)).status).toBe(401);
    const index = async (secret: string) => JSON.parse((await rest('POST', '/v2/repository/index', secret)).body).map((m: Message) => m['name']).sort();
    expect(await index(KEYS.ads)).toEqual(['ads_model']);
    expect(await index(KEYS.ops)).toEqual(['ads_model', 'fraud_model']);
    const stats = async (secret: string) => JSON.parse((await rest('GET', '/v2/models/stats', secret)).body).model_stats.map((m: Message) => m['name']);
    expect(await stats(KEYS.fraud)).toEqual(['fraud_model']);
  });

  it('health probes need no key; /healthz lists the models for the admin key only', async () => {
    expect((await rest('GET', '/v2/health/live', undefined)).status).toBe(200);
    expect((await rest('GET', '/v2/health/ready', undefined)).status).toBe(200);
    for (const secret of [undefined, WRONG, KEYS.ads]) {
      const bare = await rest('GET', '/healthz', secret);
      expect([bare.status, JSON.parse(bare.body)]).toEqual([200, { status: 'ready' }]);
    }
    const full = JSON.parse((await rest('GET', '/healthz', KEYS.ops)).body);
    expect(full.status).toBe('ready');
    expect(full.models.map((m: Message) => m['name']).sort()).toEqual(['ads_model', 'fraud_model']);
  });
});

describe('admin: load and unload', () => {
  it('are refused without the admin key (PERMISSION_DENIED, 403) and work with it, on both doors', async () => {
    const unload = { model_name: 'fraud_model' };
    expect(grpc.status[(await grpcCall('RepositoryModelUnload', unload, undefined)).code]).toBe('UNAUTHENTICATED');
    for (const secret of [KEYS.fraud, KEYS.ads]) {
      const refused = await grpcCall('RepositoryModelUnload', unload, secret);
      expect(grpc.status[refused.code]).toBe('PERMISSION_DENIED');
      expect(refused.details).toMatch(/^RepositoryModelUnload needs an API key of the admin tenant \(--admin-tenant\); this key belongs to tenant '(fraud|ads)'$/);
    }
    const restRefused = await rest('POST', '/v2/repository/models/fraud_model/unload', KEYS.fraud);
    expect([restRefused.status, JSON.parse(restRefused.body).error]).toEqual([
      403,
      "RepositoryModelUnload needs an API key of the admin tenant (--admin-tenant); this key belongs to tenant 'fraud'",
    ]);
    expect((await rest('POST', '/v2/repository/models/fraud_model/load', undefined)).status).toBe(401);

    // The admin unloads over gRPC; the tenant still sees its model, now unavailable.
    expect(grpc.status[(await grpcCall('RepositoryModelUnload', unload, KEYS.ops)).code]).toBe('OK');
    const index = (await grpcCall('RepositoryIndex', {}, KEYS.fraud)).response!['models'];
    expect(index.map((m: Message) => [m['name'], m['state']])).toEqual([['fraud_model', 'UNAVAILABLE']]);
    expect(grpc.status[(await grpcCall('ModelInfer', inferRequest('fraud_model'), KEYS.fraud)).code]).toBe('UNAVAILABLE');

    // A tenant's key cannot load it back; the admin's can, over REST and with the typed client.
    expect((await rest('POST', '/v2/repository/models/fraud_model/load', KEYS.fraud)).status).toBe(403);
    expect((await rest('POST', '/v2/repository/models/fraud_model/load', KEYS.ops)).status).toBe(200);
    const admin = createClient(served.server.grpcAddress, { apiKey: KEYS.ops });
    try {
      await admin.unload('fraud_model');
      await admin.load('fraud_model');
    } finally {
      admin.close();
    }
    expect(grpc.status[(await grpcCall('ModelInfer', inferRequest('fraud_model'), KEYS.fraud)).code]).toBe('OK');
  });
});

describe('logs', () => {
  it('record the tenant of each request and never a key', async () => {
    const accessed = served.server.logs.filter((line) => line['component'] === 'access');
    expect(accessed.some((line) => line['tenant'] === 'ads' && line['model'] === 'ads_model' && line['status'] === 'OK')).toBe(true);
    // A request for a model the caller may not see is logged with the caller's tenant.
    expect(accessed.some((line) => line['tenant'] === 'fraud' && line['model'] === 'ads_model' && line['status'] === 'NOT_FOUND')).toBe(true);
    // Refusals are logged, with the reason and without the key.
    const refused = served.server.logs.filter((line) => line['component'] === 'auth' && line['msg'] === 'call refused');
    expect(refused.some((line) => line['door'] === 'grpc' && line['kind'] === 'unauthenticated')).toBe(true);
    expect(refused.some((line) => line['door'] === 'http' && line['kind'] === 'unauthenticated')).toBe(true);

    const access = served.server.logs.find((line) => line['msg'] === 'access control')!;
    expect(access).toMatchObject({ require_api_key: true, admin_tenant: 'ops', tenants_with_keys: ['ads', 'fraud', 'ops'] });

    // The audit: every line the server printed, stdout and stderr, JSON or not.
    const output = served.server.output();
    expect(output.length).toBeGreaterThan(1000);
    for (const secret of ALL_SECRETS) expect(output.includes(secret)).toBe(false);
    // Nor any bearer token but the placeholder of the refusal messages.
    expect(output).not.toMatch(/Bearer\s+(?!<key>)\S/);
  });
});
