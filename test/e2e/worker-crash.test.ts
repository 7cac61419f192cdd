/**
 * A worker that dies mid-request fails only that request; the pool replaces the
 * worker and the model keeps serving. Uses the test-only fault hook, which the
 * server honours only with --enable-fault-injection.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRepository } from './helpers/repositories.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(sampleRepository(['ctr_mlp']), ['--enable-fault-injection']);
});

afterAll(() => served?.close());

const request = (seed: number, parameters: Message = {}): Message => ({
  model_name: 'ctr_mlp',
  id: `r${seed}`,
  parameters,
  inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32] }],
  raw_input_contents: [f32Bytes(Float32Array.from({ length: 32 }, (_, i) => Math.cos(seed + i)))],
});

describe('worker crash', () => {
  it('fails only the crashed request, then serves on a replacement worker', async () => {
    const baseline = await Promise.all(Array.from({ length: 20 }, (_, k) => served.client.call('ModelInfer', request(k))));
    const crash = served.client.callError('ModelInfer', request(999, { hotpath_fault: { string_param: 'crash-worker' } }));
    const during = Array.from({ length: 20 }, (_, k) => served.client.call('ModelInfer', request(k)));
    const err = await crash;
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    // Retried once on a healthy worker (inference is idempotent); this fault follows the task, so the retry dies too.
    expect(err.details).toMatch(
      /inference worker died while running the request \(worker thread \d+ exited with code 70\), and again on the retry \(worker thread \d+ exited with code 70\)/,
    );
    const survivors = await Promise.all(during);
    const after = await Promise.all(Array.from({ length: 20 }, (_, k) => served.client.call('ModelInfer', request(k))));
    for (let k = 0; k < 20; k++) {
      const expected = readF32(baseline[k]!['raw_output_contents'][0]);
      expect(readF32(survivors[k]!['raw_output_contents'][0])).toEqual(expected);
      expect(readF32(after[k]!['raw_output_contents'][0])).toEqual(expected);
    }
    expect(await served.client.call('ModelReady', { name: 'ctr_mlp' })).toEqual({ ready: true });
    const stats = (await served.client.call('ModelStatistics', { name: 'ctr_mlp' }))['model_stats'][0];
    expect(stats.inference_stats.fail.count).toBe('1');
    expect(stats.inference_stats.success.count).toBe('60');
  });

  it('retries a task whose worker died once on a healthy worker, and the request succeeds', async () => {
    const expected = readF32((await served.client.call('ModelInfer', request(5)))['raw_output_contents'][0]);
    const others = Array.from({ length: 10 }, (_, k) => served.client.call('ModelInfer', request(k)));
    const retried = await served.client.call('ModelInfer', request(5, { hotpath_fault: { string_param: 'crash-worker-once' } }));
    expect(readF32(retried['raw_output_contents'][0])).toEqual(expected);
    expect(await Promise.all(others)).toHaveLength(10);
    expect(served.server.logs.some((l) => l['msg'] === 'inference worker died mid-task; retrying the task once')).toBe(true);
  });
});
