/**
 * Routes in front of the response cache: a route's marks (its name as
 * model_name, the `hotpath_arm` parameter) belong to the routed answer alone.
 * A direct request to the arm's model, answered from the cache that the
 * routed request filled, never sees them, on either door, and a routed hit
 * is marked afresh. Real server process, the typed gRPC client and fetch.
 *
 * The bug this pins: the route marked the arm's answer in place, and on a
 * cache miss that answer was the object the cache stored.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { createClient, type HotpathClient } from '../../src/client/index.js';
import { ctrVariant, tempRepository } from './helpers/repositories.js';
import { startServer, type RunningServer } from './helpers/server-process.js';

const ROUTES = `
routes:
  scorer:
    arms: { only: { model: cached_ctr, weight: 1 } }
`;

let server: RunningServer;
let client: HotpathClient;
let repo: { dir: string; remove: () => Promise<void> };
let routesDir: string;

const features = (seed: number) => Float32Array.from({ length: 32 }, (_, i) => Math.cos(seed * 31 + i));

beforeAll(async () => {
  routesDir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-routes-cache-'));
  await writeFile(path.join(routesDir, 'routes.yaml'), ROUTES);
  repo = await tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    await ctrVariant(dir, 'cached_ctr', 'response_cache { enable: true }\n');
    await rm(path.join(dir, 'ctr_mlp'), { recursive: true, force: true });
  });
  server = await startServer(repo.dir, ['--routes', path.join(routesDir, 'routes.yaml'), '--cache-config', 'local,size=1MiB']);
  client = createClient(server.grpcAddress);
});

afterAll(async () => {
  client?.close();
  await server?.stop();
  await repo?.remove();
  if (routesDir !== undefined) await rm(routesDir, { recursive: true, force: true });
});

/** POST .../infer as JSON; the parsed answer. */
async function restInfer(model: string, data: Float32Array): Promise<{ model_name: string; parameters?: Record<string, unknown>; outputs: unknown[] }> {
  const body = { inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], data: Array.from(data) }] };
  const answer = await fetch(`http://127.0.0.1:${server.httpPort}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(answer.status).toBe(200);
  return (await answer.json()) as { model_name: string; parameters?: Record<string, unknown>; outputs: unknown[] };
}

async function cacheCounts(): Promise<{ hits: number; misses: number }> {
  const [entry] = await client.statistics('cached_ctr');
  const s = entry!.inferenceStats!;
  return { hits: Number(s.cacheHit!.count), misses: Number(s.cacheMiss!.count) };
}

describe('routes × response cache', () => {
  it('gRPC: a routed miss fills the cache; a direct hit carries no route marks', async () => {
    const data = features(1);
    const routed = await client.infer('scorer', { features: { shape: [1, 32], data } });
    expect(routed.modelName).toBe('scorer');
    expect(routed.parameters['hotpath_arm']).toBe('only');

    const direct = await client.infer('cached_ctr', { features: { shape: [1, 32], data } });
    expect(direct.modelName).toBe('cached_ctr');
    expect(direct.parameters).not.toHaveProperty('hotpath_arm');
    expect(direct.output('score').data).toEqual(routed.output('score').data);
    expect(await cacheCounts()).toEqual({ hits: 1, misses: 1 });

    // A routed hit is marked afresh, and marking it changes nothing stored.
    const routedAgain = await client.infer('scorer', { features: { shape: [1, 32], data } });
    expect([routedAgain.modelName, routedAgain.parameters['hotpath_arm']]).toEqual(['scorer', 'only']);
    const directAgain = await client.infer('cached_ctr', { features: { shape: [1, 32], data } });
    expect(directAgain.modelName).toBe('cached_ctr');
    expect(directAgain.parameters).not.toHaveProperty('hotpath_arm');
    expect(await cacheCounts()).toEqual({ hits: 3, misses: 1 });
  });

  it('HTTP: a routed miss fills the cache; a direct hit carries no route marks', async () => {
    const data = features(2);
    const before = await cacheCounts();
    const routed = await restInfer('scorer', data);
    expect(routed.model_name).toBe('scorer');
    expect(routed.parameters).toMatchObject({ hotpath_arm: 'only' });

    const direct = await restInfer('cached_ctr', data);
    expect(direct.model_name).toBe('cached_ctr');
    expect(direct.parameters ?? {}).not.toHaveProperty('hotpath_arm');
    expect(direct.outputs).toEqual(routed.outputs);
    const after = await cacheCounts();
    expect([after.hits - before.hits, after.misses - before.misses]).toEqual([1, 1]);
  });

  it('concurrent routed and direct requests for one answer (single flight) each get their own marks', async () => {
    const data = features(3);
    const calls = Array.from({ length: 16 }, (_, i) => client.infer(i % 2 === 0 ? 'scorer' : 'cached_ctr', { features: { shape: [1, 32], data } }));
    const answers = await Promise.all(calls);
    answers.forEach((answer, i) => {
      if (i % 2 === 0) {
        expect([answer.modelName, answer.parameters['hotpath_arm']]).toEqual(['scorer', 'only']);
      } else {
        expect(answer.modelName).toBe('cached_ctr');
        expect(answer.parameters).not.toHaveProperty('hotpath_arm');
      }
    });
  });
});
