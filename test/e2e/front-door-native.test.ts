/**
 * `--front-door-threads 2` with versions on the native executor (host
 * kernels, how CI runs the GPU path without a GPU): the door threads serve
 * them themselves (src/inference/door-inference.ts) into the executor's
 * batcher, check embedding ids with the bounds the main thread posts (a bad
 * id is refused alone, with the main thread's message), and a device error
 * in a batch of a door's requests moves the version to CPU on the main
 * thread (which the door tells) while no request fails: the door hands the
 * batch's requests to the main thread, which re-runs them. Once the probe
 * brings the version back, the doors serve it again.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { ctrVariant, directRun, modelVariant, tempRepository } from './helpers/repositories.js';
import { httpJson, scrape } from './helpers/probes.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { readF32, TritonClient, type Message } from './helpers/triton-client.js';
import { ctrDeepRows, ctrFeatures, ctrReference, ctrRequest, expectClose, waitFor } from './helpers/ctr-requests.js';

const NATIVE = 'parameters { key: "executor" value: { string_value: "native" } }\n';

let server: RunningServer;
let repo: { dir: string; remove: () => Promise<void> };
let ctrModelPath: string;
let deepModelPath: string;

const features = ctrFeatures;
const ctrNative = (values: Float32Array, parameters?: Message) => ctrRequest('ctr_native', values, parameters);
const reference = (values: Float32Array) => ctrReference(ctrModelPath, values);
const clients: TritonClient[] = [];

/** A client on a connection of its own; consecutive ones go to different door threads (round-robin). */
function ownConnection(): TritonClient {
  const client = new TritonClient(server.grpcAddress, { 'grpc.use_local_subchannel_pool': 1 });
  clients.push(client);
  return client;
}

const doorAnswers = (metrics: Map<string, number>) =>
  (metrics.get('hotpath_door_model_infer_total{door_thread="0",answered_by="door"}') ?? 0) +
  (metrics.get('hotpath_door_model_infer_total{door_thread="1",answered_by="door"}') ?? 0);

async function executorOf(model: string): Promise<string> {
  const { json } = await httpJson(server.httpPort, '/healthz');
  return json.models.find((m: Message) => m['name'] === model)?.['executor'];
}

beforeAll(async () => {
  repo = await tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp', 'ctr_deep'] });
    ctrModelPath = path.join(dir, 'ctr_mlp', '1', 'model.onnx');
    deepModelPath = path.join(dir, 'ctr_deep', '1', 'model.onnx');
    await ctrVariant(dir, 'ctr_native', NATIVE + 'dynamic_batching { max_queue_delay_microseconds: 2000 }\n');
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
  });
  server = await startServer(repo.dir, ['--front-door-threads', '2', '--enable-fault-injection', '--device-probe-interval', '0.2']);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await server?.stop();
  await repo?.remove();
});

describe('--front-door-threads 2 with the native executor', () => {
  it('serves executor versions in the doors, and refuses an id outside the table alone with the main thread’s message', async () => {
    expect(await executorOf('ctr_native')).toBe('native-host');
    const [a, b] = [ownConnection(), ownConnection()];
    const before = await scrape(server.metricsPort);
    const inputs = Array.from({ length: 16 }, (_, i) => features(1 + (i % 3), 100 + i));
    const answers = await Promise.all(inputs.map((values, i) => (i % 2 === 0 ? a : b).call('ModelInfer', ctrNative(values))));
    for (const [i, answer] of answers.entries()) expectClose(readF32(answer['raw_output_contents'][0]), await reference(inputs[i]!));

    const rows = 4;
    const { dense, ids, request: deepRows } = ctrDeepRows(rows, 77);
    const deepRequest = (values: BigInt64Array): Message => deepRows('deep_native', values);
    const bad = ids.slice();
    bad[5] = 1000n;
    const [good, refused] = await Promise.allSettled([a.call('ModelInfer', deepRequest(ids)), b.call('ModelInfer', deepRequest(bad))]);
    expect(refused).toMatchObject({ status: 'rejected', reason: { code: grpc.status.INVALID_ARGUMENT } });
    expect((refused as PromiseRejectedResult).reason.details).toMatch(/input 'categorical': element 5 is 1000, expected an id in \[-1000, 1000\)/);
    const expected = await directRun(deepModelPath, {
      dense: new ort.Tensor('float32', dense, [rows, 13]),
      categorical: new ort.Tensor('int64', ids, [rows, 8]),
    });
    expectClose(readF32((good as PromiseFulfilledResult<Message>).value['raw_output_contents'][0]), expected['probability']!.data as Float32Array);

    // All 18 answered by the door threads themselves (the catalog lists both executor versions).
    expect(doorAnswers(await scrape(server.metricsPort)) - doorAnswers(before)).toBe(inputs.length + 2);
  });

  it('a device error in a door’s batch fails no request, moves the version to CPU, and the doors serve it again once it is back', async () => {
    const connections = [ownConnection(), ownConnection(), ownConnection(), ownConnection()];
    // Arm the executor with no request of the main thread's behind the fault: the test-only parameter arms the
    // executor's next batch before the request is validated, and this request's shape is refused. So the next
    // batch the executor runs holds door threads' requests only.
    const armed = await connections[0]!.callError('ModelInfer', {
      ...ctrNative(features(1, 1), { hotpath_fault: { string_param: 'device-error' } }),
      inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 31] }],
    });
    expect(armed.code).toBe(grpc.status.INVALID_ARGUMENT);
    const inputs = Array.from({ length: 120 }, (_, i) => features(1, 500 + i));
    const responses = await Promise.all(inputs.map((values, i) => connections[i % connections.length]!.call('ModelInfer', ctrNative(values))));
    for (const [i, response] of responses.entries()) expectClose(readF32(response['raw_output_contents'][0]), await reference(inputs[i]!));
    // The door's line reaches this process through the main thread's stdout, possibly after the answers: wait for it.
    await server.waitForLog((line) => String(line['msg']).startsWith("a batch of this door thread's requests failed on the device"));
    const metrics = await scrape(server.metricsPort);
    expect(metrics.get('hotpath_model_device_fallbacks_total{model="ctr_native",reason="device_error"}')).toBe(1);
    expect(metrics.get('nv_inference_request_failure{model="ctr_native",version="1",reason="BACKEND"}') ?? 0).toBe(0);

    // The probe (every 200 ms) moves it back; the catalog lists it again and the doors answer it.
    await waitFor(async () => (await executorOf('ctr_native')) === 'native-host', 'ctr_native back on the executor');
    await waitFor(async () => {
      const before = doorAnswers(await scrape(server.metricsPort));
      await Promise.all(connections.map((client, i) => client.call('ModelInfer', ctrNative(features(1, 900 + i)))));
      return doorAnswers(await scrape(server.metricsPort)) - before === connections.length;
    }, 'the doors serving ctr_native again');
    // Dropped from the catalog while on CPU and listed again: each door took its handle back (one per batcher and thread).
    expect(server.logs.filter((line) => line['msg'] === 'cannot serve this version in the door thread: forwarding its requests')).toEqual([]);
  });
});
