/**
 * hotpath/client end to end: every call of the typed Node client against a
 * real server process, scores checked against a direct onnxruntime run, and
 * errors checked for their gRPC status and the server's message.
 */
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bytesToStrings,
  createClient,
  InferenceError,
  status,
  StreamInferError,
  type HotpathClient,
} from '../../src/client/index.js';
import { directRun, sampleRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;
let client: HotpathClient;

beforeAll(async () => {
  served = await serveRepository(sampleRepository(['ctr_mlp', 'typed_identity']));
  client = createClient(served.server.grpcAddress, { timeoutMs: 30_000, metadata: { 'x-client': 'node-client-test' } });
});

afterAll(async () => {
  client?.close();
  await served?.close();
});

function features(seed: number, rows: number): Float32Array {
  return Float32Array.from({ length: rows * 32 }, (_, i) => Math.sin(seed * 3.1 + i * 0.37));
}

async function reference(data: Float32Array, rows: number): Promise<Float32Array> {
  const results = await directRun(path.join(served.dir, 'ctr_mlp', '1', 'model.onnx'), {
    features: new ort.Tensor('float32', data, [rows, 32]),
  });
  return results['score']!.data as Float32Array;
}

function expectClose(actual: Float32Array, expected: Float32Array): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
}

async function rejection(promise: Promise<unknown>): Promise<InferenceError> {
  const err = await promise.then(
    () => {
      throw new Error('the call succeeded but an error was expected');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InferenceError);
  return err as InferenceError;
}

describe('server and model queries', () => {
  it('answers live, ready and metadata', async () => {
    expect(await client.live()).toBe(true);
    expect(await client.ready()).toBe(true);
    expect(await client.ready('ctr_mlp')).toBe(true);
    expect(await client.ready('ctr_mlp', { version: 1 })).toBe(true);
    const server = await client.metadata();
    expect(server.name).toBe('hotpath');
    expect(server.extensions).toContain('model_repository');
    expect(await client.metadata('ctr_mlp')).toEqual({
      name: 'ctr_mlp',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 32] }],
      outputs: [{ name: 'score', datatype: 'FP32', shape: [-1, 1] }],
    });
  });

  it('returns the model config as the generated ModelConfig message', async () => {
    const config = await client.config('ctr_mlp');
    expect(config.name).toBe('ctr_mlp');
    expect(config.maxBatchSize).toBe(64);
    expect(config.input.map((i) => i.name)).toEqual(['features']);
    expect(config.input[0]!.dims).toEqual([32n]);
  });

  it('lists the repository and the statistics', async () => {
    const index = await client.repositoryIndex();
    expect(index).toEqual(
      expect.arrayContaining([
        { name: 'ctr_mlp', version: '1', state: 'READY', reason: '' },
        { name: 'typed_identity', version: '1', state: 'READY', reason: '' },
      ]),
    );
    await client.infer('ctr_mlp', { features: { shape: [1, 32], data: features(9, 1) } });
    const [stats] = await client.statistics('ctr_mlp', { version: '1' });
    expect(stats).toMatchObject({ name: 'ctr_mlp', version: '1' });
    expect(stats!.inferenceStats!.success!.count).toBeGreaterThanOrEqual(1n);
    expect((await client.statistics()).map((s) => s.name).sort()).toEqual(['ctr_mlp', 'typed_identity']);
  });

  it('rejects an unknown model with NOT_FOUND and the server message', async () => {
    const err = await rejection(client.ready('no_such_model'));
    expect(err.code).toBe(status.NOT_FOUND);
    expect(err.codeName).toBe('NOT_FOUND');
    expect(err.message).toMatch(/no_such_model/);
  });
});

describe('infer', () => {
  it('scores ctr_mlp like a direct onnxruntime run, echoing id and version', async () => {
    const data = features(1, 3);
    const result = await client.infer('ctr_mlp', { features: { shape: [3, 32], data } }, { id: 'req-7' });
    expect(result).toMatchObject({ modelName: 'ctr_mlp', modelVersion: '1', id: 'req-7' });
    const score = result.output<Float32Array>('score');
    expect(score).toMatchObject({ name: 'score', datatype: 'FP32', shape: [3, 1] });
    expect(score.data).toBeInstanceOf(Float32Array);
    expectClose(score.data, await reference(data, 3));
    expect(() => result.output('nope')).toThrow(/no output 'nope' \(it has: score\)/);
  });

  it('round-trips every typed_identity datatype: FP32, FP16, INT64, BOOL and BYTES', async () => {
    const shape = [2, 4];
    const fp32 = Float32Array.from([0, 1.5, -2, 3, 4, 5, 6, 7.25]);
    const fp16 = Uint16Array.from([0x3c00, 0x4000, 0xc000, 0x3800, 0, 0x7bff, 0x0001, 0x8000]); // 1, 2, -2, 0.5, ...
    const int64 = BigInt64Array.from([1n, -2n, 3n, 2n ** 40n, 5n, 6n, -(2n ** 62n), 8n]);
    const result = await client.infer(
      'typed_identity',
      {
        in_fp32: { shape, data: fp32 },
        in_fp16: { datatype: 'FP16', shape, data: fp16 },
        in_int64: { shape, data: int64 },
        in_bool: { shape, data: [true, false, true, false, false, false, true, true] },
        in_bytes: { shape, data: ['a', 'bb', 'ccc', 'dddd', 'é', '', 'x y', '0'] },
      },
      { outputs: ['out_fp32', 'out_fp16', 'out_int64', 'out_bool', 'out_bytes'] },
    );
    expect(result.output('out_fp32')).toMatchObject({ datatype: 'FP32', shape, data: fp32 });
    expect(result.output('out_fp16')).toMatchObject({ datatype: 'FP16', shape, data: fp16 });
    expect(result.output('out_int64')).toMatchObject({ datatype: 'INT64', shape, data: int64 });
    expect(result.output('out_bool')).toMatchObject({ datatype: 'BOOL', shape, data: Uint8Array.from([1, 0, 1, 0, 0, 0, 1, 1]) });
    const bytes = result.output<Uint8Array[]>('out_bytes');
    expect(bytes).toMatchObject({ datatype: 'BYTES', shape });
    expect(bytesToStrings(bytes.data)).toEqual(['a', 'bb', 'ccc', 'dddd', 'é', '', 'x y', '0']);
  });

  it('takes BOOL as a Uint8Array, BYTES as Uint8Array[], and returns only the outputs asked for', async () => {
    const shape = [1, 4];
    const result = await client.infer(
      'typed_identity',
      {
        in_fp32: { shape, data: [1, 2, 3, 4], datatype: 'FP32' },
        in_fp16: { datatype: 'FP16', shape, data: new Uint16Array(4) },
        in_int64: { shape, data: [1, 2, 3, 4], datatype: 'INT64' },
        in_bool: { datatype: 'BOOL', shape, data: Uint8Array.from([0, 1, 1, 0]) },
        in_bytes: { shape, data: [Uint8Array.of(1, 2), Uint8Array.of(), Uint8Array.of(0x41), Uint8Array.of(0x7a, 0x7a)] },
      },
      { outputs: ['out_bool', 'out_bytes'] },
    );
    expect(Object.keys(result.outputs).sort()).toEqual(['out_bool', 'out_bytes']);
    expect(result.output('out_bool').data).toEqual(Uint8Array.from([0, 1, 1, 0]));
    expect(result.output('out_bytes').data).toEqual([Uint8Array.of(1, 2), Uint8Array.of(), Uint8Array.of(0x41), Uint8Array.of(0x7a, 0x7a)]);
  });

  it('rejects a request the server refuses with INVALID_ARGUMENT, the message naming the input', async () => {
    const err = await rejection(client.infer('ctr_mlp', { features: { shape: [1, 16], data: new Float32Array(16) } }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.message).toMatch(/features/);
    expect(err.stack).toMatch(/node-client\.test\.ts/);
  });

  it('sends headers and returns the server request id on errors', async () => {
    const err = await rejection(
      client.infer('missing_model', { x: new Float32Array(1) }, { metadata: { 'x-request-id': 'trace-me-42' } }),
    );
    expect(err.code).toBe(status.NOT_FOUND);
    expect(err.requestId).toBe('trace-me-42');
  });

  it('catches inconsistent inputs before sending anything', async () => {
    await expect(client.infer('ctr_mlp', { features: { shape: [2, 32], data: new Float32Array(32) } })).rejects.toThrow(
      /input 'features': shape \[2,32\] has 64 elements, but the data has 32/,
    );
    await expect(client.infer('ctr_mlp', { features: { datatype: 'FP32', shape: [1, 2], data: new Float64Array(2) } })).rejects.toThrow(
      /FP32 data must be a Float32Array, got a Float64Array/,
    );
    await expect(client.infer('ctr_mlp', { features: [1, 2, 3] as never })).rejects.toThrow(TypeError);
  });

  it('rejects with CANCELLED when its AbortSignal fires', async () => {
    const controller = new AbortController();
    controller.abort();
    const err = await rejection(client.infer('ctr_mlp', { features: { shape: [1, 32], data: features(2, 1) } }, { signal: controller.signal }));
    expect(err.code).toBe(status.CANCELLED);
  });
});

describe('stream', () => {
  it('matches each response to its request and fails only the bad one', async () => {
    const stream = client.stream();
    const inputs = [1, 2, 3, 4, 5].map((k) => features(20 + k, k));
    const good = inputs.map((data, k) => stream.infer('ctr_mlp', { features: { shape: [k + 1, 32], data } }));
    const bad = stream.infer('ctr_mlp', { features: { shape: [1, 8], data: new Float32Array(8) } }, { id: 'bad-one' });
    const named = stream.infer('ctr_mlp', { features: { shape: [1, 32], data: inputs[0]!.subarray(0, 32) } }, { id: 'mine' });
    const badError = await bad.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(badError).toBeInstanceOf(StreamInferError);
    expect((badError as StreamInferError).id).toBe('bad-one');
    expect((badError as StreamInferError).message).toMatch(/features/);
    const results = await Promise.all(good);
    for (const [k, result] of results.entries()) {
      const score = result.output<Float32Array>('score');
      expect(score.shape).toEqual([k + 1, 1]);
      expectClose(score.data, await reference(inputs[k]!, k + 1));
    }
    expect((await named).id).toBe('mine');
    await stream.end();
    expect(stream.pending).toBe(0);
    await expect(stream.infer('ctr_mlp', { features: new Float32Array(32) })).rejects.toThrow();
  });

  it('refuses a duplicate id while the first is still waiting', async () => {
    const stream = client.stream();
    const first = stream.infer('ctr_mlp', { features: { shape: [1, 32], data: features(3, 1) } }, { id: 'same' });
    await expect(stream.infer('ctr_mlp', { features: { shape: [1, 32], data: features(4, 1) } }, { id: 'same' })).rejects.toThrow(
      /id 'same' is still waiting/,
    );
    await first;
    await stream.end();
  });

  it('rejects what is still waiting with CANCELLED when the stream is cancelled', async () => {
    const stream = client.stream();
    const waiting = stream.infer('ctr_mlp', { features: { shape: [64, 32], data: features(5, 64) } });
    stream.cancel();
    const err = await rejection(waiting);
    expect(err.code).toBe(status.CANCELLED);
  });
});

describe('repository control', () => {
  it('unloads and loads a model', async () => {
    await client.unload('typed_identity');
    expect(await client.ready('typed_identity')).toBe(false);
    const err = await rejection(client.infer('typed_identity', { in_fp32: { shape: [1, 4], data: new Float32Array(4) } }));
    expect(err.code).toBe(status.UNAVAILABLE);
    await client.load('typed_identity');
    expect(await client.ready('typed_identity')).toBe(true);
  });

  it('reports a load of an unknown model with its status', async () => {
    const err = await rejection(client.load('no_such_model'));
    expect([status.NOT_FOUND, status.INVALID_ARGUMENT]).toContain(err.code);
    expect(err.message).toMatch(/no_such_model/);
  });
});
