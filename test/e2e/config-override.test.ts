/**
 * Triton's config override on load, against real servers: a load whose
 * `config` parameter carries a ModelConfig as JSON replaces config.pbtxt for
 * that load (max_batch_size 4 → 8, as ModelConfig and batched inference see
 * it), over gRPC (proto-loader client) and REST (node:http); a later load
 * without it reads config.pbtxt again. A bad override (not JSON, an unknown
 * key, a wrong type, a config the model contradicts) is INVALID_ARGUMENT
 * naming the parameter and the field, and the version already loaded keeps
 * serving. A field hotpath ignores is logged as a warning. `file:` parameters
 * stay refused. With --require-api-key, only the
 * admin tenant's key may override (PERMISSION_DENIED otherwise).
 */
import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
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

/** The identity model's whole config as JSON, Triton's spelling (snake_case, enum names). */
function identityConfig(maxBatchSize: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    name: 'ident',
    max_batch_size: maxBatchSize,
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [4] }],
    ...extra,
  });
}

const configParameter = (json: string): Message => ({ config: { string_param: json } });

interface Outcome {
  readonly code: grpc.status;
  readonly details: string;
  readonly response?: Message;
}

async function grpcCall(served: ServedRepository, method: string, request: Message, secret?: string): Promise<Outcome> {
  const metadata = new grpc.Metadata();
  if (secret !== undefined) metadata.set('authorization', `Bearer ${secret}`);
  try {
    return { code: grpc.status.OK, details: '', response: await served.client.call(method, request, metadata) };
  } catch (err) {
    const failure = err as { code: grpc.status; details: string };
    return { code: failure.code, details: failure.details };
  }
}

async function maxBatchSize(served: ServedRepository, secret?: string): Promise<number> {
  const answer = await grpcCall(served, 'ModelConfig', { name: 'ident' }, secret);
  expect(grpc.status[answer.code]).toBe('OK');
  return answer.response!['config']['max_batch_size'] as number;
}

/** A batch of `rows` rows of 4 floats, answered with the same values. */
async function inferRows(served: ServedRepository, rows: number): Promise<Outcome> {
  const values = Array.from({ length: rows * 4 }, (_, i) => i);
  const answer = await grpcCall(served, 'ModelInfer', {
    model_name: 'ident',
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [rows, 4] }],
    raw_input_contents: [f32Bytes(values)],
  });
  if (answer.code === grpc.status.OK) {
    expect(Buffer.from(answer.response!['raw_output_contents'][0] as Buffer)).toEqual(f32Bytes(values));
  }
  return answer;
}

function postJson(port: number, route: string, body: unknown): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const request = http.request(
      { host: '127.0.0.1', port, path: route, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: response.statusCode!, json: text === '' ? undefined : JSON.parse(text) });
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

function getJson(port: number, route: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    }).on('error', reject);
  });
}

/** `ident`: 4 floats a row, max_batch_size 4, and a dynamic_batching block that an override leaves out. */
const identityRepository = () =>
  tempRepository(async (dir) => {
    await writeIdentityModel(dir, { name: 'ident', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [4] });
    await appendFile(path.join(dir, 'ident', 'config.pbtxt'), 'dynamic_batching { max_queue_delay_microseconds: 100 }\n');
  });

describe('config override without API keys (every caller may load)', () => {
  let served: ServedRepository;
  beforeAll(async () => {
    served = await serveRepository(identityRepository(), ['--model-control-mode=explicit', '--load-model', 'ident']);
  });
  afterAll(() => served?.close());

  it('gRPC: an override replaces config.pbtxt for that load; a later load without one reads config.pbtxt again', async () => {
    expect(await maxBatchSize(served)).toBe(4);
    expect(grpc.status[(await inferRows(served, 8)).code]).toBe('INVALID_ARGUMENT');
    expect((await grpcCall(served, 'ModelConfig', { name: 'ident' })).response!['config']['dynamic_batching']).toMatchObject({ max_queue_delay_microseconds: '100' });

    const load = await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident', parameters: configParameter(identityConfig(8)) });
    expect([grpc.status[load.code], load.details]).toEqual(['OK', '']);
    expect(await maxBatchSize(served)).toBe(8);
    expect(grpc.status[(await inferRows(served, 8)).code]).toBe('OK');

    const plain = await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident' });
    expect(grpc.status[plain.code]).toBe('OK');
    expect(await maxBatchSize(served)).toBe(4);
  });

  it('gRPC: a field hotpath ignores is logged as a warning, as config.pbtxt\'s are', async () => {
    const load = await grpcCall(served, 'RepositoryModelLoad', {
      model_name: 'ident',
      parameters: configParameter(identityConfig(4, { optimization: { priority: 'PRIORITY_MAX' } })),
    });
    expect(grpc.status[load.code]).toBe('OK');
    const warning = await served.server.waitForLog((line) => typeof line['msg'] === 'string' && line['msg'].startsWith('config override:'));
    expect(warning).toMatchObject({ level: 'warn', model: 'ident' });
    expect(warning['msg']).toMatch(/optimization.*not supported by hotpath and is ignored/);
    await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident' });
  });

  it('gRPC: the override is a whole config, not a patch: what it leaves out is auto-completed from the model', async () => {
    // Only max_batch_size: inputs and outputs come from the ONNX model, as for a config.pbtxt that says only that.
    const load = await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident', parameters: configParameter('{"maxBatchSize": 2}') });
    expect(grpc.status[load.code]).toBe('OK');
    const answer = await grpcCall(served, 'ModelConfig', { name: 'ident' });
    expect(answer.response!['config']).toMatchObject({ max_batch_size: 2, input: [expect.objectContaining({ name: 'INPUT0' })] });
    // config.pbtxt's dynamic_batching block is gone: the override was not merged with it.
    expect(answer.response!['config']['dynamic_batching']).toBeUndefined();
    await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident' });
  });

  it('gRPC: a bad override is INVALID_ARGUMENT naming the parameter and the field; the loaded version keeps serving', async () => {
    const cases: [string, RegExp][] = [
      ['{"max_batch_size": 8,', /^RepositoryModelLoad: parameter 'config': expected a ModelConfig as JSON, got text that is not JSON \(/],
      ['[1, 2]', /^RepositoryModelLoad: parameter 'config': expected a ModelConfig as a JSON object, got an array$/],
      [identityConfig(8, { max_batch_sise: 8 }), /^RepositoryModelLoad: parameter 'config': .*ModelConfig from JSON: key "max_batch_sise" is unknown$/],
      ['{"max_batch_size": "eight"}', /^RepositoryModelLoad: parameter 'config': cannot decode field ModelConfig\.max_batch_size from JSON: expected number/],
      ['{"input": [{"name": "INPUT0", "data_type": "TYPE_FP33"}]}', /^RepositoryModelLoad: parameter 'config': .*DataType from JSON: "TYPE_FP33"$/],
    ];
    for (const [json, message] of cases) {
      const refused = await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident', parameters: configParameter(json) });
      expect([grpc.status[refused.code], refused.details]).toEqual(['INVALID_ARGUMENT', expect.stringMatching(message)]);
    }
    // Well-formed, but the config checks of config.pbtxt refuse it: the load fails, the serving version stays.
    const checked: [string, RegExp][] = [
      [identityConfig(-1), /^failed to load model 'ident': config override: max_batch_size: expected >= 0, got -1$/],
      [identityConfig(8, { name: 'other' }), /^failed to load model 'ident': config override: name: expected 'ident' \(the model directory name\), got 'other'$/],
      [identityConfig(8, { dynamic_batching: { preferred_batch_size: [16] } }), /config override: dynamic_batching\.preferred_batch_size: expected values in \[1, 8\]/],
      [identityConfig(8, { input: [{ name: 'NOPE', data_type: 'TYPE_FP32', dims: [4] }] }), /^failed to load model 'ident': .*NOPE/],
    ];
    for (const [json, message] of checked) {
      const refused = await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident', parameters: configParameter(json) });
      expect([grpc.status[refused.code], refused.details]).toEqual(['INVALID_ARGUMENT', expect.stringMatching(message)]);
      expect(grpc.status[(await inferRows(served, 4)).code]).toBe('OK');
    }
    expect(await maxBatchSize(served)).toBe(4);
    expect((await grpcCall(served, 'ModelReady', { name: 'ident' })).response!['ready']).toBe(true);
  });

  it('gRPC: config must be a string; file: overrides and other parameters stay refused', async () => {
    const typed = await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident', parameters: { config: { int64_param: '8' } } });
    expect([grpc.status[typed.code], typed.details]).toEqual([
      'INVALID_ARGUMENT', "RepositoryModelLoad: parameter 'config': expected a string (a ModelConfig as JSON), got int64Param",
    ]);
    const file = await grpcCall(served, 'RepositoryModelLoad', {
      model_name: 'ident', parameters: { ...configParameter(identityConfig(8)), 'file:1/model.onnx': { bytes_param: Buffer.from('x') } },
    });
    expect([grpc.status[file.code], file.details]).toEqual([
      'INVALID_ARGUMENT',
      "RepositoryModelLoad: parameter 'file:1/model.onnx': file overrides are not supported; model files are read from the model repository only",
    ]);
    const other = await grpcCall(served, 'RepositoryModelLoad', { model_name: 'ident', parameters: { colour: { string_param: 'red' } } });
    expect(other.details).toBe("RepositoryModelLoad: parameter 'colour' not supported; expected none or 'config'");
    expect(await maxBatchSize(served)).toBe(4);
  });

  it('REST: POST /v2/repository/models/ident/load with {"parameters": {"config": ...}} overrides; a bad one is 400', async () => {
    const port = served.server.httpPort;
    const load = await postJson(port, '/v2/repository/models/ident/load', { parameters: { config: identityConfig(8) } });
    expect(load.status).toBe(200);
    const config = await getJson(port, '/v2/models/ident/config');
    expect(config.json).toMatchObject({ name: 'ident', max_batch_size: 8 });

    const bad = await postJson(port, '/v2/repository/models/ident/load', { parameters: { config: '{"max_batch_size": 8' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^RepositoryModelLoad: parameter 'config': expected a ModelConfig as JSON, got text that is not JSON/);
    const file = await postJson(port, '/v2/repository/models/ident/load', { parameters: { 'file:1/model.onnx': 'eA==' } });
    expect(file.status).toBe(400);
    expect(file.json.error).toMatch(/file overrides are not supported/);
    expect((await getJson(port, '/v2/models/ident/config')).json.max_batch_size).toBe(8);

    expect((await postJson(port, '/v2/repository/models/ident/load', {})).status).toBe(200);
    expect((await getJson(port, '/v2/models/ident/config')).json.max_batch_size).toBe(4);
  });
});

describe('config override with --require-api-key', () => {
  const ADMIN = `ops-${randomBytes(18).toString('base64url')}`;
  const TENANT = `ads-${randomBytes(18).toString('base64url')}`;
  let served: ServedRepository;
  let secrets: string;
  beforeAll(async () => {
    secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-keys-'));
    const tenantsFile = path.join(secrets, 'tenants.json');
    await writeFile(tenantsFile, JSON.stringify({ tenants: { ops: { keys: [keyHash(ADMIN)] }, default: { keys: [keyHash(TENANT)] } } }));
    served = await serveRepository(identityRepository(), ['--tenants-file', tenantsFile, '--require-api-key', '--admin-tenant', 'ops']);
  });
  afterAll(async () => {
    await served?.close();
    await rm(secrets, { recursive: true, force: true });
  });

  it("refuses another tenant's key with PERMISSION_DENIED and takes the admin tenant's", async () => {
    const request = { model_name: 'ident', parameters: configParameter(identityConfig(8)) };
    const tenant = await grpcCall(served, 'RepositoryModelLoad', request, TENANT);
    expect(grpc.status[tenant.code]).toBe('PERMISSION_DENIED');
    expect(tenant.details).toMatch(/^RepositoryModelLoad needs an API key of the admin tenant \(--admin-tenant\); this key belongs to tenant 'default'$/);
    expect(await maxBatchSize(served, TENANT)).toBe(4);

    const admin = await grpcCall(served, 'RepositoryModelLoad', request, ADMIN);
    expect(grpc.status[admin.code]).toBe('OK');
    expect(await maxBatchSize(served, TENANT)).toBe(8);
  });
});
