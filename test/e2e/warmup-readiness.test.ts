/**
 * Warm-up before readiness: while a model warms (made slow, deterministically,
 * with the test-only warm-up delay), the process is live but neither the model
 * nor the server is ready, on every surface; once every worker has warmed,
 * all of them turn ready together. Configured `model_warmup` samples run in
 * every worker.
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { tempRepository } from './helpers/repositories.js';
import { healthCheck, httpGet, httpJson, NOT_SERVING, scrape, SERVING } from './helpers/probes.js';
import { TritonClient, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { startServer } from './helpers/server-process.js';

const WARMUP_DELAY_MS = 1500;
let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(tempRepository(async (dir) => {
    await writeIdentityModel(dir, { name: 'slow_warm', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [3] });
    await appendFile(path.join(dir, 'slow_warm', 'config.pbtxt'), [
      'instance_group [ { count: 1 kind: KIND_CPU } ]', // a second worker: each one warms
      `parameters { key: "hotpath_fault_warmup_delay_ms" value { string_value: "${WARMUP_DELAY_MS}" } }`,
    ].join('\n'));
    await writeIdentityModel(dir, { name: 'configured_warm', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [3] });
    await mkdir(path.join(dir, 'configured_warm', 'warmup'));
    await writeFile(path.join(dir, 'configured_warm', 'warmup', 'row.bin'), Buffer.from(Float32Array.from([1, 2, 3]).buffer));
    await appendFile(path.join(dir, 'configured_warm', 'config.pbtxt'), `
model_warmup [
  { name: "zeros" batch_size: 2 count: 3 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true } } },
  { name: "from_file" batch_size: 4 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 3 ] input_data_file: "row.bin" } } }
]
`);
  }), ['--enable-fault-injection'], { waitFor: 'listening' });
});

afterAll(() => served?.close());

const indexEntry = async (name: string): Promise<Message | undefined> =>
  ((await served.client.call('RepositoryIndex', {}))['models'] as Message[]).find((m) => m['name'] === name);

describe('warm-up before readiness', () => {
  it('is live but not ready while a model warms, then ready on every surface', async () => {
    // Live at once, whatever the models do.
    expect(await served.client.call('ServerLive')).toEqual({ live: true });
    expect((await httpGet(served.server.httpPort, '/v2/health/live')).status).toBe(200);

    // The entry shows the warm-up as its reason once the workers have started.
    let entry = await indexEntry('slow_warm');
    for (let i = 0; i < 100 && entry?.['reason'] !== 'warming up'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      entry = await indexEntry('slow_warm');
    }
    expect(entry).toMatchObject({ name: 'slow_warm', version: '1', state: 'LOADING', reason: 'warming up' });
    expect(await served.client.call('ModelReady', { name: 'slow_warm' })).toEqual({ ready: false });
    expect(await served.client.call('ServerReady')).toEqual({ ready: false });
    expect((await httpGet(served.server.httpPort, '/v2/health/ready')).status).toBe(503);
    expect(await healthCheck(served.server.grpcAddress)).toBe(NOT_SERVING);
    const healthz = await httpJson(served.server.httpPort, '/healthz');
    expect(healthz.status).toBe(503);
    expect(healthz.json.status).toBe('not_ready');
    expect(healthz.json.models).toContainEqual({ name: 'slow_warm', version: '1', state: 'LOADING', reason: 'warming up', executor: 'onnxruntime' });
    const err = await served.client.callError('ModelInfer', { model_name: 'slow_warm' });
    expect(err.details).toMatch(/model 'slow_warm' is not ready \(LOADING: warming up\)/);

    await served.server.waitForLog((l) => l['msg'] === 'hotpath serving');
    expect(await served.client.call('ModelReady', { name: 'slow_warm' })).toEqual({ ready: true });
    expect(await served.client.call('ServerReady')).toEqual({ ready: true });
    expect((await httpGet(served.server.httpPort, '/v2/health/ready')).status).toBe(200);
    expect(await healthCheck(served.server.grpcAddress)).toBe(SERVING);
    const after = await httpJson(served.server.httpPort, '/healthz');
    expect(after.status).toBe(200);
    expect(after.json).toEqual({
      status: 'ready',
      models: [
        { name: 'configured_warm', version: '1', state: 'READY', reason: '', executor: 'onnxruntime' },
        { name: 'slow_warm', version: '1', state: 'READY', reason: '', executor: 'onnxruntime' },
      ],
    });
  });

  it('logs and exports the time to ready, with every worker warmed', async () => {
    const ready = served.server.logs.find((l) => l['msg'] === 'model version ready' && l['model'] === 'slow_warm');
    expect(ready).toMatchObject({ component: 'repository', model_version: '1', tenant: 'default', warmup_workers: 2, warmup_runs: 2 });
    expect(ready!['load_ms'] as number).toBeGreaterThanOrEqual(WARMUP_DELAY_MS);
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_model_load_seconds{model="slow_warm",version="1",tenant="default"}')).toBeGreaterThanOrEqual(WARMUP_DELAY_MS / 1000);
    expect(metrics.get('hotpath_worker_pool_threads{model="slow_warm",version="1",tenant="default"}')).toBe(2);
  });

  it('runs configured model_warmup samples `count` times in each worker', () => {
    const ready = served.server.logs.find((l) => l['msg'] === 'model version ready' && l['model'] === 'configured_warm');
    // zeros: 3 runs, from_file: 1 run.
    expect(ready).toMatchObject({ warmup_samples: 2, warmup_runs: 4, warmup_workers: 1 });
  });
});

describe('shutdown during warm-up', () => {
  it('aborts the warm-up and exits 0 promptly', async () => {
    const slowRepo = await tempRepository(async (dir) => {
      await writeIdentityModel(dir, { name: 'very_slow', dtype: 'FP32', maxBatchSize: 4, withConfig: true });
      await appendFile(path.join(dir, 'very_slow', 'config.pbtxt'),
        'parameters { key: "hotpath_fault_warmup_delay_ms" value { string_value: "60000" } }\n');
    });
    try {
      const slowServer = await startServer(slowRepo.dir, ['--enable-fault-injection'], { waitFor: 'listening' });
      const slowClient = new TritonClient(slowServer.grpcAddress);
      let entry: Message | undefined;
      for (let i = 0; i < 100 && entry?.['reason'] !== 'warming up'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        entry = ((await slowClient.call('RepositoryIndex', {}))['models'] as Message[])[0];
      }
      slowClient.close();
      expect(entry).toMatchObject({ name: 'very_slow', state: 'LOADING', reason: 'warming up' });
      const started = performance.now();
      expect(await slowServer.stop()).toBe(0);
      expect(performance.now() - started).toBeLessThan(5000);
    } finally {
      await slowRepo.remove();
    }
  });
});
