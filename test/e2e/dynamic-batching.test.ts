/**
 * Dynamic batching end to end: concurrent requests share executions and each
 * gets exactly its own rows back; a full queue answers UNAVAILABLE; a request
 * that times out in the queue or passes its gRPC deadline answers
 * DEADLINE_EXCEEDED and is never executed; a tenant whose batch memory does
 * not fit is refused while another tenant is served.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attrInts, node, serializeModel, tensorValueInfo } from '../../models/lib/onnx-builder.js';
import { writeModelFiles } from '../../models/lib/repository-writer.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import { scrape } from './helpers/probes.js';
import { ctrVariant, tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeSampleRepository(dir, { only: ['ctr_mlp'] });
      // Holds a batch open for 2 s unless 64 rows arrive; at most 2 requests queued.
      await ctrVariant(dir, 'ctr_small_queue', 'dynamic_batching { max_queue_delay_microseconds: 2000000 default_queue_policy { max_queue_size: 2 } }\n');
      // Holds a batch open for 3 s, but a request may wait at most 200 ms.
      await ctrVariant(dir, 'ctr_short_timeout', 'dynamic_batching { max_queue_delay_microseconds: 3000000 default_queue_policy { default_timeout_microseconds: 200000 timeout_action: REJECT } }\n');
      // Waits 3 s for a batch: a client deadline of 300 ms passes first.
      await ctrVariant(dir, 'ctr_slow_batch', 'dynamic_batching { max_queue_delay_microseconds: 3000000 }\n');
      // A batched model onnxruntime fails on (2 elements cannot be reshaped to [-1, 3]);
      // its output is pre-allocated in the arena, so the failure path has blocks to free.
      await writeModelFiles(dir, {
        name: 'batched_failing',
        model: () =>
          serializeModel({
            name: 'batched_failing',
            doc: 'Reshape of [batch, 2] to [-1, 3]: fails unless the batch has a multiple of 3 rows.',
            inputs: [tensorValueInfo('X', TensorProto_DataType.FLOAT, ['batch', 2])],
            outputs: [tensorValueInfo('Y', TensorProto_DataType.FLOAT, [-1, 3])],
            nodes: [
              node('Constant', [], ['target_shape'], { attributes: [attrInts('value_ints', [-1, 3])] }),
              node('Reshape', ['X', 'target_shape'], ['Y']),
            ],
          }),
        config:
          'name: "batched_failing"\nmax_batch_size: 8\n' +
          'input [ { name: "X" data_type: TYPE_FP32 dims: [ 2 ] } ]\n' +
          'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 3 ] } ]\n' +
          'dynamic_batching { }\n' +
          'parameters { key: "tenant" value: { string_value: "failing" } }\n',
      });
      // Tenant 'tight' has room for the model's declared footprint, not for a 64-row batch (8 KiB).
      await ctrVariant(dir, 'ctr_tight', 'dynamic_batching { }\nparameters { key: "tenant" value: { string_value: "tight" } }\nparameters { key: "memory_footprint_bytes" value: { string_value: "1MiB" } }\n');
    }),
    ['--tenant', 'tight:1028KiB', '--tenant', 'failing:64MiB', '--no-default-warmup'],
  );
});

afterAll(() => served?.close());

const features = (seed: number, rows: number) =>
  Float32Array.from({ length: rows * 32 }, (_, i) => Math.sin(seed * 1.7 + i * 0.31));

const request = (model: string, seed: number, rows = 1, parameters: Message = {}): Message => ({
  model_name: model,
  id: `r${seed}`,
  parameters,
  inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, 32] }],
  raw_input_contents: [f32Bytes(features(seed, rows))],
});

async function statistics(model: string): Promise<Message> {
  return (await served.client.call('ModelStatistics', { name: model, version: '1' }))['model_stats'][0];
}

describe('dynamic batching', () => {
  it('batches 64 concurrent clients, and every request gets exactly its own rows', async () => {
    const before = await statistics('ctr_mlp');
    const rowsOf = (k: number) => 1 + (k % 3);
    const responses = await Promise.all(
      Array.from({ length: 64 }, (_, k) => served.client.call('ModelInfer', request('ctr_mlp', k, rowsOf(k)))),
    );
    const after = await statistics('ctr_mlp');
    const inferences = Number(after.inference_count) - Number(before.inference_count);
    const executions = Number(after.execution_count) - Number(before.execution_count);
    expect(inferences).toBe(Array.from({ length: 64 }, (_, k) => rowsOf(k)).reduce((a, b) => a + b, 0));
    expect(executions).toBeGreaterThan(0);
    expect(executions).toBeLessThan(inferences);
    expect(after.batch_stats.some((b: Message) => Number(b['batch_size']) > 3)).toBe(true);

    const session = await ort.InferenceSession.create(path.join(served.dir, 'ctr_mlp', '1', 'model.onnx'));
    for (let k = 0; k < 64; k++) {
      const rows = rowsOf(k);
      const expected = (await session.run({ features: new ort.Tensor('float32', features(k, rows), [rows, 32]) }))['score']!;
      expect(responses[k]!['id']).toBe(`r${k}`);
      expect(responses[k]!['outputs'][0].shape).toEqual([String(rows), '1']);
      const got = readF32(responses[k]!['raw_output_contents'][0]);
      const want = expected.data as Float32Array;
      for (let i = 0; i < rows; i++) expect(got[i]).toBeCloseTo(want[i]!, 5);
    }
    await session.release();
  });

  it('answers UNAVAILABLE naming the model and the queue size when the queue is full', async () => {
    const waiting = [served.client.call('ModelInfer', request('ctr_small_queue', 1)), served.client.call('ModelInfer', request('ctr_small_queue', 2))];
    // Both must be queued before the third is sent: wait until the server says so.
    for (let i = 0; i < 100; i++) {
      const pending = (await scrape(served.server.metricsPort)).get('nv_inference_pending_request_count{model="ctr_small_queue",version="1"}');
      if (pending === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const err = await served.client.callError('ModelInfer', request('ctr_small_queue', 3));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/model 'ctr_small_queue:1': queue full \(max_queue_size 2/);
    // The queued ones go when the delay expires, together.
    const done = await Promise.all(waiting);
    expect(done.map((r) => r['id'])).toEqual(['r1', 'r2']);
    const stats = await statistics('ctr_small_queue');
    expect(stats.execution_count).toBe('1');
    expect(stats.inference_count).toBe('2');
  });

  it('answers DEADLINE_EXCEEDED for a queue timeout and never executes the request', async () => {
    const err = await served.client.callError('ModelInfer', request('ctr_short_timeout', 4));
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(err.details).toMatch(/ctr_short_timeout/);
    const stats = await statistics('ctr_short_timeout');
    expect(stats.execution_count).toBe('0');
    expect(stats.inference_stats.fail.count).toBe('1');
  });

  it('drops a request whose gRPC deadline passes in the queue, without executing it', async () => {
    const deadline = new Date(Date.now() + 300);
    const err = await new Promise<grpc.ServiceError>((resolve) =>
      served.client.raw['ModelInfer']!.call(served.client.raw, request('ctr_slow_batch', 5), new grpc.Metadata(), { deadline }, (e: grpc.ServiceError) => resolve(e)),
    );
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    // The server drops it on its own deadline too: the failure is counted, no execution ever.
    let stats = await statistics('ctr_slow_batch');
    for (let i = 0; i < 50 && stats.inference_stats.fail.count === '0'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      stats = await statistics('ctr_slow_batch');
    }
    expect(stats.inference_stats.fail.count).toBe('1');
    expect(stats.execution_count).toBe('0');
  });

  it('answers INTERNAL for a batch onnxruntime fails on, frees its memory, and keeps serving', async () => {
    const failing: Message = {
      model_name: 'batched_failing',
      inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2] }],
      raw_input_contents: [f32Bytes([1, 2])],
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      const err = await served.client.callError('ModelInfer', failing);
      expect(err.code).toBe(grpc.status.INTERNAL);
      expect(err.details).toMatch(/^inference failed: .*reshape/i);
    }
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_arena_allocated_bytes{tenant="failing",memory="host"}')).toBe(0);
    expect((await served.client.call('ModelInfer', request('ctr_mlp', 9)))['id']).toBe('r9');
  });

  it('refuses a tenant whose batch does not fit its quota while another tenant is served', async () => {
    const [refused, served1, served2] = await Promise.all([
      served.client.callError('ModelInfer', request('ctr_tight', 6)),
      served.client.call('ModelInfer', request('ctr_mlp', 7)),
      served.client.call('ModelInfer', request('ctr_mlp', 8)),
    ]);
    expect(refused.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused.details).toMatch(/tight/);
    expect(served1['id']).toBe('r7');
    expect(served2['id']).toBe('r8');
  });
});
