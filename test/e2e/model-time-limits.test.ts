/**
 * Time limits for models (issue 21, item 7): a model whose warm-up never
 * returns (onnxruntime's inverse DFT on axis 0, test/fixtures/never-warm-model.ts)
 * fails alone once `--model-load-timeout` passes, with the stage in its
 * reason; its load slot and its arena charge are released, so the others load
 * and serve; `--strict-readiness` decides whether the server is ready
 * meanwhile; and SIGTERM ends the process within drain delay + drain timeout
 * + 5 s although a worker thread is stuck in native code, which
 * process.exit() would wait for forever.
 *
 * The second suite uses the per-model limit (`model_load_timeout_secs`) on a
 * warm-up made slow by the test-only delay, with `--strict-readiness=false`.
 */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { writeNeverWarmModel } from '../fixtures/never-warm-model.js';
import { tempRepository } from './helpers/repositories.js';
import { httpGet, scrape } from './helpers/probes.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import type { Message } from './helpers/triton-client.js';

const LOAD_TIMEOUT_S = 3;
const DRAIN_DELAY_S = 1;
const DRAIN_TIMEOUT_S = 2;

const indexEntry = async (served: ServedRepository, name: string): Promise<Message | undefined> =>
  ((await served.client.call('RepositoryIndex', {}))['models'] as Message[]).find((m) => m['name'] === name);

describe('a model whose warm-up never returns', () => {
  let served: ServedRepository;
  let started = 0;

  beforeAll(async () => {
    started = performance.now();
    served = await serveRepository(
      tempRepository(async (dir) => {
        // Its own tenant, and a declared footprint charged before the workers start.
        await writeNeverWarmModel(dir, 'a_never_warms', [
          'parameters { key: "tenant" value: { string_value: "stuck" } }',
          'parameters { key: "memory_footprint_bytes" value: { string_value: "96MiB" } }',
          '',
        ].join('\n'));
        await writeIdentityModel(dir, { name: 'b_plain', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [3] });
      }),
      [
        '--model-load-timeout', String(LOAD_TIMEOUT_S),
        // One slot: the stuck model (first by name) holds it until its limit passes.
        '--model-load-concurrency', '1',
        '--tenant', 'stuck:256MiB',
        '--drain-delay', String(DRAIN_DELAY_S),
        '--drain-timeout', String(DRAIN_TIMEOUT_S),
      ],
      { waitFor: 'listening' },
    );
  });

  afterAll(async () => {
    if (served?.server.process.exitCode === null) served.server.process.kill('SIGKILL');
    await served?.close();
  });

  it('charges the stuck model while it warms up', async () => {
    // Reservations (accounting-only) are what a model's footprint is charged as.
    let reserved = 0;
    for (let i = 0; i < 100 && reserved === 0; i++) {
      const metrics = await scrape(served.server.metricsPort);
      reserved = metrics.get('hotpath_arena_reserved_bytes{tenant="stuck",memory="host"}') ?? 0;
      if (reserved === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(reserved).toBe(96 * 1024 * 1024);
    expect(await indexEntry(served, 'a_never_warms')).toMatchObject({ state: 'LOADING' });
  });

  it('fails it at the limit with the stage, and the other model loads and serves', async () => {
    await served.server.waitForLog((l) => l['msg'] === 'hotpath serving');
    const readyLog = await served.server.waitForLog((l) => l['msg'] === 'model ready' && l['model'] === 'b_plain');
    const sinceStart = (performance.now() - started) / 1000;
    console.info(`[model-time-limits] b_plain ready ${sinceStart.toFixed(1)} s after start (load ${String(readyLog['load_ms'])} ms; the stuck model held the only slot ${LOAD_TIMEOUT_S} s)`);
    expect(await served.client.call('ModelReady', { name: 'b_plain' })).toEqual({ ready: true });
    const entry = await indexEntry(served, 'a_never_warms');
    expect(entry).toMatchObject({ name: 'a_never_warms', version: '1', state: 'UNAVAILABLE' });
    expect(entry!['reason']).toMatch(/^load timed out after 3 s \(--model-load-timeout\) while warming up \(version 1\)$/);
    const err = await served.client.callError('ModelInfer', { model_name: 'a_never_warms' });
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/^model 'a_never_warms' is not ready \(UNAVAILABLE: load timed out after 3 s/);
    const failed = served.server.logs.find((l) => l['msg'] === 'model failed to load' && l['model'] === 'a_never_warms');
    expect(failed?.['error']).toMatch(/load timed out after 3 s/);
  });

  it('releases its arena charge', async () => {
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get('hotpath_arena_reserved_bytes{tenant="stuck",memory="host"}')).toBe(0);
    expect(metrics.get('hotpath_arena_allocated_bytes{tenant="stuck",memory="host"}')).toBe(0);
  });

  it('is not ready under --strict-readiness (the default) while a start-up model is not', async () => {
    expect(await served.client.call('ServerReady')).toEqual({ ready: false });
    expect((await httpGet(served.server.httpPort, '/v2/health/ready')).status).toBe(503);
    expect(await served.client.call('ServerLive')).toEqual({ live: true });
  });

  it('ends on SIGTERM within drain delay + drain timeout + 5 s, from the addon, with status 1', async () => {
    const signalled = performance.now();
    served.server.process.kill('SIGTERM');
    const code = await served.server.exited;
    const seconds = (performance.now() - signalled) / 1000;
    console.info(`[model-time-limits] SIGTERM with a worker stuck in onnxruntime: exited ${code} after ${seconds.toFixed(2)} s (limit ${DRAIN_DELAY_S + DRAIN_TIMEOUT_S + 5} s)`);
    expect(seconds).toBeLessThan(DRAIN_DELAY_S + DRAIN_TIMEOUT_S + 5);
    expect(code).toBe(1);
    // The exit event may come before the last lines are read from the pipe.
    const stuck = await Promise.race([
      served.server.waitForLog((l) => l['msg'] === 'worker threads are stuck in native code: exiting without joining them'),
      new Promise((resolve) => setTimeout(() => resolve(undefined), 3000)),
    ]);
    expect(stuck).toMatchObject({ level: 'warn', pools_still_stopping: 1 });
  });
});

describe('a model with its own limit, and --strict-readiness=false', () => {
  let served: ServedRepository;

  beforeAll(async () => {
    served = await serveRepository(
      tempRepository(async (dir) => {
        await writeIdentityModel(dir, { name: 'slow_warm', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [3] });
        await appendFile(path.join(dir, 'slow_warm', 'config.pbtxt'), [
          'parameters { key: "hotpath_fault_warmup_delay_ms" value { string_value: "10000" } }',
          'parameters { key: "model_load_timeout_secs" value { string_value: "4.5" } }',
          '',
        ].join('\n'));
        await writeIdentityModel(dir, { name: 'plain', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [3] });
      }),
      ['--enable-fault-injection', '--strict-readiness=false', '--model-load-timeout', '0'],
    );
  });

  afterAll(() => served?.close());

  it('fails the model with its own limit in the reason; the server is ready anyway', async () => {
    const entry = await indexEntry(served, 'slow_warm');
    expect(entry).toMatchObject({ state: 'UNAVAILABLE' });
    expect(entry!['reason']).toMatch(/^load timed out after 4\.5 s \(config parameter model_load_timeout_secs\) while warming up \(version 1\)$/);
    expect(await served.client.call('ModelReady', { name: 'plain' })).toEqual({ ready: true });
    expect(await served.client.call('ServerReady')).toEqual({ ready: true });
    expect((await httpGet(served.server.httpPort, '/v2/health/ready')).status).toBe(200);
  });

  it('answers a client load that passes the limit DEADLINE_EXCEEDED, and keeps nothing of it', async () => {
    const started = performance.now();
    const err = await served.client.callError('RepositoryModelLoad', { model_name: 'slow_warm' });
    const seconds = (performance.now() - started) / 1000;
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(err.details).toMatch(/^load timed out after 4\.5 s \(config parameter model_load_timeout_secs\) while warming up \(version 1\)$/);
    expect(seconds).toBeLessThan(8);
    expect(await served.client.call('ModelReady', { name: 'slow_warm' })).toEqual({ ready: false });
  });

  it('exits 0 on SIGTERM: the slow (not stuck) workers were stopped', async () => {
    const code = await served.server.stop();
    expect(code).toBe(0);
  });
});

describe('SIGTERM while a model is stuck warming up, without a load limit', () => {
  let served: ServedRepository;

  beforeAll(async () => {
    served = await serveRepository(
      tempRepository((dir) => writeNeverWarmModel(dir, 'never_warms')),
      ['--model-load-timeout', '0', '--drain-delay', String(DRAIN_DELAY_S), '--drain-timeout', String(DRAIN_TIMEOUT_S)],
      { waitFor: 'listening' },
    );
  });

  afterAll(async () => {
    if (served?.server.process.exitCode === null) served.server.process.kill('SIGKILL');
    await served?.close();
  });

  it('never turns ready, and still exits within drain delay + drain timeout + 5 s', async () => {
    let entry = await indexEntry(served, 'never_warms');
    for (let i = 0; i < 200 && entry?.['reason'] !== 'warming up'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      entry = await indexEntry(served, 'never_warms');
    }
    expect(entry).toMatchObject({ state: 'LOADING', reason: 'warming up' });
    expect(await served.client.call('ServerReady')).toEqual({ ready: false });
    const signalled = performance.now();
    served.server.process.kill('SIGTERM');
    const code = await served.server.exited;
    const seconds = (performance.now() - signalled) / 1000;
    console.info(`[model-time-limits] SIGTERM during a warm-up that never returns: exited ${code} after ${seconds.toFixed(2)} s (limit ${DRAIN_DELAY_S + DRAIN_TIMEOUT_S + 5} s)`);
    expect(code).toBe(1);
    expect(seconds).toBeLessThan(DRAIN_DELAY_S + DRAIN_TIMEOUT_S + 5);
  });
});
