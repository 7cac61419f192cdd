/**
 * `--front-door-threads 2` serving ModelInfer in the door threads
 * (src/inference/door-inference.ts, door-catalog.ts): real grpc-js clients,
 * each on a connection of its own, against a real server process. Shows what
 * issue 20 asks of two threads:
 *   - both threads took connections and answered ModelInfer themselves
 *     (hotpath_door_model_infer_total{answered_by="door"}), with the right
 *     answers; a ModelStreamInfer stream too, its requests the door does not
 *     serve answered by the main thread in their place;
 *   - ModelStatistics and the metrics equal the requests sent, exactly, at the
 *     moment of the call (shared counters, no flush);
 *   - a tenant's in-flight limit and its rate limit hold exactly across
 *     threads while the door threads answer its requests themselves (the
 *     main thread's limiter is shared with them), every refusal counted in
 *     hotpath_tenant_rejected_total;
 *   - with API keys, a door thread's admission refuses a call over its
 *     tenant's limits from the metadata, before the request is read;
 *   - a cache hit crosses threads (a cached model's requests go to the main
 *     thread's one cache);
 *   - a reload under load fails no request, and the door threads serve the
 *     new version afterwards;
 *   - SIGTERM drains the calls open in both threads (served in the doors) and
 *     exits 0.
 * The queue-delay model ('slow': dynamic batching waiting up to 400 ms for a
 * batch of 8) keeps requests in flight without fault injection, which would
 * turn door serving off.
 */
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { keyHash } from '../../src/security/api-keys.js';
import { tempRepository } from './helpers/repositories.js';
import { scrape } from './helpers/probes.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { f32Bytes, readF32, TritonClient, type Message } from './helpers/triton-client.js';

let server: RunningServer;
let repo: { dir: string; remove: () => Promise<void> };
let secrets: string;
const clients: TritonClient[] = [];

/** A client on a connection of its own (grpc-js shares one per target otherwise). */
function ownConnection(): TritonClient {
  const client = new TritonClient(server.grpcAddress, { 'grpc.use_local_subchannel_pool': 1 });
  clients.push(client);
  return client;
}

const infer = (model: string, values: number[], extra: Message = {}): Message => ({
  model_name: model,
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length] }],
  raw_input_contents: [f32Bytes(values)],
  ...extra,
});

/** An FP32 identity model, batching up to 8; `config` is appended to its config.pbtxt. */
async function identity(dir: string, name: string, config: string): Promise<void> {
  const written = await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 8, withConfig: true });
  await appendFile(written.configPath!, config);
}

/** The 'metered' tenant's bucket size. */
const METERED_BURST = 6;

const rejectedOf = (metrics: Map<string, number>, tenant: string, reason: 'rate' | 'inflight') =>
  metrics.get(`hotpath_tenant_rejected_total{tenant="${tenant}",reason="${reason}"}`) ?? 0;

/** Requests both door threads answered themselves / forwarded to the main thread. */
const inDoors = (metrics: Map<string, number>, by: 'door' | 'main') => answeredBy(metrics, 0, by) + answeredBy(metrics, 1, by);

const answeredBy = (metrics: Map<string, number>, thread: number, by: 'door' | 'main') =>
  metrics.get(`hotpath_door_model_infer_total{door_thread="${thread}",answered_by="${by}"}`) ?? 0;

async function statsOf(client: TritonClient, model: string): Promise<Message> {
  return (await client.call('ModelStatistics', { name: model }))['model_stats'][0];
}

/**
 * Sends on every connection until each door thread has answered at least one more request itself than when the
 * call began (its catalog lists `model`); `connections` must reach both threads (two made one after the other do).
 */
async function untilServedInDoors(connections: TritonClient[], model: string): Promise<void> {
  const start = await scrape(server.metricsPort);
  for (let round = 0; round < 100; round += 1) {
    await Promise.all(connections.map((client) => client.call('ModelInfer', infer(model, [0]))));
    const metrics = await scrape(server.metricsPort);
    if ([0, 1].every((thread) => answeredBy(metrics, thread, 'door') > answeredBy(start, thread, 'door'))) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the door threads never served '${model}' themselves`);
}

beforeAll(async () => {
  secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-door-serving-'));
  const tenantsFile = path.join(secrets, 'tenants.json');
  await writeFile(
    tenantsFile,
    JSON.stringify({
      tenants: {
        capped: { quota: '64MiB', max_inflight: 2 },
        // A bucket of METERED_BURST that refills one request in 1000 s: none refills during the test.
        metered: { quota: '64MiB', rate: 0.001, burst: METERED_BURST },
      },
    }),
  );
  repo = await tempRepository(async (dir) => {
    await identity(dir, 'echo', 'dynamic_batching { max_queue_delay_microseconds: 100 }\n');
    await identity(dir, 'slow', 'dynamic_batching { preferred_batch_size: [8] max_queue_delay_microseconds: 400000 }\n');
    await identity(dir, 'cached', 'response_cache { enable: true }\n');
    await identity(
      dir,
      'capped_slow',
      'dynamic_batching { preferred_batch_size: [8] max_queue_delay_microseconds: 400000 }\n' +
        'parameters { key: "tenant" value: { string_value: "capped" } }\n',
    );
    await identity(
      dir,
      'metered',
      'dynamic_batching { max_queue_delay_microseconds: 100 }\nparameters { key: "tenant" value: { string_value: "metered" } }\n',
    );
  });
  server = await startServer(repo.dir, [
    '--front-door-threads', '2',
    '--cache-config', 'local,size=1MiB',
    '--tenants-file', tenantsFile,
    '--drain-timeout', '10',
    '--log-verbose', '1',
  ]);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await server?.stop();
  await repo?.remove();
  if (secrets !== undefined) await rm(secrets, { recursive: true, force: true });
});

describe('--front-door-threads 2, ModelInfer served in the door threads', () => {
  it('answers in both threads and counts every request exactly once in ModelStatistics and the metrics', async () => {
    const connections = [ownConnection(), ownConnection(), ownConnection(), ownConnection()];
    await untilServedInDoors(connections, 'echo');
    const before = await statsOf(connections[0]!, 'echo');
    const metricsBefore = await scrape(server.metricsPort);

    const perClient = 8;
    const answers = await Promise.all(
      connections.flatMap((client, c) => Array.from({ length: perClient }, (_, i) => client.call('ModelInfer', infer('echo', [c, i, 0.5])))),
    );
    for (const [k, answer] of answers.entries()) {
      expect(answer['model_name']).toBe('echo');
      expect(answer['model_version']).toBe('1');
      expect([...readF32(answer['raw_output_contents'][0])]).toEqual([Math.floor(k / perClient), k % perClient, 0.5]);
    }
    const sent = connections.length * perClient;

    const after = await statsOf(connections[1]!, 'echo');
    const delta = (read: (stats: Message) => string) => Number(read(after)) - Number(read(before));
    expect(delta((s) => s.inference_stats.success.count)).toBe(sent);
    expect(delta((s) => s.inference_count)).toBe(sent);
    expect(delta((s) => s.inference_stats.fail.count)).toBe(0);
    // Every execution counted once, whichever threads' requests it held: at least one, at most one per request.
    const executions = delta((s) => s.execution_count);
    expect(executions).toBeGreaterThanOrEqual(1);
    expect(executions).toBeLessThanOrEqual(sent);
    const metrics = await scrape(server.metricsPort);
    const metricDelta = (name: string) => (metrics.get(name) ?? 0) - (metricsBefore.get(name) ?? 0);
    expect(metricDelta('nv_inference_request_success{model="echo",version="1"}')).toBe(sent);
    expect(metricDelta('nv_inference_count{model="echo",version="1"}')).toBe(sent);
    expect(metricDelta('nv_inference_exec_count{model="echo",version="1"}')).toBe(executions);
    // The per-request histogram counts the door threads' requests too.
    expect(metricDelta('hotpath_request_duration_ms_count{model="echo",version="1",tenant="default"}')).toBe(sent);
    const servedInDoors = [0, 1].map((thread) => answeredBy(metrics, thread, 'door') - answeredBy(metricsBefore, thread, 'door'));
    expect(servedInDoors[0]! + servedInDoors[1]!).toBe(sent);
    expect(servedInDoors[0]).toBeGreaterThan(0);
    expect(servedInDoors[1]).toBeGreaterThan(0);
    expect(metrics.get('hotpath_door_connections_total{door_thread="0"}')).toBeGreaterThanOrEqual(2);
    expect(metrics.get('hotpath_door_connections_total{door_thread="1"}')).toBeGreaterThanOrEqual(2);
    expect(metrics.get('hotpath_door_thread_exits_total')).toBe(0);
  });

  it('answers a bad request from the door with the main thread’s status and message, counted as a failure', async () => {
    const client = ownConnection();
    await untilServedInDoors([client, ownConnection()], 'echo');
    const before = await statsOf(client, 'echo');
    const wrongType = await client.callError('ModelInfer', { ...infer('echo', [1]), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1] }] });
    expect(wrongType.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(wrongType.details).toMatch(/INPUT0/);
    const unknown = await client.callError('ModelInfer', infer('nope', [1]));
    expect(unknown.code).toBe(grpc.status.NOT_FOUND);
    expect(unknown.details).toMatch(/model 'nope' is not found/);
    const after = await statsOf(client, 'echo');
    expect(Number(after.inference_stats.fail.count) - Number(before.inference_stats.fail.count)).toBe(1);
  });

  it('serves ModelStreamInfer in the doors, and hands a stream request it does not serve to the main thread in its place', async () => {
    const client = ownConnection();
    await untilServedInDoors([client, ownConnection()], 'echo');
    const before = await scrape(server.metricsPort);
    const cachedBefore = await statsOf(client, 'cached');
    const stream = client.stream();
    const answers = new Map<string, Message>();
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (answer: Message) => answers.set(answer['infer_response']['id'], answer));
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    for (let i = 0; i < 6; i += 1) stream.write(infer('echo', [i, 10 + i], { id: `e${i}` }));
    // Not served in a door: the cache is the main thread's (a forward in place), and an unknown model (its error).
    stream.write(infer('cached', [9, 9], { id: 'c' }));
    stream.write(infer('nope', [1], { id: 'n' }));
    stream.end();
    await done;
    for (let i = 0; i < 6; i += 1) {
      expect(answers.get(`e${i}`)!['error_message']).toBe('');
      expect([...readF32(answers.get(`e${i}`)!['infer_response']['raw_output_contents'][0])]).toEqual([i, 10 + i]);
    }
    expect([...readF32(answers.get('c')!['infer_response']['raw_output_contents'][0])]).toEqual([9, 9]);
    expect(answers.get('n')!['error_message']).toMatch(/model 'nope' is not found/);
    const after = await scrape(server.metricsPort);
    const delta = (by: 'door' | 'main') => answeredBy(after, 0, by) + answeredBy(after, 1, by) - answeredBy(before, 0, by) - answeredBy(before, 1, by);
    expect(delta('door')).toBe(6);
    expect(delta('main')).toBe(2);
    const cachedAfter = await statsOf(client, 'cached');
    expect(Number(cachedAfter.inference_stats.success.count) - Number(cachedBefore.inference_stats.success.count)).toBe(1);
  });

  it("holds a tenant's in-flight limit exactly across both threads, answering in the doors", async () => {
    // Two connections, one per thread (the acceptor hands them round-robin); the catalog has reached both.
    const a = ownConnection();
    const b = ownConnection();
    await untilServedInDoors([a, b], 'echo');
    const before = await scrape(server.metricsPort);
    // Four requests that wait in the batcher for up to 400 ms: two hold the tenant's places while the others arrive.
    const outcomes = await Promise.allSettled([a, b, a, b].map((client, i) => client.call('ModelInfer', infer('capped_slow', [i]))));
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(2);
    expect(refused).toHaveLength(2);
    for (const outcome of refused) {
      const error = (outcome as PromiseRejectedResult).reason as grpc.ServiceError;
      expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(error.details).toMatch(/tenant 'capped' is over its in-flight limit \(max_inflight 2 in the tenants file\)/);
    }
    const after = await scrape(server.metricsPort);
    // All four answered by the door threads (none forwarded), the two refusals counted once each.
    expect(inDoors(after, 'door') - inDoors(before, 'door')).toBe(4);
    expect(inDoors(after, 'main') - inDoors(before, 'main')).toBe(0);
    expect(rejectedOf(after, 'capped', 'inflight') - rejectedOf(before, 'capped', 'inflight')).toBe(2);
  });

  it("holds a tenant's rate limit exactly across both threads: the burst is admitted, every other request refused and counted", async () => {
    const a = ownConnection();
    const b = ownConnection();
    await untilServedInDoors([a, b], 'echo');
    const before = await scrape(server.metricsPort);
    // Twice the burst, half on each thread, all at once.
    const sent = 2 * METERED_BURST;
    const outcomes = await Promise.allSettled(
      Array.from({ length: sent }, (_, i) => (i % 2 === 0 ? a : b).call('ModelInfer', infer('metered', [i]))),
    );
    const answered = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(answered).toHaveLength(METERED_BURST);
    for (const outcome of refused) {
      const error = (outcome as PromiseRejectedResult).reason as grpc.ServiceError;
      expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(error.details).toMatch(/tenant 'metered' is over its request rate limit \(rate 0\.001 requests\/s, burst 6 in the tenants file\)/);
    }
    const after = await scrape(server.metricsPort);
    expect(rejectedOf(after, 'metered', 'rate') - rejectedOf(before, 'metered', 'rate')).toBe(sent - METERED_BURST);
    expect(inDoors(after, 'door') - inDoors(before, 'door')).toBe(sent);
    // Both threads took their half.
    expect(answeredBy(after, 0, 'door') - answeredBy(before, 0, 'door')).toBe(sent / 2);
    expect(answeredBy(after, 1, 'door') - answeredBy(before, 1, 'door')).toBe(sent / 2);
    // ModelStatistics counts the refusals as the main thread does (failures of the version).
    const stats = await statsOf(a, 'metered');
    expect(Number(stats.inference_stats.success.count)).toBe(METERED_BURST);
    expect(Number(stats.inference_stats.fail.count)).toBe(sent - METERED_BURST);
  });

  it('crosses threads with a cache hit: one miss, then a hit from the other thread', async () => {
    const a = ownConnection();
    await a.call('ServerLive', {});
    const b = ownConnection();
    await b.call('ServerLive', {});
    const before = await statsOf(a, 'cached');
    const request = infer('cached', [4, 5, 6]);
    const first = await a.call('ModelInfer', request);
    const second = await b.call('ModelInfer', request);
    expect([...readF32(first['raw_output_contents'][0])]).toEqual([4, 5, 6]);
    expect([...readF32(second['raw_output_contents'][0])]).toEqual([4, 5, 6]);
    const after = await statsOf(a, 'cached');
    const delta = (read: (stats: Message) => string) => Number(read(after)) - Number(read(before));
    expect(delta((stats) => stats.inference_stats.cache_miss.count)).toBe(1);
    expect(delta((stats) => stats.inference_stats.cache_hit.count)).toBe(1);
    expect(delta((stats) => stats.inference_stats.success.count)).toBe(2);
  });

  it('fails no request while the model reloads under load, and serves the new version in the doors after', async () => {
    const connections = [ownConnection(), ownConnection(), ownConnection(), ownConnection()];
    await untilServedInDoors(connections, 'echo');
    let stop = false;
    const failures: unknown[] = [];
    let answered = 0;
    const load = connections.map(async (client, c) => {
      for (let i = 0; !stop; i += 1) {
        try {
          const answer = await client.call('ModelInfer', infer('echo', [c, i]));
          expect([...readF32(answer['raw_output_contents'][0])]).toEqual([c, i]);
          answered += 1;
        } catch (err) {
          failures.push(err);
        }
      }
    });
    const admin = ownConnection();
    for (let reload = 0; reload < 3; reload += 1) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      await admin.call('RepositoryModelLoad', { model_name: 'echo' });
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
    stop = true;
    await Promise.all(load);
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(20);
    // The reloaded version is in the catalog again: the doors answer its requests themselves.
    const before = await scrape(server.metricsPort);
    await untilServedInDoors(connections, 'echo');
    await Promise.all(connections.map((client) => client.call('ModelInfer', infer('echo', [1]))));
    const after = await scrape(server.metricsPort);
    const doorAnswers = (metrics: Map<string, number>) => answeredBy(metrics, 0, 'door') + answeredBy(metrics, 1, 'door');
    expect(doorAnswers(after) - doorAnswers(before)).toBeGreaterThanOrEqual(connections.length);
  });

  it('drains the calls open in both threads, served in the doors, on SIGTERM and exits 0', async () => {
    const a = ownConnection();
    const b = ownConnection();
    await untilServedInDoors([a, b], 'slow');
    // Each waits in the batcher for up to 400 ms (a batch of 8 never fills).
    const calls = [a.call('ModelInfer', infer('slow', [1], { id: 'a' })), b.call('ModelInfer', infer('slow', [2], { id: 'b' }))];
    for (let i = 0; (await scrape(server.metricsPort)).get('hotpath_inflight_requests') !== 2; i++) {
      if (i === 200) throw new Error('the two slow calls never were in flight together');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const exited = server.stop();
    const answers = await Promise.all(calls);
    expect(answers.map((m) => m['id'])).toEqual(['a', 'b']);
    expect(await exited).toBe(0);
    expect(server.logs.some((line) => line['msg'] === 'stopped' && line['graceful'] === true)).toBe(true);
  });
});

describe('--front-door-threads 2 with API keys: the door admission checks the caller tenant limits', () => {
  const KEY = 'door-limits-key-5b1e0c2a';
  let keyed: RunningServer;
  let keyedRepo: { dir: string; remove: () => Promise<void> };
  let keyedSecrets: string;
  const keyedClients: TritonClient[] = [];

  beforeAll(async () => {
    keyedSecrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-door-keys-'));
    const tenantsFile = path.join(keyedSecrets, 'tenants.json');
    await writeFile(tenantsFile, JSON.stringify({ tenants: { keyed: { quota: '64MiB', max_inflight: 1, keys: [keyHash(KEY)] } } }));
    keyedRepo = await tempRepository(async (dir) => {
      // A request waits up to 1 s in the batcher for company: it holds the tenant's one place that long.
      await identity(
        dir,
        'keyed_slow',
        'dynamic_batching { preferred_batch_size: [8] max_queue_delay_microseconds: 1000000 }\n' +
          'parameters { key: "tenant" value: { string_value: "keyed" } }\n',
      );
    });
    keyed = await startServer(keyedRepo.dir, ['--front-door-threads', '2', '--tenants-file', tenantsFile, '--require-api-key']);
  });

  afterAll(async () => {
    for (const client of keyedClients) client.close();
    await keyed?.stop();
    await keyedRepo?.remove();
    if (keyedSecrets !== undefined) await rm(keyedSecrets, { recursive: true, force: true });
  });

  it('refuses a call over its tenant limit from the metadata, in the other door thread, before its request is read', async () => {
    const bearer = new grpc.Metadata();
    bearer.set('authorization', `Bearer ${KEY}`);
    const connect = () => {
      const client = new TritonClient(keyed.grpcAddress, { 'grpc.use_local_subchannel_pool': 1 });
      keyedClients.push(client);
      return client;
    };
    // One connection per door thread (handed round-robin); both threads serve from the catalog by now.
    const a = connect();
    const b = connect();
    await Promise.all([a.call('ServerLive', {}, bearer), b.call('ServerLive', {}, bearer)]);
    // (Each thread got the catalog, with keyed_slow, in the message after its 'ready', before any connection.)
    const before = await scrape(keyed.metricsPort);
    const held = a.call('ModelInfer', infer('keyed_slow', [1]), bearer);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const refused = await b.call('ModelInfer', infer('keyed_slow', [2]), bearer).then(
      () => undefined,
      (err: grpc.ServiceError) => err,
    );
    expect(refused?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused?.details).toMatch(/^tenant 'keyed' is over its in-flight limit \(max_inflight 1 in the tenants file\): 1 of its requests are already in flight/);
    expect([...readF32((await held)['raw_output_contents'][0])]).toEqual([1]);
    const after = await scrape(keyed.metricsPort);
    // The held request was answered in its door; the refused one never reached a handler (no door answer, no failure statistics).
    expect(inDoors(after, 'door') - inDoors(before, 'door')).toBe(1);
    expect(inDoors(after, 'main') - inDoors(before, 'main')).toBe(0);
    expect(rejectedOf(after, 'keyed', 'inflight') - rejectedOf(before, 'keyed', 'inflight')).toBe(1);
    const stats = (await a.call('ModelStatistics', { name: 'keyed_slow' }, bearer))['model_stats'][0];
    expect(Number(stats.inference_stats.fail.count)).toBe(0);
  });
});
