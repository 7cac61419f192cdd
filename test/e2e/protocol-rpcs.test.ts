/**
 * Every non-inference RPC of GRPCInferenceService and grpc.health.v1, plus the
 * HTTP health endpoints, against a real server process.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(sampleRepository(['ctr_mlp', 'fraud_gbdt', 'typed_identity']));
});

afterAll(async () => {
  expect(await served?.close()).toBe(0);
});

describe('server RPCs', () => {
  it('reports live, ready and its metadata', async () => {
    expect(await served.client.call('ServerLive')).toEqual({ live: true });
    expect(await served.client.call('ServerReady')).toEqual({ ready: true });
    const metadata = await served.client.call('ServerMetadata');
    expect(metadata['name']).toBe('hotpath');
    expect(metadata['version']).toMatch(/^\d+\.\d+\.\d+/);
    expect(metadata['extensions']).toContain('model_repository');
  });

  it('answers grpc.health.v1 Check with SERVING', async () => {
    const definition = protoLoader.loadSync(healthProtoPath, { keepCase: true, enums: String });
    const health = (grpc.loadPackageDefinition(definition) as any).grpc.health.v1.Health;
    const healthClient = new health(served.server.grpcAddress, grpc.credentials.createInsecure());
    const response = await new Promise<any>((resolve, reject) =>
      healthClient.Check({ service: '' }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))),
    );
    healthClient.close();
    expect(response.status).toBe('SERVING');
  });

  it('serves GET /v2/health/live and /v2/health/ready', async () => {
    const live = await fetch(`http://127.0.0.1:${served.server.httpPort}/v2/health/live`);
    expect(live.status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${served.server.httpPort}/v2/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true });
  });
});

describe('model RPCs', () => {
  it('reports each sample model ready, and an unknown one NOT_FOUND', async () => {
    for (const name of ['ctr_mlp', 'fraud_gbdt', 'typed_identity']) {
      expect(await served.client.call('ModelReady', { name, version: '' })).toEqual({ ready: true });
      expect(await served.client.call('ModelReady', { name, version: '1' })).toEqual({ ready: true });
    }
    const err = await served.client.callError('ModelReady', { name: 'nope' });
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toMatch(/model 'nope' is not found; available models: ctr_mlp, fraud_gbdt, typed_identity/);
  });

  it('returns model metadata with the batch dimension as -1', async () => {
    const metadata = await served.client.call('ModelMetadata', { name: 'ctr_mlp', version: '' });
    expect(metadata).toMatchObject({
      name: 'ctr_mlp',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'features', datatype: 'FP32', shape: ['-1', '32'] }],
      outputs: [{ name: 'score', datatype: 'FP32', shape: ['-1', '1'] }],
    });
    const typed = await served.client.call('ModelMetadata', { name: 'typed_identity', version: '1' });
    expect(typed['inputs'].map((t: any) => `${t.name}:${t.datatype}`)).toEqual([
      'in_fp32:FP32', 'in_fp16:FP16', 'in_int64:INT64', 'in_bool:BOOL', 'in_bytes:BYTES',
    ]);
  });

  it('returns the model config as parsed from config.pbtxt', async () => {
    const { config } = await served.client.call('ModelConfig', { name: 'ctr_mlp', version: '' });
    expect(config.name).toBe('ctr_mlp');
    expect(config.max_batch_size).toBe(64);
    expect(config.input[0]).toMatchObject({ name: 'features', data_type: 'TYPE_FP32', dims: ['32'] });
    expect(config.dynamic_batching).not.toBeNull();
    expect(config.instance_group[0]).toMatchObject({ count: 1, kind: 'KIND_CPU' });
  });

  it('reports NOT_FOUND for an unknown version and INVALID_ARGUMENT for a malformed one', async () => {
    const missing = await served.client.callError('ModelMetadata', { name: 'ctr_mlp', version: '7' });
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.details).toMatch(/model 'ctr_mlp' version 7 is not found; loaded versions: 1/);
    const malformed = await served.client.callError('ModelConfig', { name: 'ctr_mlp', version: 'v1' });
    expect(malformed.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(malformed.details).toMatch(/model_version 'v1' is not a version number/);
  });

  it('lists the repository index with states', async () => {
    const { models } = await served.client.call('RepositoryIndex', { repository_name: '', ready: false });
    expect(models).toEqual([
      { name: 'ctr_mlp', version: '1', state: 'READY', reason: '' },
      { name: 'fraud_gbdt', version: '1', state: 'READY', reason: '' },
      { name: 'typed_identity', version: '1', state: 'READY', reason: '' },
    ]);
  });

  it('answers shared-memory, trace and log RPCs with UNIMPLEMENTED and a reason', async () => {
    for (const rpc of ['SystemSharedMemoryStatus', 'SystemSharedMemoryRegister', 'CudaSharedMemoryRegister', 'TraceSetting', 'LogSettings']) {
      const err = await served.client.callError(rpc, {});
      expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
      expect(err.details).toMatch(new RegExp(`${rpc} is not implemented by hotpath: .+`));
    }
  });
});
