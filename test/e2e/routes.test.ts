/**
 * Routes (--routes): a route name is a virtual model that clients call over
 * gRPC (unary and stream) and REST. Real server processes, the typed client
 * and node:http.
 *
 *   - header routing (case-insensitive), unmapped values fall through;
 *   - a sticky key always lands on the same arm, the one rendezvous hashing
 *     gives, and the split over a few hundred keys follows the weights (the
 *     exact ±2% over 20,000 keys is in test/unit/routing-arm-choice.test.ts);
 *   - the address fallback (x-forwarded-for) is sticky too;
 *   - ModelReady, ModelMetadata, ModelConfig and RepositoryIndex answer for a route;
 *   - shadow: its share of requests, the comparison histogram, a failing
 *     shadow never fails a request, a full shadow queue drops and counts;
 *   - breakers open under injected failures (fallback model) and injected
 *     latency (default outputs), recover once the fault ends, and without a
 *     fallback answer UNAVAILABLE at once;
 *   - an injected canary failure rolls the canary back;
 *   - with --require-api-key a route is its tenant's, and a file mixing tenants is refused;
 *   - an invalid file at start-up exits 2 naming the problem; a reload under
 *     load fails no request, and an invalid file is refused.
 *
 * Faults are the model-level test hooks (config parameters, refused without
 * --enable-fault-injection; src/repository/fault-parameters.ts).
 */
import { copyFile, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initMlp, mlpGraph } from '../../models/lib/mlp.js';
import { serializeModel } from '../../models/lib/onnx-builder.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { createClient, InferenceError, status, type HotpathClient, type InferResult } from '../../src/client/index.js';
import { rendezvous, weightedArm } from '../../src/routing/arm-choice.js';
import { keyHash } from '../../src/security/api-keys.js';
import { httpJson, scrape } from './helpers/probes.js';
import { ctrVariant, sampleRepository, tempRepository } from './helpers/repositories.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';

const FEATURES = Float32Array.from({ length: 32 }, (_, i) => ((i * 7) % 11) / 11 - 0.3);
const input = (rows = 1) => ({ features: { shape: [rows, 32], data: Float32Array.from({ length: rows * 32 }, (_, i) => FEATURES[i % 32]!) } });

/** `extra` config lines for a model-level fault. */
const fault = (parameters: Record<string, string>) =>
  Object.entries(parameters)
    .map(([key, value]) => `parameters { key: "${key}" value: { string_value: "${value}" } }\n`)
    .join('');

/** A ctr_mlp-shaped model with other weights: its scores differ from ctr's. */
async function ctrOtherWeights(dir: string, name: string): Promise<void> {
  const layers = initMlp(new SeededRandom(0x5eed), { sizes: [32, 64, 32, 1], finalActivation: 'sigmoid', finalBiasOffset: -1 });
  await ctrVariant(dir, name, '');
  await writeFile(path.join(dir, name, '1', 'model.onnx'), serializeModel(mlpGraph(layers, { name, doc: 'ctr, other weights', inputName: 'features', outputName: 'score' })));
}

/** `ctr` with versions 1 and 2 (the same weights: model_version tells them apart). */
async function ctrTwoVersions(dir: string): Promise<void> {
  await ctrVariant(dir, 'ctr', 'version_policy: { all: {} }\n');
  await mkdir(path.join(dir, 'ctr', '2'), { recursive: true });
  await copyFile(path.join(dir, 'ctr', '1', 'model.onnx'), path.join(dir, 'ctr', '2', 'model.onnx'));
}

const ROUTES = `
routes:
  scorer:
    arms:
      stable: { model: ctr, version: 1, weight: 70 }
      canary: { model: ctr, version: 2, weight: 30 }
    header: { name: X-Model-Stage, arms: { canary: canary, stable: stable } }
    sticky_key: x-user-id
    shadow: { model: ctr_next, percent: 50 }
  by_address:
    arms:
      a: { model: ctr, version: 1, weight: 50 }
      b: { model: ctr, version: 2, weight: 50 }
    sticky_fallback: address
  shadow_broken:
    arms: { main: { model: ctr, version: 1, weight: 1 } }
    shadow: { model: ctr_broken, percent: 100 }
  shadow_slow:
    arms: { main: { model: ctr, version: 1, weight: 1 } }
    shadow: { model: ctr_slow, percent: 100 }
  guarded:
    arms: { main: { model: ctr_flaky, weight: 1 } }
    breaker: { window_s: 30, min_requests: 10, error_rate: 0.5, open_s: 1, probes: 2 }
    fallback: { model: ctr_next }
  slow_guarded:
    arms: { main: { model: ctr_sluggish, weight: 1 } }
    breaker: { window_s: 30, min_requests: 4, slow_ms: 150, slow_rate: 0.5, open_s: 1, probes: 1 }
    fallback: { outputs: { score: { datatype: FP32, value: 0.5 } } }
  bare:
    arms: { main: { model: ctr_broken, weight: 1 } }
    breaker: { window_s: 30, min_requests: 4, error_rate: 0.5, open_s: 60 }
  rollout:
    arms:
      stable: { model: ctr, version: 1, weight: 50 }
      canary: { model: ctr_broken, weight: 50 }
    header: { name: x-model-stage, arms: { canary: canary } }
    rollback: { arm: canary, error_rate: 0.5, min_requests: 5, window_s: 60 }
`;

let server: RunningServer;
let client: HotpathClient;
let repo: { dir: string; remove: () => Promise<void> };
let routesDir: string;
let routesFile: string;

/** Replaces the routes file in one rename, as an editor or a ConfigMap update does. */
async function writeRoutes(text: string): Promise<void> {
  const next = path.join(routesDir, `.routes-${randomBytes(4).toString('hex')}.yaml`);
  await writeFile(next, text);
  await rename(next, routesFile);
}

beforeAll(async () => {
  routesDir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-routes-'));
  routesFile = path.join(routesDir, 'routes.yaml');
  await writeFile(routesFile, ROUTES);
  repo = await tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    await ctrTwoVersions(dir);
    await ctrOtherWeights(dir, 'ctr_next');
    await ctrVariant(dir, 'ctr_broken', fault({ hotpath_fault_error_rate: '1' }));
    await ctrVariant(dir, 'ctr_slow', fault({ hotpath_fault_delay_ms: '300' }));
    await ctrVariant(dir, 'ctr_flaky', fault({ hotpath_fault_error_rate: '1', hotpath_fault_duration_ms: '2500' }));
    await ctrVariant(dir, 'ctr_sluggish', fault({ hotpath_fault_delay_ms: '300', hotpath_fault_duration_ms: '2500' }));
  });
  server = await startServer(repo.dir, [
    '--routes', routesFile, '--enable-fault-injection',
    '--shadow-queue-size', '4', '--shadow-concurrency', '1',
  ]);
  client = createClient(server.grpcAddress);
});

afterAll(async () => {
  client?.close();
  await server?.stop();
  await repo?.remove();
  if (routesDir !== undefined) await rm(routesDir, { recursive: true, force: true });
});

type Outcome = { ok: InferResult } | { code: number; message: string };

async function outcome(work: Promise<InferResult>): Promise<Outcome> {
  try {
    return { ok: await work };
  } catch (err) {
    if (!(err instanceof InferenceError)) throw err;
    return { code: err.code, message: err.message };
  }
}

const call = (route: string, metadata: Record<string, string> = {}) => client.infer(route, input(), { metadata });

async function metric(name: string): Promise<number> {
  return (await scrape(server.metricsPort)).get(name) ?? 0;
}

async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** POST /v2/models/{route}/infer with JSON and extra headers. */
function restInfer(route: string, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const body = JSON.stringify({ inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], data: [...FEATURES] }] });
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port: server.httpPort, method: 'POST', path: `/v2/models/${route}/infer`, headers: { 'content-type': 'application/json', ...headers } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, json: JSON.parse(text) }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const score = (result: InferResult) => (result.output('score').data as Float32Array)[0]!;

/** Successful answers from 'scorer', for the per-arm metrics and the shadow's share. */
const scorerAnswers = { stable: 0, canary: 0 };
function tally(result: InferResult): InferResult {
  const arm = result.parameters['hotpath_arm'] as 'stable' | 'canary';
  if (result.modelName === 'scorer') scorerAnswers[arm] += 1;
  return result;
}

describe('arm choice', () => {
  it('sends a mapped header to its arm (case-insensitively), and every answer names its arm and version', async () => {
    // (HTTP/2 drops a metadata value with surrounding spaces, so none is tried here.)
    for (const value of ['canary', 'CANARY', 'Canary']) {
      const result = tally(await call('scorer', { 'x-model-stage': value }));
      expect(result.modelName).toBe('scorer');
      expect(result.parameters['hotpath_arm']).toBe('canary');
      expect(result.modelVersion).toBe('2');
    }
    const stable = tally(await call('scorer', { 'x-model-stage': 'stable', 'x-user-id': 'someone' }));
    expect(stable.parameters['hotpath_arm']).toBe('stable');
    expect(stable.modelVersion).toBe('1');
    expect(stable.parameters['hotpath_degraded']).toBeUndefined();
  });

  it('lets an unmapped header value fall through to the sticky key', async () => {
    const arms = [weightedArm('stable', 70), weightedArm('canary', 30)];
    for (const key of ['u-1', 'u-2', 'u-3', 'u-4', 'u-5', 'u-6']) {
      const expected = arms[rendezvous(arms, key)]!.name;
      const result = tally(await call('scorer', { 'x-model-stage': 'nightly', 'x-user-id': key }));
      expect(result.parameters['hotpath_arm']).toBe(expected);
    }
  });

  it('keeps a sticky key on one arm, the rendezvous one, and splits many keys by the weights', async () => {
    const arms = [weightedArm('stable', 70), weightedArm('canary', 30)];
    const keys = Array.from({ length: 300 }, (_, i) => `user-${i}`);
    const first = new Map<string, string>();
    for (const key of keys) {
      const result = tally(await call('scorer', { 'x-user-id': key }));
      const arm = result.parameters['hotpath_arm'] as string;
      expect(arm).toBe(arms[rendezvous(arms, key)]!.name);
      expect(result.modelVersion).toBe(arm === 'canary' ? '2' : '1');
      first.set(key, arm);
    }
    // The same key lands on the same arm every time.
    for (const key of keys.slice(0, 40)) {
      for (let i = 0; i < 2; i++) expect(tally(await call('scorer', { 'x-user-id': key })).parameters['hotpath_arm']).toBe(first.get(key));
    }
    const canary = [...first.values()].filter((arm) => arm === 'canary').length / keys.length;
    // 30% expected; 300 keys: one standard deviation is 2.6 points.
    expect(canary).toBeGreaterThan(0.2);
    expect(canary).toBeLessThan(0.4);
  });

  it('hashes the address when there is no key (sticky_fallback: address), over REST', async () => {
    const arms = [weightedArm('a', 50), weightedArm('b', 50)];
    for (const address of ['203.0.113.7', '198.51.100.23', '192.0.2.200', '203.0.113.99']) {
      const expected = arms[rendezvous(arms, address)]!.name;
      for (let i = 0; i < 3; i++) {
        const { status: code, json } = await restInfer('by_address', { 'x-forwarded-for': `${address}, 10.0.0.1` });
        expect(code).toBe(200);
        expect(json.model_name).toBe('by_address');
        expect(json.parameters.hotpath_arm).toBe(expected);
        expect(json.model_version).toBe(expected === 'a' ? '1' : '2');
      }
    }
  });

  it('hashes the peer address over gRPC when there is neither a key nor x-forwarded-for', async () => {
    // The gRPC door's view parses the peer only when a route reads it; this client's peer is 127.0.0.1.
    const arms = [weightedArm('a', 50), weightedArm('b', 50)];
    const expected = arms[rendezvous(arms, '127.0.0.1')]!.name;
    for (let i = 0; i < 3; i++) {
      const result = await call('by_address');
      expect(result.modelName).toBe('by_address');
      expect(result.parameters['hotpath_arm']).toBe(expected);
    }
    // x-forwarded-for's first entry wins over the peer, as over REST.
    const forwarded = arms[rendezvous(arms, '203.0.113.7')]!.name;
    expect((await call('by_address', { 'x-forwarded-for': '203.0.113.7, 10.0.0.1' })).parameters['hotpath_arm']).toBe(forwarded);
  });

  it('routes REST and stream requests by header as gRPC unary ones', async () => {
    const { status: code, json } = await restInfer('scorer', { 'x-model-stage': 'canary' });
    expect(code).toBe(200);
    expect(json).toMatchObject({ model_name: 'scorer', model_version: '2', parameters: { hotpath_arm: 'canary' } });
    scorerAnswers.canary += 1;
    const stream = client.stream({ metadata: { 'x-model-stage': 'canary' } });
    const answers = await Promise.all([stream.infer('scorer', input()), stream.infer('scorer', input(2))]);
    await stream.end();
    for (const answer of answers) {
      tally(answer);
      expect(answer.parameters['hotpath_arm']).toBe('canary');
      expect(answer.modelVersion).toBe('2');
    }
    expect(answers[1]!.output('score').shape).toEqual([2, 1]);
  });

  it('counts requests per route and arm', async () => {
    expect(await metric('hotpath_route_requests_total{route="scorer",arm="canary",result="ok"}')).toBe(scorerAnswers.canary);
    expect(await metric('hotpath_route_requests_total{route="scorer",arm="stable",result="ok"}')).toBe(scorerAnswers.stable);
  });
});

describe('a route answers as a model', () => {
  it('ModelReady, ModelMetadata, ModelConfig and RepositoryIndex (gRPC)', async () => {
    expect(await client.ready('scorer')).toBe(true);
    const metadata = await client.metadata('scorer');
    expect(metadata).toMatchObject({
      name: 'scorer',
      versions: [],
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 32] }],
      outputs: [{ name: 'score', datatype: 'FP32', shape: [-1, 1] }],
    });
    const config = await client.config('scorer');
    expect(config.name).toBe('scorer');
    expect(config.maxBatchSize).toBe(64);
    const index = await client.repositoryIndex();
    expect(index).toContainEqual({ name: 'scorer', version: '', state: 'READY', reason: 'route' });
    expect(index).toContainEqual(expect.objectContaining({ name: 'ctr', version: '2', state: 'READY' }));
    const versioned = await client.ready('scorer', { version: 1 }).catch((err: InferenceError) => err);
    expect(versioned).toBeInstanceOf(InferenceError);
    expect((versioned as InferenceError).code).toBe(status.NOT_FOUND);
    expect((versioned as InferenceError).message).toMatch(/'scorer' is a route, which has no versions/);
  });

  it('the REST metadata, readiness and config endpoints', async () => {
    expect((await httpJson(server.httpPort, '/v2/models/scorer')).json).toMatchObject({ name: 'scorer', inputs: [{ name: 'features', shape: [-1, 32] }] });
    expect((await httpJson(server.httpPort, '/v2/models/scorer/config')).json).toMatchObject({ name: 'scorer', max_batch_size: 64 });
    const ready = await new Promise<number>((resolve) => http.get({ host: '127.0.0.1', port: server.httpPort, path: '/v2/models/scorer/ready' }, (r) => resolve(r.statusCode ?? 0)));
    expect(ready).toBe(200);
  });

  it('/healthz shows each route with its arms, weights and breakers', async () => {
    const { json } = await httpJson(server.httpPort, '/healthz');
    expect(json.routes.file).toBe(routesFile);
    expect(json.routes.routes.scorer).toMatchObject({
      stable_arm: 'stable',
      rolled_back: [],
      arms: { stable: { model: 'ctr', version: 1, weight: 70 }, canary: { model: 'ctr', version: 2, weight: 30 } },
    });
    expect(json.routes.routes.guarded.arms.main.breaker).toEqual({ state: 'closed', value: 0 });
  });
});

describe('shadow', () => {
  it('sends its share of requests to the shadow and observes every comparison', async () => {
    const answered = scorerAnswers.stable + scorerAnswers.canary;
    const histogram = 'hotpath_shadow_abs_diff_count{route="scorer"}';
    await eventually(
      async () =>
        (await metric(histogram)) + (await metric('hotpath_shadow_errors_total{route="scorer"}')) ===
        (await metric('hotpath_shadow_requests_total{route="scorer"}')),
      'the scorer shadow jobs to finish',
    );
    const sent = await metric('hotpath_shadow_requests_total{route="scorer"}');
    const dropped = await metric('hotpath_shadow_dropped_total{route="scorer"}');
    // percent: 50 of about 400 answers.
    expect((sent + dropped) / answered).toBeGreaterThan(0.35);
    expect((sent + dropped) / answered).toBeLessThan(0.65);
    expect(await metric('hotpath_shadow_errors_total{route="scorer"}')).toBe(0);
    expect(await metric(histogram)).toBe(sent);
    // ctr_next has other weights: a real difference, under 1 for a sigmoid score.
    const sum = await metric('hotpath_shadow_abs_diff_sum{route="scorer"}');
    expect(sum / sent).toBeGreaterThan(1e-4);
    expect(sum / sent).toBeLessThan(1);
  });

  it('never fails a request when the shadow fails; the errors are counted', async () => {
    for (let i = 0; i < 10; i++) {
      const result = await call('shadow_broken');
      expect(result.parameters['hotpath_arm']).toBe('main');
      await eventually(async () => (await metric('hotpath_shadow_errors_total{route="shadow_broken"}')) === i + 1, 'the shadow error');
    }
    expect(await metric('hotpath_shadow_requests_total{route="shadow_broken"}')).toBe(10);
    expect(await metric('hotpath_shadow_abs_diff_count{route="shadow_broken"}')).toBe(0);
    await server.waitForLog((line) => line['msg'] === 'shadow request failed (the client was answered; at most one such line a minute per route)' && line['route'] === 'shadow_broken');
  });

  it('drops and counts shadow work beyond the queue, and answers every request', async () => {
    // One slow shadow runs at a time and four wait (--shadow-concurrency 1, --shadow-queue-size 4).
    const results = await Promise.all(Array.from({ length: 24 }, () => outcome(call('shadow_slow'))));
    expect(results.every((r) => 'ok' in r)).toBe(true);
    const sent = await metric('hotpath_shadow_requests_total{route="shadow_slow"}');
    const dropped = await metric('hotpath_shadow_dropped_total{route="shadow_slow"}');
    expect(sent + dropped).toBe(24);
    expect(dropped).toBeGreaterThanOrEqual(15);
    await eventually(async () => (await metric('hotpath_shadow_abs_diff_count{route="shadow_slow"}')) === sent, 'the queued slow shadows', 10_000);
    expect(await metric('hotpath_shadow_queue_size')).toBe(0);
  });
});

describe('circuit breaker', () => {
  it('opens under injected failures, answers from the fallback model, and recovers when the fault ends', async () => {
    const reference = score(await client.infer('ctr_next', input()));
    const failures: Outcome[] = [];
    for (let i = 0; i < 10; i++) failures.push(await outcome(call('guarded')));
    for (const failure of failures) {
      expect(failure).toMatchObject({ code: status.INTERNAL });
      expect((failure as { message: string }).message).toMatch(/route 'guarded' arm 'main': .*injected failure/);
    }
    expect(await metric('hotpath_breaker_state{route="guarded",arm="main"}')).toBe(2);
    const degraded = await call('guarded');
    expect(degraded.parameters).toMatchObject({ hotpath_arm: 'main', hotpath_degraded: true });
    expect(degraded.modelName).toBe('guarded');
    expect(degraded.modelVersion).toBe('1');
    expect(score(degraded)).toBe(reference);
    expect((await httpJson(server.httpPort, '/healthz')).json.routes.routes.guarded.arms.main.breaker.state).toBe('open');
    await server.waitForLog((line) => line['msg'] === 'circuit breaker opened: the arm answers from the fallback' && line['route'] === 'guarded');
    // The fault lasts 2.5 s from the first request; probes after open_s (1 s) fail until then (the
    // client gets the probe's error), and two in a row succeed after.
    await eventually(async () => {
      await outcome(call('guarded'));
      return (await metric('hotpath_breaker_state{route="guarded",arm="main"}')) === 0;
    }, 'the breaker to close');
    const answer = await call('guarded');
    expect(answer.parameters['hotpath_degraded']).toBeUndefined();
    expect(score(answer)).not.toBe(reference);
    expect(await metric('hotpath_route_requests_total{route="guarded",arm="main",result="error"}')).toBeGreaterThanOrEqual(10);
    expect(await metric('hotpath_route_requests_total{route="guarded",arm="main",result="fallback"}')).toBeGreaterThanOrEqual(1);
    await server.waitForLog((line) => line['msg'] === 'circuit breaker closed' && line['route'] === 'guarded');
  });

  it('opens under injected latency and answers with the default outputs, then recovers', async () => {
    // Four slow answers (300 ms > slow_ms 150) open it.
    const slow = await Promise.all(Array.from({ length: 4 }, () => call('slow_guarded')));
    expect(slow.every((r) => r.parameters['hotpath_degraded'] === undefined)).toBe(true);
    expect(await metric('hotpath_breaker_state{route="slow_guarded",arm="main"}')).toBe(2);
    const started = performance.now();
    const degraded = await client.infer('slow_guarded', input(3));
    // Not the arm's 300 ms.
    expect(performance.now() - started).toBeLessThan(250);
    expect(degraded.parameters).toMatchObject({ hotpath_arm: 'main', hotpath_degraded: true });
    expect(degraded.modelVersion).toBe('');
    expect(degraded.output('score').shape).toEqual([3, 1]);
    expect([...(degraded.output('score').data as Float32Array)]).toEqual([0.5, 0.5, 0.5]);
    // A malformed request is still refused while the breaker is open.
    const malformed = await outcome(client.infer('slow_guarded', { features: new Float32Array(5) }));
    expect(malformed).toMatchObject({ code: status.INVALID_ARGUMENT });
    // A probe slower than slow_ms opens it again; once the fault ends (2.5 s) one fast probe closes it.
    await eventually(async () => {
      await call('slow_guarded');
      return (await metric('hotpath_breaker_state{route="slow_guarded",arm="main"}')) === 0;
    }, 'the latency breaker to close');
    expect((await call('slow_guarded')).parameters['hotpath_degraded']).toBeUndefined();
  });

  it('answers UNAVAILABLE at once while open when the route has no fallback', async () => {
    const failuresBefore = await metric('nv_inference_request_failure{model="ctr_broken",version="1",reason="BACKEND"}');
    for (let i = 0; i < 4; i++) expect(await outcome(call('bare'))).toMatchObject({ code: status.INTERNAL });
    const refused = await outcome(call('bare'));
    expect(refused).toMatchObject({ code: status.UNAVAILABLE });
    // At once: the arm's model never saw it.
    expect(await metric('hotpath_route_requests_total{route="bare",arm="main",result="error"}')).toBe(4);
    expect(await metric('nv_inference_request_failure{model="ctr_broken",version="1",reason="BACKEND"}')).toBe(failuresBefore + 4);
    expect((refused as { message: string }).message).toMatch(/route 'bare' arm 'main': circuit breaker open .*no fallback/);
    expect(await metric('hotpath_route_requests_total{route="bare",arm="main",result="unavailable"}')).toBe(1);
  });
});

describe('rollback', () => {
  it('rolls the canary back under an injected canary failure', async () => {
    let canaryErrors = 0;
    for (let i = 0; i < 60 && canaryErrors < 5; i++) {
      const result = await outcome(call('rollout'));
      if (!('ok' in result)) {
        canaryErrors += 1;
        expect(result.message).toMatch(/route 'rollout' arm 'canary'/);
      }
    }
    expect(canaryErrors).toBe(5);
    expect(await metric('hotpath_route_rollbacks_total{route="rollout",arm="canary"}')).toBe(1);
    expect(await metric('hotpath_route_rolled_back{route="rollout",arm="canary"}')).toBe(1);
    // Every request now goes to stable, the canary header too.
    for (let i = 0; i < 20; i++) expect((await call('rollout')).parameters['hotpath_arm']).toBe('stable');
    expect((await call('rollout', { 'x-model-stage': 'canary' })).parameters['hotpath_arm']).toBe('stable');
    const { json } = await httpJson(server.httpPort, '/healthz');
    expect(json.routes.routes.rollout).toMatchObject({ rolled_back: ['canary'], arms: { canary: { weight: 0, configured_weight: 50, rolled_back: true } } });
    const log = await server.waitForLog((line) => String(line['msg']).startsWith('route arm rolled back'));
    expect(log).toMatchObject({ route: 'rollout', arm: 'canary', reason: 'error_rate', stable_arm: 'stable' });
  });
});

describe('reload', () => {
  it('reloads under load without a failed request, and refuses an invalid file', async () => {
    let stop = false;
    const failures: Outcome[] = [];
    let answered = 0;
    const arms = new Set<string>();
    const load = async () => {
      while (!stop) {
        const result = await outcome(call('scorer', { 'x-user-id': `load-${answered % 50}` }));
        if ('ok' in result) {
          answered += 1;
          arms.add(result.ok.parameters['hotpath_arm'] as string);
        } else failures.push(result);
      }
    };
    const loops = Array.from({ length: 4 }, () => load());
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      // New weights and a renamed arm, by SIGHUP (the directory watch may see it first: either reloads).
      await writeRoutes(ROUTES.replace('canary: { model: ctr, version: 2, weight: 30 }', 'green: { model: ctr, version: 2, weight: 100 }').replace('canary: canary, stable', 'canary: green, stable'));
      server.process.kill('SIGHUP');
      await server.waitForLog((line) => line['msg'] === 'routes reloaded');
      await new Promise((resolve) => setTimeout(resolve, 300));
      // A file naming a model that is not loaded: refused, the routes stay.
      await writeRoutes(ROUTES.replace('shadow: { model: ctr_next, percent: 50 }', 'shadow: { model: ctr_missing, percent: 50 }'));
      server.process.kill('SIGHUP');
      const refused = await server.waitForLog((line) => line['msg'] === 'routes file refused: keeping the previous routes');
      expect(refused['error']).toMatch(/route 'scorer': shadow: expected a loaded model, got model 'ctr_missing', which is not loaded/);
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    expect(failures).toEqual([]);
    // Traffic flowed through both reloads (how much depends on the machine's load).
    expect(answered).toBeGreaterThan(20);
    expect(arms.has('green')).toBe(true);
    const { json } = await httpJson(server.httpPort, '/healthz');
    expect(json.routes.routes.scorer.arms.green).toMatchObject({ weight: 100 });
    expect(json.routes.last_reload).toMatchObject({ status: 'refused' });
    expect(await metric('hotpath_routes_reloads_total{result="swapped"}')).toBeGreaterThanOrEqual(1);
    expect(await metric('hotpath_routes_reloads_total{result="refused"}')).toBeGreaterThanOrEqual(1);
    // The new table starts afresh: the rolled-back canary of 'rollout' is back (the file changed).
    expect(json.routes.routes.rollout.rolled_back).toEqual([]);
  });
});

describe('start-up', () => {
  it('exits 2 naming the problem when the routes file does not fit the models', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-routes-bad-'));
    const bad = path.join(dir, 'routes.yaml');
    await writeFile(bad, 'routes:\n  scorer:\n    arms:\n      stable: { model: ctr_mlp, weight: 1 }\n      canary: { model: nope, weight: 1 }\n');
    const repository = await sampleRepository(['ctr_mlp']);
    try {
      const started = startServer(repository.dir, ['--routes', bad]);
      await expect(started).rejects.toThrow(/exited with 2[\s\S]*--routes: routes file .*route 'scorer': arms\.canary: expected a loaded model, got model 'nope'/);
      await writeFile(bad, 'routes:\n  scorer:\n    arms: { stable: { model: ctr_mlp, weight: -1 } }\n');
      await expect(startServer(repository.dir, ['--routes', bad])).rejects.toThrow(/exited with 2[\s\S]*arms\.stable\.weight: expected a number >= 0, got -1/);
    } finally {
      await repository.remove();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('tenants (--require-api-key)', () => {
  const key = (tenant: string) => `${tenant}-${randomBytes(12).toString('base64url')}`;
  const KEYS = { ads: key('ads'), fraud: key('fraud') };
  let tenantServer: RunningServer;
  let tenantRepo: { dir: string; remove: () => Promise<void> };
  let dir: string;
  const tenant = (name: string) => `parameters { key: "tenant" value: { string_value: "${name}" } }\n`;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-routes-tenants-'));
    await writeFile(
      path.join(dir, 'tenants.json'),
      JSON.stringify({ tenants: { ads: { quota: '512MiB', keys: [keyHash(KEYS.ads)] }, fraud: { quota: '512MiB', keys: [keyHash(KEYS.fraud)] } } }),
    );
    await writeFile(path.join(dir, 'routes.yaml'), 'routes:\n  ads_route:\n    arms:\n      a: { model: ads_a, weight: 1 }\n      b: { model: ads_b, weight: 1 }\n');
    tenantRepo = await tempRepository(async (repoDir) => {
      await writeSampleRepository(repoDir, { only: ['ctr_mlp'] });
      await ctrVariant(repoDir, 'ads_a', tenant('ads'));
      await ctrVariant(repoDir, 'ads_b', tenant('ads'));
      await ctrVariant(repoDir, 'fraud_a', tenant('fraud'));
      await rm(path.join(repoDir, 'ctr_mlp'), { recursive: true });
    });
    tenantServer = await startServer(tenantRepo.dir, ['--routes', path.join(dir, 'routes.yaml'), '--tenants-file', path.join(dir, 'tenants.json'), '--require-api-key']);
  });

  afterAll(async () => {
    await tenantServer?.stop();
    await tenantRepo?.remove();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('serves a route to its tenant only; to another it reads as a missing model', async () => {
    const ads = createClient(tenantServer.grpcAddress, { apiKey: KEYS.ads });
    const fraud = createClient(tenantServer.grpcAddress, { apiKey: KEYS.fraud });
    try {
      const result = await ads.infer('ads_route', input());
      expect(['a', 'b']).toContain(result.parameters['hotpath_arm']);
      expect((await ads.repositoryIndex()).map((m) => m.name)).toContain('ads_route');
      expect((await fraud.repositoryIndex()).map((m) => m.name)).not.toContain('ads_route');
      const hidden = await outcome(fraud.infer('ads_route', input()));
      const missing = await outcome(fraud.infer('no_such_model', input()));
      expect(hidden).toMatchObject({ code: status.NOT_FOUND });
      expect((hidden as { message: string }).message).toBe((missing as { message: string }).message.replace('no_such_model', 'ads_route'));
      const metadata = await fraud.metadata('ads_route').catch((err: InferenceError) => err);
      expect((metadata as InferenceError).code).toBe(status.NOT_FOUND);
    } finally {
      ads.close();
      fraud.close();
    }
  });

  it('refuses a routes file whose route mixes tenants', async () => {
    await writeFile(path.join(dir, 'routes.yaml'), 'routes:\n  mixed:\n    arms:\n      a: { model: ads_a, weight: 1 }\n      f: { model: fraud_a, weight: 1 }\n');
    tenantServer.process.kill('SIGHUP');
    const refused = await tenantServer.waitForLog((line) => line['msg'] === 'routes file refused: keeping the previous routes');
    expect(refused['error']).toMatch(/route 'mixed': arms\.f: expected every model of the route in one tenant .*'ads'.*got arms\.f in tenant 'fraud'/);
    const ads = createClient(tenantServer.grpcAddress, { apiKey: KEYS.ads });
    try {
      expect((await ads.infer('ads_route', input())).modelName).toBe('ads_route');
    } finally {
      ads.close();
    }
  });
});
