/**
 * The memory ledger governs the server: tenants' quotas refuse requests and
 * loads with RESOURCE_EXHAUSTED while other tenants are served, and a tenant
 * short of memory unloads its least recently used idle model, which reloads
 * on its next request (a cold start).
 *
 * Model footprints are declared (`memory_footprint_bytes`) so the arithmetic
 * is exact; measured footprints are covered by the unit tests of the method.
 */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { scrape } from './helpers/probes.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, type Message } from './helpers/triton-client.js';

const MiB = 1024 * 1024;
let served: ServedRepository;

async function identity(dir: string, name: string, tenant: string, footprint: string): Promise<void> {
  await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [-1] });
  await appendFile(
    path.join(dir, name, 'config.pbtxt'),
    `\nparameters { key: "tenant" value: { string_value: "${tenant}" } }\n` +
      `parameters { key: "memory_footprint_bytes" value: { string_value: "${footprint}" } }\n`,
  );
}

beforeAll(async () => {
  served = await serveRepository(
    tempRepository(async (dir) => {
      await identity(dir, 'a_scorer', 'team-a', '8MiB');
      await identity(dir, 'b_scorer', 'team-b', '8MiB');
      await identity(dir, 'c_too_big', 'team-c', '16MiB');
      // lru_m1..m3 load in name order (one at a time): m3 makes room by evicting m1.
      for (const name of ['lru_m1', 'lru_m2', 'lru_m3']) await identity(dir, name, 'team-lru', '40MiB');
    }),
    [
      '--tenant', 'team-a:10MiB', '--tenant', 'team-b:64MiB', '--tenant', 'team-c:4MiB', '--tenant', 'team-lru:100MiB',
      '--model-load-concurrency', '1',
    ],
  );
});

afterAll(() => served?.close());

/** A request with `floats` FP32 values (4 bytes each) in one row. */
const request = (model: string, floats: number): Message => ({
  model_name: model,
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, floats] }],
  raw_input_contents: [f32Bytes(new Float32Array(floats).fill(0.5))],
});

describe('tenant quotas', () => {
  it('refuse a request over the quota with RESOURCE_EXHAUSTED while another tenant is served', async () => {
    const big = (3 * MiB) / 4; // 3 MiB of input: 8 MiB reserved + 3 MiB > 10 MiB
    const [refused, ...others] = await Promise.all([
      served.client.callError('ModelInfer', request('a_scorer', big)),
      ...Array.from({ length: 6 }, () => served.client.call('ModelInfer', request('b_scorer', big))),
    ]);
    expect(refused!.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused!.details).toMatch(
      /tenant 'team-a' is over its host memory quota: input buffer of 3145728 bytes for model 'a_scorer' needs 3\.0 MiB, the tenant uses 8\.0 MiB of its 10\.0 MiB host quota/,
    );
    for (const response of others) expect((response as Message)['raw_output_contents'][0].byteLength).toBe(3 * MiB);
    // Within its quota the same tenant is served, and nothing stayed charged.
    const small = await served.client.call('ModelInfer', request('a_scorer', 1024));
    expect(small['outputs'][0].shape).toEqual(['1', '1024']);
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_arena_allocated_bytes{tenant="team-a",memory="host"}')).toBe(0);
    expect(metrics.get('hotpath_arena_reserved_bytes{tenant="team-a",memory="host"}')).toBe(8 * MiB);
    expect(metrics.get('hotpath_arena_quota_bytes{tenant="team-a",memory="host"}')).toBe(10 * MiB);
  });

  it('refuse to load a model that cannot fit, leaving nothing charged', async () => {
    const { models } = await served.client.call('RepositoryIndex', {});
    const tooBig = models.find((m: Message) => m['name'] === 'c_too_big');
    expect(tooBig.state).toBe('UNAVAILABLE');
    expect(tooBig.reason).toMatch(/tenant 'team-c' is over its host memory quota: model 'c_too_big' version 1 \(16777216 bytes\) needs 16\.0 MiB, the tenant uses 0\.0 MiB of its 4\.0 MiB host quota/);
    const err = await served.client.callError('RepositoryModelLoad', { model_name: 'c_too_big' });
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/failed to load model 'c_too_big': tenant 'team-c' is over its host memory quota/);
    expect((await scrape(served.server.metricsPort)).get('hotpath_arena_reserved_bytes{tenant="team-c",memory="host"}')).toBe(0);
    // A failed start-up model keeps the server unready (as in Triton) until it is unloaded.
    expect(await served.client.call('ServerReady')).toEqual({ ready: false });
    await served.client.call('RepositoryModelUnload', { model_name: 'c_too_big' });
  });
});

describe('LRU model eviction', () => {
  it('unloaded the least recently used idle model to load another, and reloads it on demand', async () => {
    let { models } = await served.client.call('RepositoryIndex', {});
    const state = (name: string) => models.find((m: Message) => m['name'] === name);
    expect(state('lru_m1')).toMatchObject({ state: 'UNAVAILABLE', reason: 'evicted (LRU)' });
    expect(state('lru_m2')).toMatchObject({ state: 'READY' });
    expect(state('lru_m3')).toMatchObject({ state: 'READY' });
    // Evicted by design, not failed: the server is ready.
    expect(await served.client.call('ServerReady')).toEqual({ ready: true });

    // Use m3 so that m2 is now the least recently used.
    await served.client.call('ModelInfer', request('lru_m3', 4));
    const response = await served.client.call('ModelInfer', request('lru_m1', 4));
    expect(response['model_name']).toBe('lru_m1');
    ({ models } = await served.client.call('RepositoryIndex', {}));
    expect(state('lru_m1')).toMatchObject({ state: 'READY' });
    expect(state('lru_m2')).toMatchObject({ state: 'UNAVAILABLE', reason: 'evicted (LRU)' });
    expect(state('lru_m3')).toMatchObject({ state: 'READY' });
    // The server's stdout reaches this process on its own pipe, possibly after the answer: wait for the line.
    const coldStart = await served.server.waitForLog((l) => l['msg'] === 'evicted model reloaded (cold start)');
    expect(coldStart).toMatchObject({ model: 'lru_m1', cold_start: true });
    expect(coldStart?.['load_ms']).toEqual(expect.any(Number));
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_arena_reserved_bytes{tenant="team-lru",memory="host"}')).toBe(80 * MiB);
    expect(metrics.get('hotpath_arena_evictions_total{tenant="team-lru",memory="host"}')).toBe(2);
  });
});
