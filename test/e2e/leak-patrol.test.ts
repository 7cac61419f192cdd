/**
 * The leak patrol: a leak injected under steady concurrent load is detected
 * and cured by a rolling restart of the worker pool, without a failed request;
 * a leak that persists marks the model degraded with no restart loop; and the
 * leak hook is refused without --enable-fault-injection.
 */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { tempRepository } from './helpers/repositories.js';
import { scrape } from './helpers/probes.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, type Message } from './helpers/triton-client.js';

const MiB = 1024 * 1024;
let served: ServedRepository | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

function leakingRepository(parameters: Record<string, string>) {
  return tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    const text = Object.entries(parameters)
      .map(([key, value]) => `\nparameters { key: "${key}" value: { string_value: "${value}" } }\n`)
      .join('');
    await appendFile(path.join(dir, 'ctr_mlp', 'config.pbtxt'), text);
  });
}

const request = (seed: number): Message => ({
  model_name: 'ctr_mlp',
  inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32] }],
  raw_input_contents: [f32Bytes(Float32Array.from({ length: 32 }, (_, i) => Math.sin(seed + i)))],
});

/** `clients` loops of requests until stop() (with `pauseMs` between a client's requests); counts outcomes. */
function load(target: ServedRepository, clients: number, pauseMs = 0) {
  let running = true;
  const counts = { ok: 0, failed: 0, errors: [] as string[] };
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let k = 0; running; k++) {
      try {
        await target.client.call('ModelInfer', request(c * 1000 + k));
        counts.ok += 1;
      } catch (err) {
        counts.failed += 1;
        counts.errors.push(String(err));
      }
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  });
  return {
    counts,
    async stop() {
      running = false;
      await Promise.all(loops);
      return counts;
    },
  };
}

const ledger = async (port: number) => {
  const metrics = await scrape(port);
  return (metrics.get('hotpath_arena_allocated_bytes{tenant="default",memory="host"}') ?? 0) +
    (metrics.get('hotpath_arena_reserved_bytes{tenant="default",memory="host"}') ?? 0);
};

describe('leak patrol', () => {
  it('detects a leak under load within 2 intervals and restarts the pool without failing a request', async () => {
    served = await serveRepository(
      // 512 KiB per batch crosses 2 MiB within one interval at any plausible batch rate
      // (4 batches in 250 ms), so detection does not depend on how busy the machine is.
      leakingRepository({ hotpath_fault_leak_bytes_per_batch: '512KiB', hotpath_fault_leak_generations: '1', memory_footprint_bytes: '64MiB' }),
      ['--enable-fault-injection', '--patrol-interval', '0.25', '--patrol-leak-threshold', '2MiB', '--patrol-growth-rate', '1GiB'],
    );
    const { server } = served;
    const before = await ledger(server.metricsPort);
    const traffic = load(served, 8);
    const restarted = await server.waitForLog((l) => l['msg'] === 'worker pool restarted');
    await new Promise((resolve) => setTimeout(resolve, 500)); // keep serving on the new generation
    const counts = await traffic.stop();

    expect(counts.failed, counts.errors.slice(0, 3).join('\n')).toBe(0);
    expect(counts.ok).toBeGreaterThan(100);
    const detected = server.logs.find((l) => l['msg'] === 'leak detected: restarting the worker pool')!;
    expect(detected['reason']).toBe('leak_threshold');
    // Detected within 2 intervals: at most 2 samples saw the leak, the last one over the threshold.
    const samples = detected['samples'] as { leak_bytes: number }[];
    expect(samples.filter((s) => s.leak_bytes > 0).length).toBeLessThanOrEqual(2);
    const oldIds = restarted['old_thread_ids'] as number[];
    const newIds = restarted['new_thread_ids'] as number[];
    expect(newIds.length).toBeGreaterThan(0);
    expect(newIds.some((id) => oldIds.includes(id))).toBe(false);
    expect(restarted['freed_bytes']).toBeGreaterThan(4 * MiB);
    const after = await ledger(server.metricsPort);
    expect(Math.abs(after - before)).toBeLessThanOrEqual(0.05 * before);
    const metrics = await scrape(server.metricsPort);
    expect(metrics.get('hotpath_patrol_restarts_total{model="ctr_mlp",reason="leak_threshold"}')).toBe(1);
    expect(metrics.get('hotpath_model_degraded{model="ctr_mlp",version="1"}')).toBe(0);
  });

  it('marks a model whose leak persists after N restarts degraded, with no restart loop', async () => {
    served = await serveRepository(
      leakingRepository({ hotpath_fault_leak_bytes_per_batch: '1MiB' }),
      ['--enable-fault-injection', '--patrol-interval', '0.25', '--patrol-leak-threshold', '4MiB',
        '--patrol-growth-rate', '1GiB', '--patrol-max-restarts', '2'],
    );
    const { server } = served;
    const traffic = load(served, 1, 10);
    await server.waitForLog((l) => l['msg'] === 'leak persists after restarts: model marked degraded, no more restarts');
    await new Promise((resolve) => setTimeout(resolve, 1500)); // six more intervals
    const counts = await traffic.stop();
    expect(counts.failed, counts.errors.slice(0, 3).join('\n')).toBe(0);
    expect(server.logs.filter((l) => l['msg'] === 'leak detected: restarting the worker pool')).toHaveLength(2);
    const metrics = await scrape(server.metricsPort);
    expect(metrics.get('hotpath_patrol_restarts_total{model="ctr_mlp",reason="leak_threshold"}')).toBe(2);
    expect(metrics.get('hotpath_model_degraded{model="ctr_mlp",version="1"}')).toBe(1);
    const index = await served.client.call('RepositoryIndex', {});
    expect(index['models']).toEqual([
      expect.objectContaining({ name: 'ctr_mlp', state: 'READY', reason: 'degraded: leak persists after 2 restarts' }),
    ]);
  });

  it('refuses the leak parameter without --enable-fault-injection: the model fails to load', async () => {
    served = await serveRepository(leakingRepository({ hotpath_fault_leak_bytes_per_batch: '1MiB' }));
    const index = await served.client.call('RepositoryIndex', {});
    expect(index['models'][0]).toMatchObject({ name: 'ctr_mlp', state: 'UNAVAILABLE' });
    expect(index['models'][0]['reason']).toMatch(/parameter 'hotpath_fault_leak_bytes_per_batch' needs --enable-fault-injection/);
  });
});
