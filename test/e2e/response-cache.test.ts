/**
 * The response cache, end to end: real server processes and the typed client.
 *
 *   - a hit answers what the miss answered, with the request's own id;
 *   - ModelStatistics cache_hit / cache_miss and the nv_cache_* metrics count
 *     hits and misses; a hit executes nothing;
 *   - a model without response_cache, and a request with a test-only fault
 *     parameter, are never cached;
 *   - the LRU holds --cache-config's byte size (the oldest answer goes);
 *   - 64 concurrent identical requests execute once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { scrape } from './helpers/probes.js';
import { ctrVariant, tempRepository } from './helpers/repositories.js';
import { startServer, type RunningServer } from './helpers/server-process.js';

const CACHED = 'response_cache { enable: true }\n';

let repository: { dir: string; remove: () => Promise<void> };
const servers: RunningServer[] = [];

beforeAll(async () => {
  repository = await tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    await ctrVariant(dir, 'cached', CACHED);
    await ctrVariant(dir, 'stampede', CACHED);
    await ctrVariant(dir, 'plain', '');
    await rm(path.join(dir, 'ctr_mlp'), { recursive: true, force: true });
  });
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await repository?.remove();
});

async function serve(args: string[]): Promise<RunningServer> {
  const server = await startServer(repository.dir, args);
  servers.push(server);
  return server;
}

const features = (seed: number) => ({ features: { shape: [1, 32], data: Float32Array.from({ length: 32 }, (_, i) => Math.sin(seed + i)) } });

async function stats(client: ReturnType<typeof createClient>, model: string) {
  const [entry] = await client.statistics(model);
  const s = entry!.inferenceStats!;
  return {
    hits: Number(s.cacheHit!.count),
    misses: Number(s.cacheMiss!.count),
    hitNs: Number(s.cacheHit!.ns),
    missNs: Number(s.cacheMiss!.ns),
    success: Number(s.success!.count),
    executions: Number(entry!.executionCount),
  };
}

describe('response cache', () => {
  let server: RunningServer;
  let client: ReturnType<typeof createClient>;

  beforeAll(async () => {
    server = await serve(['--cache-config', 'local,size=1MiB', '--enable-fault-injection']);
    client = createClient(server.grpcAddress);
  });
  afterAll(() => client?.close());

  it('answers a hit exactly as the miss, with its own id, and counts both as Triton does', async () => {
    const miss = await client.infer('cached', features(1), { id: 'first' });
    const hit = await client.infer('cached', features(1), { id: 'second' });
    expect(miss.id).toBe('first');
    expect(hit.id).toBe('second');
    expect([hit.modelName, hit.modelVersion, hit.parameters]).toEqual([miss.modelName, miss.modelVersion, miss.parameters]);
    expect(hit.outputs).toEqual(miss.outputs);
    const s = await stats(client, 'cached');
    expect(s).toMatchObject({ hits: 1, misses: 1, success: 2, executions: 1 });
    expect(s.hitNs).toBeGreaterThan(0);
    expect(s.missNs).toBeGreaterThan(0);

    // Different inputs: a miss that executes.
    await client.infer('cached', features(2));
    expect(await stats(client, 'cached')).toMatchObject({ hits: 1, misses: 2, executions: 2 });

    const m = await scrape(server.metricsPort);
    const V = 'model="cached",version="1"';
    expect(m.get(`nv_cache_num_hits_per_model{${V}}`)).toBe(1);
    expect(m.get(`nv_cache_num_misses_per_model{${V}}`)).toBe(2);
    expect(m.has(`nv_cache_hit_duration_per_model{${V}}`)).toBe(true);
    expect(m.has(`nv_cache_miss_duration_per_model{${V}}`)).toBe(true);
    expect(m.get(`nv_inference_exec_count{${V}}`)).toBe(2);
  });

  it('answers a hit on the HTTP door byte for byte as the miss, but for the id', async () => {
    const post = async (id: string) => {
      const body = { id, inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], data: Array.from(features(20).features.data) }] };
      const answer = await fetch(`http://127.0.0.1:${server.httpPort}/v2/models/cached/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(answer.status).toBe(200);
      return answer.text();
    };
    const before = await stats(client, 'cached');
    const miss = await post('http-miss');
    const hit = await post('http-hit');
    expect(hit).toBe(miss.replace('"http-miss"', '"http-hit"'));
    const after = await stats(client, 'cached');
    expect([after.hits - before.hits, after.misses - before.misses, after.executions - before.executions]).toEqual([1, 1, 1]);
  });

  it('never caches a model without response_cache, nor a request with a fault parameter', async () => {
    await client.infer('plain', features(3));
    await client.infer('plain', features(3));
    expect(await stats(client, 'plain')).toMatchObject({ hits: 0, misses: 0, executions: 2 });

    const before = await stats(client, 'cached');
    const faulty = { parameters: { hotpath_fault: 'delay:1' } };
    await client.infer('cached', features(4), faulty);
    await client.infer('cached', features(4), faulty);
    const after = await stats(client, 'cached');
    expect(after.hits - before.hits).toBe(0);
    expect(after.misses - before.misses).toBe(0);
    expect(after.executions - before.executions).toBe(2);
  });

  it('executes 64 concurrent identical requests once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 64 }, (_, i) => client.infer('stampede', features(5), { id: `r${i}` })),
    );
    answers.forEach((answer, i) => expect(answer.id).toBe(`r${i}`));
    const first = Array.from(answers[0]!.output('score').data as Float32Array);
    for (const answer of answers) expect(Array.from(answer.output('score').data as Float32Array)).toEqual(first);
    const s = await stats(client, 'stampede');
    expect(s).toMatchObject({ executions: 1, misses: 1, hits: 63, success: 64 });
    const m = await scrape(server.metricsPort);
    expect(m.get('nv_inference_exec_count{model="stampede",version="1"}')).toBe(1);
  });
});

describe('response cache size', () => {
  it('evicts the least recently used answer to stay within --cache-config size', async () => {
    // One answer of this model with its key is about 200 bytes (164 of key material): two fit in 500, three do not.
    const server = await serve(['--cache-config', 'local,size=500']);
    const client = createClient(server.grpcAddress);
    try {
      const reserved = async () => {
        const m = await scrape(server.metricsPort);
        return [...m.entries()].find(([k]) => k.startsWith('hotpath_arena_reserved_bytes') && k.includes('tenant="default"') && k.includes('memory="host"'))?.[1] ?? NaN;
      };
      const before = await reserved();
      for (const seed of [10, 11, 12]) await client.infer('cached', features(seed)); // 12 evicts 10
      expect(await stats(client, 'cached')).toMatchObject({ misses: 3, hits: 0 });
      await client.infer('cached', features(12));
      expect(await stats(client, 'cached')).toMatchObject({ misses: 3, hits: 1 });
      await client.infer('cached', features(10)); // evicted: a miss again (evicts 11)
      expect(await stats(client, 'cached')).toMatchObject({ misses: 4, hits: 1, executions: 4 });
      await client.infer('cached', features(11));
      expect(await stats(client, 'cached')).toMatchObject({ misses: 5, hits: 1, executions: 5 });
      // The two answers held are charged to the model's tenant in the arena ledger, within the cache's size.
      const charged = (await reserved()) - before;
      expect(charged).toBeGreaterThan(300);
      expect(charged).toBeLessThanOrEqual(500);
    } finally {
      client.close();
    }
  });

  it('refuses a malformed --cache-config (Triton\'s redis cache is only warned about: test/unit/cache-options.test.ts)', async () => {
    await expect(serve(['--cache-config', 'memcached,size=10'])).rejects.toThrow(/--cache-config.*local/);
    await expect(serve(['--cache-config', 'local,bytes=10'])).rejects.toThrow(/--cache-config.*local,size=/);
  });
});
