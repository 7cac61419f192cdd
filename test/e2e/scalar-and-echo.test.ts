/**
 * A real server, a real gRPC client (proto-loader): scalar (rank-0) models
 * load and serve with shape [], whether their config is auto-completed or
 * written Triton's way (dims [1] with reshape []); request-supplied names come
 * back bounded (a 100 KB model name is NOT_FOUND with a short message and a
 * short access-log line); a dimension of 2^63-1 is too large; and scheduling
 * parameters are type-checked on a model without dynamic batching.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { writeScalarModels } from '../fixtures/scalar-models.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeSampleRepository(dir, { only: ['fraud_gbdt'] });
      await writeScalarModels(dir, 'auto');
      await writeScalarModels(dir, 'triton', 'triton_');
    }),
  );
});

afterAll(() => served?.close());

const SCALAR_MODELS = ['dot', 'add_scalars', 'scale_batch', 'triton_dot', 'triton_add_scalars', 'triton_scale_batch'];

function infer(request: Message): Promise<Message> {
  return served.client.call('ModelInfer', request);
}

const addScalars = (model: string, shape: number[], parameters: Message = {}): Message => ({
  model_name: model,
  inputs: [
    { name: 'x', datatype: 'FP32', shape },
    { name: 'y', datatype: 'FP32', shape },
  ],
  raw_input_contents: [f32Bytes([1.5]), f32Bytes([2.25])],
  parameters,
});

const dot = (model: string): Message => ({
  model_name: model,
  inputs: [
    { name: 'a', datatype: 'FP32', shape: [3] },
    { name: 'b', datatype: 'FP32', shape: [3] },
  ],
  raw_input_contents: [f32Bytes([1, 2, 3]), f32Bytes([4, 5, 6])],
});

const fraud = (shape: (number | string)[], parameters: Message = {}): Message => ({
  model_name: 'fraud_gbdt',
  inputs: [{ name: 'features', datatype: 'FP32', shape }],
  raw_input_contents: [f32Bytes(new Float32Array(16).fill(0.5))],
  parameters,
});

/** Output shapes as plain numbers (proto-loader gives int64 as strings). */
const shapeOf = (response: Message, index = 0): number[] => (response['outputs'][index].shape as string[]).map(Number);

describe('scalar models', () => {
  it('every scalar model loads and turns ready', async () => {
    for (const name of SCALAR_MODELS) {
      expect((await served.client.call('ModelReady', { name }))['ready'], name).toBe(true);
    }
  });

  it('auto-complete: metadata and config say shape [] for a scalar; requests of shape [] are answered with shape []', async () => {
    const metadata = await served.client.call('ModelMetadata', { name: 'add_scalars' });
    expect(metadata['inputs'].map((t: Message) => t['shape'])).toEqual([[], []]);
    expect(metadata['outputs'][0].shape).toEqual([]);
    const config = (await served.client.call('ModelConfig', { name: 'dot' }))['config'];
    expect(config['max_batch_size']).toBe(0);
    expect(config['output'][0].dims).toEqual([]);

    const sum = await infer(addScalars('add_scalars', []));
    expect(shapeOf(sum)).toEqual([]);
    expect(Array.from(readF32(sum['raw_output_contents'][0]))).toEqual([3.75]);

    const product = await infer(dot('dot'));
    expect(shapeOf(product)).toEqual([]);
    expect(Array.from(readF32(product['raw_output_contents'][0]))).toEqual([32]);
  });

  it('auto-complete: a scalar model refuses shape [1] with expected vs actual', async () => {
    const err = await served.client.callError('ModelInfer', addScalars('add_scalars', [1]));
    expect(grpc.status[err.code]).toBe('INVALID_ARGUMENT');
    expect(err.details).toMatch(/input 'x': expected rank 0 with shape \[\], got rank 1 with shape \[1\]/);
  });

  it("Triton-style config (dims [1], reshape []): the client sends [1] or []; the answer has the config's dims [1]", async () => {
    const metadata = await served.client.call('ModelMetadata', { name: 'triton_add_scalars' });
    expect(metadata['inputs'][0].shape).toEqual(['1']);
    for (const shape of [[1], []]) {
      const sum = await infer(addScalars('triton_add_scalars', shape));
      expect(shapeOf(sum)).toEqual([1]);
      expect(Array.from(readF32(sum['raw_output_contents'][0]))).toEqual([3.75]);
    }
    const product = await infer(dot('triton_dot'));
    expect(shapeOf(product)).toEqual([1]);
    expect(Array.from(readF32(product['raw_output_contents'][0]))).toEqual([32]);
  });

  it('a batch of scalars goes through the dynamic batcher as [rows, 1] or [rows]', async () => {
    for (const model of ['scale_batch', 'triton_scale_batch']) {
      for (const shape of [[3, 1], [3]]) {
        const response = await infer({
          model_name: model,
          inputs: [{ name: 'x', datatype: 'FP32', shape }],
          raw_input_contents: [f32Bytes([1, 2, 3])],
        });
        expect(shapeOf(response), `${model} ${JSON.stringify(shape)}`).toEqual([3, 1]);
        expect(Array.from(readF32(response['raw_output_contents'][0]))).toEqual([2, 4, 6]);
      }
    }
  });
});

describe('bounded echoes', () => {
  it('a 100 KB model name is NOT_FOUND with a short message, and its access-log line is short', async () => {
    const name = `huge-${'n'.repeat(100 * 1024)}`;
    const err = await served.client.callError('ModelInfer', { ...fraud([1, 16]), model_name: name });
    expect(grpc.status[err.code]).toBe('NOT_FOUND');
    expect(err.details).toMatch(/^model 'huge-n{251}'…\(\+102149 chars\) is not found; available models: /);
    expect(err.details.length).toBeLessThan(512);

    const line = await served.server.waitForLog(
      (l) => l['component'] === 'access' && l['status'] === 'NOT_FOUND' && String(l['model']).startsWith('huge-'),
    );
    expect(line['model']).toBe(`huge-${'n'.repeat(251)}…(+102149 chars)`);
    expect(JSON.stringify(line).length).toBeLessThan(1500);
  });

  it('the same name is bounded in ModelMetadata and ModelReady errors', async () => {
    const name = 'm'.repeat(100 * 1024);
    for (const method of ['ModelMetadata', 'ModelReady', 'ModelConfig']) {
      const err = await served.client.callError(method, { name });
      expect(grpc.status[err.code], method).toBe('NOT_FOUND');
      expect(err.details.length, method).toBeLessThan(512);
    }
  });

  it('control characters in a request name are escaped in the error and the log', async () => {
    const err = await served.client.callError('ModelInfer', { ...fraud([1, 16]), model_name: 'bad\nname\x1b[2J' });
    expect(grpc.status[err.code]).toBe('NOT_FOUND');
    expect(err.details).toMatch(/^model 'bad\\nname\\x1B\[2J' is not found/);
    const line = await served.server.waitForLog((l) => l['component'] === 'access' && String(l['model']).startsWith('bad'));
    expect(line['model']).toBe('bad\\nname\\x1B[2J');
  });

  it('a dimension of 2^63-1 is too large, not negative', async () => {
    const err = await served.client.callError('ModelInfer', fraud(['9223372036854775807', 16]));
    expect(grpc.status[err.code]).toBe('INVALID_ARGUMENT');
    expect(err.details).toMatch(/input 'features': shape dimension 0 is 9223372036854775807, too large/);
    expect(err.details).not.toMatch(/negative/);
  });
});

describe('scheduling parameters on a model without dynamic batching', () => {
  it('priority "abc" on fraud_gbdt is INVALID_ARGUMENT naming the parameter, the expected type and what was sent', async () => {
    const err = await served.client.callError('ModelInfer', fraud([1, 16], { priority: { string_param: 'abc' } }));
    expect(grpc.status[err.code]).toBe('INVALID_ARGUMENT');
    expect(err.details).toBe(
      "parameter 'priority': expected an unsigned integer (uint64_param or int64_param >= 0), got string_param 'abc'",
    );
  });

  it('a negative timeout is refused on a scalar model too; valid values are accepted', async () => {
    const err = await served.client.callError('ModelInfer', addScalars('add_scalars', [], { timeout: { int64_param: '-5' } }));
    expect(grpc.status[err.code]).toBe('INVALID_ARGUMENT');
    expect(err.details).toMatch(/^parameter 'timeout': expected an unsigned integer .*got int64_param -5$/);
    const ok = await infer(fraud([1, 16], { priority: { uint64_param: '1' }, timeout: { int64_param: '1000000' } }));
    expect(shapeOf(ok)).toEqual([1, 1]);
  });
});
