/**
 * Triton's restricted protocols and APIs: `--grpc-restricted-protocol` and
 * `--http-restricted-api` put protocol groups behind a header value. A call
 * of a restricted group without it is refused as Triton refuses it (gRPC
 * UNAVAILABLE "This protocol is restricted, expecting header
 * 'triton-grpc-protocol-<key>'"; HTTP 403 "This API is restricted,
 * expecting header '<key>'"), groups not named stay open, and grpc.health.v1
 * belongs to the 'health' group on gRPC. With --require-api-key as well,
 * the restriction is checked first, then the key.
 *
 * Real server processes; the proto-loader client and raw grpc-js calls over
 * gRPC, node:http over REST.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { keyHash } from '../../src/security/api-keys.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, type Message } from './helpers/triton-client.js';

const ADMIN_VALUE = 'admin-secret-value-7f3a';
const PROBE_VALUE = 'probe-secret-value-91c2';
let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository((dir) => writeIdentityModel(dir, { name: 'echo', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [-1] })),
    [
      '--grpc-restricted-protocol', `model-repository,model-config,trace:admin-key=${ADMIN_VALUE}`,
      '--grpc-restricted-protocol', `health:probe-key=${PROBE_VALUE}`,
      '--http-restricted-api', `model-repository,model-config:admin-key=${ADMIN_VALUE}`,
      '--http-restricted-api', `health:probe-key=${PROBE_VALUE}`,
    ],
  );
});

afterAll(() => served?.close());

function headers(entries: Record<string, string>): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value);
  return metadata;
}

async function grpcOutcome(method: string, request: Message, metadata: Record<string, string> = {}): Promise<{ code: string; details: string }> {
  try {
    await served.client.call(method, request, headers(metadata));
    return { code: 'OK', details: '' };
  } catch (err) {
    const failure = err as { code: grpc.status; details: string };
    return { code: grpc.status[failure.code]!, details: failure.details };
  }
}

const inferRequest: Message = {
  model_name: 'echo',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2] }],
  raw_input_contents: [f32Bytes([1, 2])],
};

const ADMIN_REFUSAL = { code: 'UNAVAILABLE', details: "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'" };

describe('--grpc-restricted-protocol', () => {
  it('refuses a restricted group without the header, or with a wrong value, UNAVAILABLE naming the header', async () => {
    for (const [method, request] of [
      ['RepositoryIndex', {}],
      ['RepositoryModelLoad', { model_name: 'echo' }],
      ['ModelConfig', { name: 'echo' }],
    ] as const) {
      expect(await grpcOutcome(method, request)).toEqual(ADMIN_REFUSAL);
      expect(await grpcOutcome(method, request, { 'triton-grpc-protocol-admin-key': 'wrong' })).toEqual(ADMIN_REFUSAL);
      // The HTTP form of the header does not open the gRPC door.
      expect(await grpcOutcome(method, request, { 'admin-key': ADMIN_VALUE })).toEqual(ADMIN_REFUSAL);
      expect(await grpcOutcome(method, request, { 'triton-grpc-protocol-admin-key': ADMIN_VALUE })).toEqual({ code: 'OK', details: '' });
    }
  });

  it('checks the restriction before answering UNIMPLEMENTED (trace)', async () => {
    expect(await grpcOutcome('TraceSetting', {})).toEqual(ADMIN_REFUSAL);
    const admitted = await grpcOutcome('TraceSetting', {}, { 'triton-grpc-protocol-admin-key': ADMIN_VALUE });
    expect(admitted.code).toBe('UNIMPLEMENTED');
  });

  it('leaves the groups it does not name open', async () => {
    expect(await grpcOutcome('ModelInfer', inferRequest)).toEqual({ code: 'OK', details: '' });
    expect(await grpcOutcome('ModelMetadata', { name: 'echo' })).toEqual({ code: 'OK', details: '' });
    expect(await grpcOutcome('ModelStatistics', {})).toEqual({ code: 'OK', details: '' });
  });

  it("puts ServerLive, ModelReady and grpc.health.v1 in the 'health' group", async () => {
    const probeRefusal = { code: 'UNAVAILABLE', details: "This protocol is restricted, expecting header 'triton-grpc-protocol-probe-key'" };
    expect(await grpcOutcome('ServerLive', {})).toEqual(probeRefusal);
    expect(await grpcOutcome('ModelReady', { name: 'echo' })).toEqual(probeRefusal);
    expect(await grpcOutcome('ServerReady', {}, { 'triton-grpc-protocol-probe-key': PROBE_VALUE })).toEqual({ code: 'OK', details: '' });

    const check = (metadata: grpc.Metadata) =>
      new Promise<{ code: string; details: string; status?: number }>((resolve) => {
        const client = new grpc.Client(served.server.grpcAddress, grpc.credentials.createInsecure());
        // HealthCheckRequest{service: ""} is the empty message; the answer's field 1 is the status.
        client.makeUnaryRequest('/grpc.health.v1.Health/Check', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), metadata,
          (err, response) => {
            client.close();
            if (err) resolve({ code: grpc.status[err.code]!, details: err.details });
            else resolve({ code: 'OK', details: '', status: (response as Buffer)[1] });
          });
      });
    expect(await check(new grpc.Metadata())).toEqual(probeRefusal);
    expect(await check(headers({ 'triton-grpc-protocol-probe-key': PROBE_VALUE }))).toEqual({ code: 'OK', details: '', status: 1 });
  });
});

function rest(method: 'GET' | 'POST', route: string, extra: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port: served.server.httpPort, method, path: route, agent: false, headers: extra }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on('error', reject);
    request.end();
  });
}

describe('--http-restricted-api', () => {
  it("refuses a restricted API 403 with Triton's message naming the header", async () => {
    const refusal = { status: 403, body: JSON.stringify({ error: "This API is restricted, expecting header 'admin-key'" }) };
    for (const [method, route] of [
      ['POST', '/v2/repository/index'],
      ['POST', '/v2/repository/models/echo/load'],
      ['GET', '/v2/models/echo/config'],
    ] as const) {
      expect(await rest(method, route)).toEqual(refusal);
      expect(await rest(method, route, { 'admin-key': 'wrong' })).toEqual(refusal);
      expect(await rest(method, route, { 'triton-grpc-protocol-admin-key': ADMIN_VALUE })).toEqual(refusal);
      expect((await rest(method, route, { 'admin-key': ADMIN_VALUE })).status).toBe(200);
    }
  });

  it('restricts the health endpoints of the health group, and leaves the rest open', async () => {
    const refusal = { status: 403, body: JSON.stringify({ error: "This API is restricted, expecting header 'probe-key'" }) };
    for (const route of ['/v2/health/live', '/v2/health/ready', '/healthz', '/v2/models/echo/ready']) {
      expect(await rest('GET', route)).toEqual(refusal);
      expect((await rest('GET', route, { 'probe-key': PROBE_VALUE })).status).toBe(200);
    }
    expect((await rest('GET', '/v2/models/echo')).status).toBe(200);
    expect((await rest('GET', '/v2/models/stats')).status).toBe(200);
  });

  it('never logs the values', () => {
    const output = served.server.output();
    expect(output).toContain('call refused');
    expect(output.includes(ADMIN_VALUE)).toBe(false);
    expect(output.includes(PROBE_VALUE)).toBe(false);
  });
});

describe('restricted groups with --require-api-key', () => {
  let keyed: ServedRepository;
  const KEY = 'ads-key-for-restricted-test-5d1e';

  beforeAll(async () => {
    const secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-restricted-'));
    const tenantsFile = path.join(secrets, 'tenants.json');
    await writeFile(tenantsFile, JSON.stringify({ tenants: { default: { keys: [keyHash(KEY)] } } }));
    keyed = await serveRepository(
      tempRepository((dir) => writeIdentityModel(dir, { name: 'echo', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [-1] })),
      ['--tenants-file', tenantsFile, '--require-api-key', '--grpc-restricted-protocol', `inference:admin-key=${ADMIN_VALUE}`],
    );
  });

  afterAll(() => keyed?.close());

  it('checks the restriction first, then the key', async () => {
    const call = async (metadata: Record<string, string>) => {
      try {
        await keyed.client.call('ModelInfer', inferRequest, headers(metadata));
        return 'OK';
      } catch (err) {
        return grpc.status[(err as { code: grpc.status }).code];
      }
    };
    expect(await call({ authorization: `Bearer ${KEY}` })).toBe('UNAVAILABLE');
    expect(await call({ 'triton-grpc-protocol-admin-key': ADMIN_VALUE })).toBe('UNAUTHENTICATED');
    expect(await call({ 'triton-grpc-protocol-admin-key': ADMIN_VALUE, authorization: `Bearer ${KEY}` })).toBe('OK');
  });

  it('ends a stream of a restricted group with the refusal', async () => {
    const streamed = await new Promise<grpc.StatusObject>((resolve) => {
      const stream = keyed.client.raw['ModelStreamInfer']!.call(keyed.client.raw, headers({ authorization: `Bearer ${KEY}` })) as grpc.ClientDuplexStream<Message, Message>;
      stream.on('data', () => undefined);
      stream.on('error', () => undefined);
      stream.on('status', resolve);
      stream.write(inferRequest);
    });
    expect([grpc.status[streamed.code], streamed.details]).toEqual([
      'UNAVAILABLE',
      "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'",
    ]);
  });
});
