/**
 * The native executor end to end over gRPC, on host kernels (how CI runs the
 * GPU path without a GPU): selection and its reasons in /healthz, answers equal
 * to onnxruntime's, dynamic batching into the executor, the device ledger and
 * its quotas (backed by host memory through the `--device-ledger host` test
 * hook), cleanup on unload, and run-time fallback to CPU on injected device
 * errors with no failed request: a transient error comes back to the executor,
 * a lost device leaves the server degraded but answering.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { httpJson, scrape } from './helpers/probes.js';
import { ctrVariant, directRun, modelVariant, tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';
import { ctrDeepRows, ctrFeatures, ctrReference, ctrRequest, expectClose, waitFor } from './helpers/ctr-requests.js';

let served: ServedRepository;
let ctrModelPath: string;
let deepModelPath: string;

const NATIVE = 'parameters { key: "executor" value: { string_value: "native" } }\n';
const tenant = (name: string) => `parameters { key: "tenant" value: { string_value: "${name}" } }\n`;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeSampleRepository(dir, { only: ['ctr_mlp', 'fraud_gbdt', 'ctr_deep'] });
      deepModelPath = path.join(dir, 'ctr_deep', '1', 'model.onnx');
      // The CTR-shaped sample (embedding Gathers, Concat, LayerNormalization, MLP) forced native.
      await modelVariant(
        dir,
        'ctr_deep',
        'deep_native',
        'name: "deep_native"\nmax_batch_size: 256\n' +
          'input [ { name: "dense" data_type: TYPE_FP32 dims: [ 13 ] }, { name: "categorical" data_type: TYPE_INT64 dims: [ 8 ] } ]\n' +
          'output [ { name: "probability" data_type: TYPE_FP32 dims: [ 1 ] } ]\n' +
          'dynamic_batching { max_queue_delay_microseconds: 2000 }\n' +
          NATIVE,
      );
      ctrModelPath = path.join(dir, 'ctr_mlp', '1', 'model.onnx');
      await ctrVariant(dir, 'ctr_native', NATIVE + tenant('ads') + 'dynamic_batching { max_queue_delay_microseconds: 2000 }\n');
      // Without dynamic_batching: every request is its own batch, on the same native path.
      await ctrVariant(dir, 'ctr_native_single', NATIVE + tenant('ads'));
      // KIND_GPU without a usable CUDA device: onnxruntime on CPU, and the reason shows.
      await ctrVariant(dir, 'ctr_gpu', 'instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]\n');
      // Forced native with 2 instances, for the device-loss test at the end.
      await ctrVariant(dir, 'ctr_native_b', NATIVE + 'instance_group [ { kind: KIND_CPU count: 2 } ]\n');
      // The executor cannot run a tree ensemble: forced native fails the load by op and node.
      await modelVariant(
        dir,
        'fraud_gbdt',
        'gbdt_native',
        'name: "gbdt_native"\nmax_batch_size: 64\n' +
          'input [ { name: "features" data_type: TYPE_FP32 dims: [ 16 ] } ]\n' +
          'output [ { name: "probability" data_type: TYPE_FP32 dims: [ 1 ] } ]\n' +
          NATIVE,
      );
      // A device quota too small for the executor's weights: the load is refused, naming the ledger.
      await ctrVariant(dir, 'ctr_tiny_quota', NATIVE + tenant('tiny'));
    }),
    [
      '--enable-fault-injection',
      '--device-ledger', 'host',
      '--tenant', 'ads:256MiB', '--tenant-device', 'ads:64MiB',
      '--tenant', 'tiny:256MiB', '--tenant-device', 'tiny:4KiB',
      '--device-probe-interval', '0.2',
      '--model-load-concurrency', '1',
    ],
  );
});

afterAll(() => served?.close());

const features = ctrFeatures;
const request = ctrRequest;
const reference = (values: Float32Array) => ctrReference(ctrModelPath, values);

async function healthEntry(name: string): Promise<Message> {
  const { json } = await httpJson(served.server.httpPort, '/healthz');
  return json.models.find((m: Message) => m['name'] === name);
}

describe('executor selection', () => {
  it('shows each version\'s executor, and why KIND_GPU runs on CPU here', async () => {
    expect(await healthEntry('ctr_native')).toMatchObject({ state: 'READY', executor: 'native-host' });
    expect(await healthEntry('ctr_native_single')).toMatchObject({ state: 'READY', executor: 'native-host' });
    expect(await healthEntry('ctr_mlp')).toMatchObject({ state: 'READY', executor: 'onnxruntime' });
    const gpu = await healthEntry('ctr_gpu');
    expect(gpu).toMatchObject({ state: 'READY', executor: 'onnxruntime' });
    expect(gpu['executorReason']).toMatch(/KIND_GPU requested, running on onnxruntime \(CPU\): .*(no (usable )?CUDA device|test hook)/);
    // Without a GPU the CUDA runtime says the driver is too old; the reason says there is no device.
    expect(gpu['executorReason']).not.toMatch(/driver version is insufficient/);
  });

  it('fails a forced native load whose graph has an unsupported op, naming the op and node', async () => {
    const { models } = await served.client.call('RepositoryIndex', {});
    const gbdt = models.find((m: Message) => m['name'] === 'gbdt_native');
    expect(gbdt.state).toBe('UNAVAILABLE');
    expect(gbdt.reason).toMatch(/parameter 'executor' is "native", but .*TreeEnsembleRegressor/);
    await served.client.call('RepositoryModelUnload', { model_name: 'gbdt_native' });
  });

  it('refuses an executor whose weights exceed the tenant\'s device quota, naming the ledger', async () => {
    const { models } = await served.client.call('RepositoryIndex', {});
    const tiny = models.find((m: Message) => m['name'] === 'ctr_tiny_quota');
    expect(tiny.state).toBe('UNAVAILABLE');
    expect(tiny.reason).toMatch(/tenant 'tiny' has no room in the device memory ledger .* of its 0\.0 MiB device quota/);
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_arena_allocated_bytes{tenant="tiny",memory="device"}')).toBe(0);
    await served.client.call('RepositoryModelUnload', { model_name: 'ctr_tiny_quota' });
    expect(await served.client.call('ServerReady')).toEqual({ ready: true });
  });
});

describe('scoring on the native executor', () => {
  it('answers exactly what onnxruntime answers, batched and unbatched', async () => {
    for (const [model, rows, seed] of [['ctr_native', 1, 1], ['ctr_native', 5, 2], ['ctr_native_single', 3, 3]] as const) {
      const values = features(rows, seed);
      const response = await served.client.call('ModelInfer', request(model, values));
      expect(response['outputs'][0]).toMatchObject({ name: 'score', datatype: 'FP32', shape: [String(rows), '1'] });
      expectClose(readF32(response['raw_output_contents'][0]), await reference(values));
    }
  });

  it('runs the CTR-shaped sample (embeddings, LayerNormalization) like onnxruntime, and refuses an id outside the table alone', async () => {
    const rows = 4;
    const { dense, ids, request: deepRows } = ctrDeepRows(rows, 77);
    const deepRequest = (values: BigInt64Array): Message => deepRows('deep_native', values);
    const bad = ids.slice();
    bad[5] = 1000n;
    const [good, refused] = await Promise.allSettled([
      served.client.call('ModelInfer', deepRequest(ids)),
      served.client.call('ModelInfer', deepRequest(bad)),
    ]);
    expect(refused).toMatchObject({ status: 'rejected', reason: { code: grpc.status.INVALID_ARGUMENT } });
    expect((refused as PromiseRejectedResult).reason.details).toMatch(
      /input 'categorical': element 5 is 1000, expected an id in \[-1000, 1000\)/,
    );
    expect(good.status).toBe('fulfilled');
    const expected = await directRun(deepModelPath, {
      dense: new ort.Tensor('float32', dense, [rows, 13]),
      categorical: new ort.Tensor('int64', ids, [rows, 8]),
    });
    expectClose(readF32((good as PromiseFulfilledResult<Message>).value['raw_output_contents'][0]), expected['probability']!.data as Float32Array);
  });

  it("answers inputs listed in any order, not only the model's, on onnxruntime and on the executor", async () => {
    const rows = 3;
    const rng = new SeededRandom(78);
    const dense = Float32Array.from({ length: rows * 13 }, () => rng.uniform(-1, 1));
    const ids = BigInt64Array.from({ length: rows * 8 }, () => BigInt(rng.int(1000)));
    const expected = await directRun(deepModelPath, {
      dense: new ort.Tensor('float32', dense, [rows, 13]),
      categorical: new ort.Tensor('int64', ids, [rows, 8]),
    });
    for (const model of ['ctr_deep', 'deep_native']) {
      const response = await served.client.call('ModelInfer', {
        model_name: model,
        inputs: [
          { name: 'categorical', datatype: 'INT64', shape: [rows, 8] },
          { name: 'dense', datatype: 'FP32', shape: [rows, 13] },
        ],
        raw_input_contents: [Buffer.from(ids.buffer), f32Bytes(dense)],
      });
      expectClose(readF32(response['raw_output_contents'][0]), expected['probability']!.data as Float32Array);
    }
  });

  it('batches concurrent requests into the executor, each answered with its own rows', async () => {
    const inputs = Array.from({ length: 48 }, (_, i) => features(1 + (i % 3), 100 + i));
    const responses = await Promise.all(inputs.map((values) => served.client.call('ModelInfer', request('ctr_native', values))));
    for (const [i, response] of responses.entries()) expectClose(readF32(response['raw_output_contents'][0]), await reference(inputs[i]!));
    const stats = await served.client.call('ModelStatistics', { name: 'ctr_native' });
    const entry = stats['model_stats'][0];
    expect(Number(entry['execution_count'])).toBeLessThan(Number(entry['inference_count']));
  });

  it('charges the executor\'s weights and workspaces to the tenant\'s device ledger', async () => {
    const metrics = await scrape(served.server.metricsPort);
    const device = metrics.get('hotpath_arena_allocated_bytes{tenant="ads",memory="device"}') ?? 0;
    // ctr_mlp holds 4,321 weights (17 KB) in each of two models; workspaces come on top.
    expect(device).toBeGreaterThan(2 * 17_000);
    expect(metrics.get('hotpath_arena_quota_bytes{tenant="ads",memory="device"}')).toBe(64 * 2 ** 20);
    // Nothing of a request stays charged on the host ledger once answered.
    expect(metrics.get('hotpath_arena_allocated_bytes{tenant="ads",memory="host"}')).toBe(0);
  });
});

describe('run-time fallback', () => {
  it('a transient device error under load fails no request; the model returns to the executor', async () => {
    const inputs = Array.from({ length: 120 }, (_, i) => features(1, 500 + i));
    const calls = inputs.map((values, i) =>
      served.client.call(
        'ModelInfer',
        request('ctr_native', values, i === 20 ? { hotpath_fault: { string_param: 'device-error' } } : undefined),
      ),
    );
    const responses = await Promise.all(calls);
    for (const [i, response] of responses.entries()) expectClose(readF32(response['raw_output_contents'][0]), await reference(inputs[i]!));
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_model_device_fallbacks_total{model="ctr_native",reason="device_error"}')).toBe(1);
    // The probe (every 200 ms) moves it back, and it keeps answering there.
    await waitFor(async () => (await healthEntry('ctr_native'))['executor'] === 'native-host', 'ctr_native back on the executor');
    const again = features(2, 999);
    expectClose(readF32((await served.client.call('ModelInfer', request('ctr_native', again)))['raw_output_contents'][0]), await reference(again));
    expect(served.server.logs.some((l) => l['msg'] === 'device probe succeeded: the model moves back to the native executor')).toBe(true);
  });

  it('refuses device fault hooks on a model that is not on the executor', async () => {
    const err = await served.client.callError('ModelInfer', request('ctr_mlp', features(1, 7), { hotpath_fault: { string_param: 'device-lost' } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/'device-lost' needs a model running on the native executor; model 'ctr_mlp' runs on onnxruntime/);
  });

  it('unloading releases every byte the executor held in the device ledger', async () => {
    const before = await scrape(served.server.metricsPort);
    expect(before.get('hotpath_arena_allocated_bytes{tenant="ads",memory="device"}')).toBeGreaterThan(0);
    await served.client.call('RepositoryModelUnload', { model_name: 'ctr_native_single' });
    await served.client.call('RepositoryModelUnload', { model_name: 'ctr_native' });
    const after = await scrape(served.server.metricsPort);
    expect(after.get('hotpath_arena_allocated_bytes{tenant="ads",memory="device"}')).toBe(0);
  });

  it('a lost device fails no request: every executor model moves to CPU and the server reports degraded', async () => {
    const inputs = Array.from({ length: 80 }, (_, i) => features(1, 800 + i));
    const responses = await Promise.all(
      inputs.map((values, i) =>
        served.client.call('ModelInfer', request('ctr_native_b', values, i === 10 ? { hotpath_fault: { string_param: 'device-lost' } } : undefined)),
      ),
    );
    for (const [i, response] of responses.entries()) expectClose(readF32(response['raw_output_contents'][0]), await reference(inputs[i]!));
    const entry = await healthEntry('ctr_native_b');
    expect(entry).toMatchObject({ state: 'READY', executor: 'onnxruntime' });
    expect(entry['executorReason']).toMatch(/the device was lost/);
    const health = await httpJson(served.server.httpPort, '/healthz');
    expect(health.status).toBe(503);
    expect(health.json).toMatchObject({ status: 'degraded', reason: expect.stringMatching(/CUDA device lost: .*injected sticky device fault/) });
    const ready = await httpJson(served.server.httpPort, '/v2/health/ready');
    expect(ready).toMatchObject({ status: 503, json: { ready: false, status: 'degraded' } });
    expect(await served.client.call('ServerReady')).toEqual({ ready: false });
    // Still answering, on CPU, and the executor's device memory is gone.
    const later = features(1, 4242);
    expectClose(readF32((await served.client.call('ModelInfer', request('ctr_native_b', later)))['raw_output_contents'][0]), await reference(later));
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_model_device_fallbacks_total{model="ctr_native_b",reason="device_lost"}')).toBe(1);
    await waitFor(
      async () => (await scrape(served.server.metricsPort)).get('hotpath_arena_allocated_bytes{tenant="default",memory="device"}') === 0,
      'the lost executor\'s device bytes released',
    );
  });
});
