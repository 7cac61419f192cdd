/**
 * ModelInfer and ModelStreamInfer on the sample models, checked against a
 * direct onnxruntime-node run of the same model file.
 */
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directRun, sampleRepository } from './helpers/repositories.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(sampleRepository(['ctr_mlp', 'fraud_gbdt']));
});

afterAll(() => served?.close());

/** Deterministic distinct feature rows: row r of request k differs from every other. */
function features(request: number, rows: number, width: number): Float32Array {
  const data = new Float32Array(rows * width);
  for (let i = 0; i < data.length; i++) data[i] = Math.sin(request * 7.31 + i * 0.37) * 2;
  return data;
}

function inferRequest(model: string, data: Float32Array, rows: number, width: number, id = ''): Message {
  return {
    model_name: model,
    id,
    inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, width] }],
    raw_input_contents: [f32Bytes(data)],
  };
}

async function reference(model: string, output: string, data: Float32Array, rows: number, width: number): Promise<Float32Array> {
  const results = await directRun(path.join(served.dir, model, '1', 'model.onnx'), {
    features: new ort.Tensor('float32', data, [rows, width]),
  });
  return results[output]!.data as Float32Array;
}

function expectClose(actual: Float32Array, expected: Float32Array): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < actual.length; i++) expect(actual[i]).toBeCloseTo(expected[i]!, 5);
}

describe('ModelInfer on sample models', () => {
  it('scores ctr_mlp like a direct onnxruntime run, echoing id and version', async () => {
    const data = features(1, 5, 32);
    const response = await served.client.call('ModelInfer', inferRequest('ctr_mlp', data, 5, 32, 'req-1'));
    expect(response).toMatchObject({ model_name: 'ctr_mlp', model_version: '1', id: 'req-1' });
    expect(response['outputs']).toEqual([{ name: 'score', datatype: 'FP32', shape: ['5', '1'], parameters: {}, contents: null }]);
    const scores = readF32(response['raw_output_contents'][0]);
    expectClose(scores, await reference('ctr_mlp', 'score', data, 5, 32));
    // A sigmoid output that varies across rows: the model is not saturated.
    expect(new Set(Array.from(scores, (s) => s.toFixed(4))).size).toBe(5);
  });

  it('scores fraud_gbdt like a direct onnxruntime run', async () => {
    const data = features(2, 7, 16);
    const response = await served.client.call('ModelInfer', inferRequest('fraud_gbdt', data, 7, 16));
    expect(response['outputs'][0]).toMatchObject({ name: 'probability', datatype: 'FP32', shape: ['7', '1'] });
    expectClose(readF32(response['raw_output_contents'][0]), await reference('fraud_gbdt', 'probability', data, 7, 16));
  });

  it('accepts typed fp32_contents as well as raw bytes', async () => {
    const data = features(3, 2, 32);
    const response = await served.client.call('ModelInfer', {
      model_name: 'ctr_mlp',
      model_version: '1',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 32], contents: { fp32_contents: Array.from(data) } }],
    });
    expectClose(readF32(response['raw_output_contents'][0]), await reference('ctr_mlp', 'score', data, 2, 32));
  });

  it('answers 200 concurrent requests with distinct inputs, each with its own result', async () => {
    const count = 200;
    const inputs = Array.from({ length: count }, (_, k) => features(100 + k, 1 + (k % 4), 32));
    const responses = await Promise.all(
      inputs.map((data, k) => served.client.call('ModelInfer', inferRequest('ctr_mlp', data, data.length / 32, 32, `c-${k}`))),
    );
    // Reference: one direct session, each input run on its own.
    const session = await ort.InferenceSession.create(path.join(served.dir, 'ctr_mlp', '1', 'model.onnx'));
    for (let k = 0; k < count; k++) {
      const data = inputs[k]!;
      const expected = (await session.run({ features: new ort.Tensor('float32', data, [data.length / 32, 32]) }))['score']!;
      expect(responses[k]!['id']).toBe(`c-${k}`);
      expectClose(readF32(responses[k]!['raw_output_contents'][0]), expected.data as Float32Array);
    }
    await session.release();
  });

  it('counts successes, rows and executions in ModelStatistics', async () => {
    const before = (await served.client.call('ModelStatistics', { name: 'fraud_gbdt', version: '1' }))['model_stats'][0];
    await served.client.call('ModelInfer', inferRequest('fraud_gbdt', features(9, 3, 16), 3, 16));
    const after = (await served.client.call('ModelStatistics', { name: 'fraud_gbdt', version: '1' }))['model_stats'][0];
    expect(Number(after.inference_count) - Number(before.inference_count)).toBe(3);
    expect(Number(after.execution_count) - Number(before.execution_count)).toBe(1);
    expect(Number(after.inference_stats.success.count) - Number(before.inference_stats.success.count)).toBe(1);
    expect(Number(after.inference_stats.compute_infer.ns)).toBeGreaterThan(Number(before.inference_stats.compute_infer.ns));
    expect(Number(after.last_inference)).toBeGreaterThan(Date.now() - 60_000);
    const all = await served.client.call('ModelStatistics', { name: '', version: '' });
    expect(all['model_stats'].map((s: Message) => s['name']).sort()).toEqual(['ctr_mlp', 'fraud_gbdt']);
  });
});

describe('ModelStreamInfer', () => {
  it('answers each streamed request with its own id and result, errors inline', async () => {
    const stream = served.client.stream();
    const received: Message[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (message: Message) => received.push(message));
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    const inputs = Array.from({ length: 10 }, (_, k) => features(500 + k, 2, 32));
    inputs.forEach((data, k) => stream.write(inferRequest('ctr_mlp', data, 2, 32, `s-${k}`)));
    stream.write({ ...inferRequest('ctr_mlp', features(0, 1, 32), 1, 16, 's-bad') });
    stream.end();
    await done;
    expect(received).toHaveLength(11);
    const byId = new Map(received.map((m) => [m['infer_response']['id'], m]));
    for (let k = 0; k < 10; k++) {
      const message = byId.get(`s-${k}`)!;
      expect(message['error_message']).toBe('');
      expectClose(readF32(message['infer_response']['raw_output_contents'][0]), await reference('ctr_mlp', 'score', inputs[k]!, 2, 32));
    }
    expect(byId.get('s-bad')!['error_message']).toMatch(/input 'features': expected shape \[-1,32\], got \[1,16\]/);
  });
});
