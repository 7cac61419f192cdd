/**
 * Model-level fault hooks (config parameters, fault-parameters.ts): a model
 * that asks for injected failures or added latency is refused without
 * --enable-fault-injection; with it, the configured share of requests fails
 * as an execution failure (INTERNAL, counted BACKEND), the configured delay
 * is added, and the faults end after their duration or when the model is
 * reloaded with a config that no longer asks for them.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { createClient, InferenceError, status, type HotpathClient } from '../../src/client/index.js';
import { scrape } from './helpers/probes.js';
import { ctrVariant, tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository | undefined;
let client: HotpathClient | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  await served?.close();
  served = undefined;
});

const parameterText = (parameters: Record<string, string>) =>
  Object.entries(parameters)
    .map(([key, value]) => `parameters { key: "${key}" value: { string_value: "${value}" } }\n`)
    .join('');

/** ctr_mlp, and `faulty` (ctr_mlp's model) carrying `parameters`. */
function faultyRepository(parameters: Record<string, string>) {
  return tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    await ctrVariant(dir, 'faulty', parameterText(parameters));
  });
}

async function serve(parameters: Record<string, string>, args: string[] = ['--enable-fault-injection']) {
  served = await serveRepository(faultyRepository(parameters), args);
  client = createClient(served.server.grpcAddress);
  return { served, client };
}

const features = (seed: number) => ({ features: { shape: [1, 32], data: Float32Array.from({ length: 32 }, (_, i) => Math.sin(seed + i)) } });

/** Sends `count` requests to `model`, `concurrency` at a time; each outcome with its client-side latency. */
async function send(target: HotpathClient, model: string, count: number, concurrency = 1) {
  const outcomes: { ok: boolean; ms: number; error?: InferenceError }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const seed = next++;
        const started = performance.now();
        try {
          await target.infer(model, features(seed));
          outcomes.push({ ok: true, ms: performance.now() - started });
        } catch (err) {
          if (!(err instanceof InferenceError)) throw err;
          outcomes.push({ ok: false, ms: performance.now() - started, error: err });
        }
      }
    }),
  );
  return outcomes;
}

const FAULTY = 'model="faulty",version="1"';

describe('model fault hooks', () => {
  it('refuses the parameters without --enable-fault-injection: the model fails to load, the others serve', async () => {
    const { client } = await serve({ hotpath_fault_error_rate: '0.3', hotpath_fault_delay_ms: '30' }, []);
    const index = await client.repositoryIndex();
    expect(index.find((m) => m.name === 'faulty')).toMatchObject({ state: 'UNAVAILABLE' });
    expect(index.find((m) => m.name === 'faulty')!.reason).toMatch(/parameter 'hotpath_fault_(error_rate|delay_ms)' needs --enable-fault-injection/);
    expect(index.find((m) => m.name === 'ctr_mlp')).toMatchObject({ state: 'READY' });
    const err = await client.infer('faulty', features(1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InferenceError);
    expect((err as InferenceError).code).toBe(status.UNAVAILABLE);
  });

  it('refuses malformed values with the reason', async () => {
    const { client } = await serve({ hotpath_fault_error_rate: '1.5' });
    const index = await client.repositoryIndex();
    expect(index.find((m) => m.name === 'faulty')!.reason).toMatch(/parameter 'hotpath_fault_error_rate' must be a number in \[0, 1\], got '1.5'/);
    // Fixed configs load: the model-control API reports a bad one and keeps serving the rest.
    await writeFile(
      path.join(served!.dir, 'faulty', 'config.pbtxt'),
      'name: "faulty"\nmax_batch_size: 64\n' +
        'input [ { name: "features" data_type: TYPE_FP32 dims: [ 32 ] } ]\n' +
        'output [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]\n' +
        parameterText({ hotpath_fault_versions: 'two' }),
    );
    const load = await client.load('faulty').catch((e: unknown) => e);
    expect((load as InferenceError).details).toMatch(/parameter 'hotpath_fault_versions' must list versions like "1,2", got 'two'/);
  });

  it('fails exactly the configured share of requests, as INTERNAL execution failures counted BACKEND', async () => {
    const { served, client } = await serve({ hotpath_fault_error_rate: '0.3' });
    const outcomes = await send(client, 'faulty', 100, 8);
    const failed = outcomes.filter((o) => !o.ok);
    // The hits are spread evenly over the version's requests: 30 of 100, whatever their order.
    expect(failed).toHaveLength(30);
    for (const { error } of failed) {
      expect(error!.code).toBe(status.INTERNAL);
      expect(error!.details).toMatch(/^model 'faulty' version 1: injected failure \(parameter 'hotpath_fault_error_rate'\)$/);
    }
    const metrics = await scrape(served.server.metricsPort);
    expect(metrics.get(`nv_inference_request_failure{${FAULTY},reason="BACKEND"}`)).toBe(30);
    expect(metrics.get(`nv_inference_request_failure{${FAULTY},reason="OTHER"}`)).toBe(0);
    expect(metrics.get(`nv_inference_request_success{${FAULTY}}`)).toBe(70);
    // The other model is untouched.
    expect((await send(client, 'ctr_mlp', 20, 4)).every((o) => o.ok)).toBe(true);
    // Runs of consecutive requests hold 3 failures in every 10: no burst.
    const sequential = await send(client, 'faulty', 20);
    expect(sequential.filter((o) => !o.ok)).toHaveLength(6);
  });

  it('adds the configured latency to the configured share of requests, without failing them', async () => {
    const { client } = await serve({ hotpath_fault_delay_ms: '60', hotpath_fault_delay_rate: '0.5' });
    await send(client, 'ctr_mlp', 5); // the client's channel is up
    const outcomes = await send(client, 'faulty', 20);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    // Every other request waits 60 ms before it runs (lower bounds only: a busy machine only adds).
    const slow = outcomes.filter((o) => o.ms >= 60);
    expect(slow.length).toBeGreaterThanOrEqual(10);
    expect(outcomes.filter((_, i) => i % 2 === 1).every((o) => o.ms >= 60)).toBe(true);
    const stats = (await client.statistics('faulty'))[0]!;
    // The delay counts in the request's latency the server reports.
    expect(Number(stats.inferenceStats!.success!.ns) / 1e6).toBeGreaterThanOrEqual(10 * 60);
  });

  it('stops the faults after hotpath_fault_duration_ms from the first request', async () => {
    const { client } = await serve({ hotpath_fault_error_rate: '1', hotpath_fault_duration_ms: '700' });
    const during = await send(client, 'faulty', 5);
    expect(during.every((o) => !o.ok && o.error!.code === status.INTERNAL)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect((await send(client, 'faulty', 10)).every((o) => o.ok)).toBe(true);
  });

  it('ends (and starts) the faults when the model is reloaded with a changed config', async () => {
    const { served, client } = await serve({ hotpath_fault_error_rate: '1' });
    const configFile = path.join(served.dir, 'faulty', 'config.pbtxt');
    const base =
      'name: "faulty"\nmax_batch_size: 64\n' +
      'input [ { name: "features" data_type: TYPE_FP32 dims: [ 32 ] } ]\n' +
      'output [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]\n';
    expect((await send(client, 'faulty', 5)).every((o) => !o.ok)).toBe(true);

    // Traffic keeps flowing across each reload: no request fails but the injected ones.
    let running = true;
    const codes: status[] = [];
    const background = (async () => {
      while (running) {
        try {
          await client.infer('faulty', features(0));
        } catch (err) {
          codes.push((err as InferenceError).code);
        }
      }
    })();
    await writeFile(configFile, base);
    await client.load('faulty');
    const healed = await send(client, 'faulty', 20);
    expect(healed.every((o) => o.ok)).toBe(true);

    await writeFile(configFile, base + parameterText({ hotpath_fault_error_rate: '0.5' }));
    await client.load('faulty');
    running = false;
    await background;
    expect(codes.every((code) => code === status.INTERNAL)).toBe(true);
    // A reloaded version counts its requests afresh: 10 of 20.
    expect((await send(client, 'faulty', 20)).filter((o) => !o.ok)).toHaveLength(10);
  });

  it('acts only on the versions hotpath_fault_versions lists', async () => {
    const { client } = await serve({ hotpath_fault_error_rate: '1', hotpath_fault_versions: '2' });
    expect((await send(client, 'faulty', 10)).every((o) => o.ok)).toBe(true);
  });
});
