/**
 * The native hand-off to onnxruntime workers, end to end: numeric requests
 * take one path (batcher -> worker channel -> executed), with dynamic
 * batching and without it (max_batch_size-0 mode), and answer exactly what
 * the sample model answers. A worker that exits with a batch in flight (the
 * test-only fault `hotpath_fault_crash_channel_batch`) costs no request: the
 * batch re-runs once through piscina.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ctrVariant, sampleRepository } from './helpers/repositories.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    sampleRepository(['ctr_mlp']).then(async (repo) => {
      await ctrVariant(repo.dir, 'ctr_unbatched', '');
      await ctrVariant(
        repo.dir,
        'ctr_crashy',
        'dynamic_batching { max_queue_delay_microseconds: 100 }\n' +
          'parameters { key: "hotpath_fault_crash_channel_batch" value { string_value: "3" } }\n',
      );
      return repo;
    }),
    ['--enable-fault-injection'],
  );
});

afterAll(() => served?.close());

const request = (model: string, seed: number, rows = 1): Message => ({
  model_name: model,
  id: `r${seed}`,
  inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, 32] }],
  raw_input_contents: [f32Bytes(Float32Array.from({ length: rows * 32 }, (_, i) => Math.cos(seed + i)))],
});

const scores = async (model: string, seed: number, rows = 1) =>
  readF32((await served.client.call('ModelInfer', request(model, seed, rows)))['raw_output_contents'][0]);

describe('worker channel', () => {
  it('answers a model without dynamic_batching through the batcher exactly as the batched model', async () => {
    for (const rows of [1, 3]) {
      expect(await scores('ctr_unbatched', 7, rows)).toEqual(await scores('ctr_mlp', 7, rows));
    }
    const stats = (await served.client.call('ModelStatistics', { name: 'ctr_unbatched' }))['model_stats'][0];
    expect(stats.inference_stats.success.count).toBe('2');
    // One execution per request, counted once, with the request's own rows.
    expect(stats.execution_count).toBe('2');
    expect(stats.inference_count).toBe('4');
  });

  it('re-runs a batch whose worker exited mid-batch, and no request fails', async () => {
    for (let k = 0; k < 8; k++) expect(await scores('ctr_crashy', k)).toEqual(await scores('ctr_mlp', k));
    expect(served.server.logs.some((l) => l['msg'] === 'inference worker died mid-batch; re-running the batch once')).toBe(true);
    const stats = (await served.client.call('ModelStatistics', { name: 'ctr_crashy' }))['model_stats'][0];
    expect(stats.inference_stats.fail.count).toBe('0');
    expect(stats.inference_stats.success.count).toBe('8');
    expect(await served.client.call('ModelReady', { name: 'ctr_crashy' })).toEqual({ ready: true });
  });
});
