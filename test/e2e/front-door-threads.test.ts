/**
 * `--front-door-threads 2` (src/server/door-threads.ts): the main thread's
 * acceptor hands connections round-robin to two door threads, which forward
 * every call to the main thread's request path. With real grpc-js clients on
 * connections of their own and plain HTTP: both threads take connections;
 * ModelStatistics and the metrics equal the requests sent; control RPCs,
 * errors, streams and the HTTP door answer as with one thread; SIGTERM drains
 * the calls open in both threads and exits 0. And a door thread's HTTP server
 * enforces --header-timeout (its connection tracking is on, though it never
 * listens itself).
 */
import http from 'node:http';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { tempRepository } from './helpers/repositories.js';
import { healthCheck, httpGet, scrape, SERVING } from './helpers/probes.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { f32Bytes, readF32, TritonClient, type Message } from './helpers/triton-client.js';

let server: RunningServer;
let repo: { dir: string; remove: () => Promise<void> };
const clients: TritonClient[] = [];

/** A client on a connection of its own (grpc-js shares one per target otherwise). */
function ownConnection(): TritonClient {
  const client = new TritonClient(server.grpcAddress, { 'grpc.use_local_subchannel_pool': 1 });
  clients.push(client);
  return client;
}

const infer = (values: number[], extra: Message = {}): Message => ({
  model_name: 'echo',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length] }],
  raw_input_contents: [f32Bytes(values)],
  ...extra,
});

function httpInfer(port: number, values: number[]): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length], data: values }] });
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/v2/models/echo/infer', headers: { 'content-type': 'application/json' } },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

beforeAll(async () => {
  repo = await tempRepository(async (dir) => {
    await writeIdentityModel(dir, { name: 'echo', dtype: 'FP32', maxBatchSize: 8, withConfig: true });
  });
  server = await startServer(repo.dir, ['--front-door-threads', '2', '--enable-fault-injection', '--drain-timeout', '10']);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await server?.stop();
  await repo?.remove();
});

describe('--front-door-threads 2', () => {
  it('spreads connections over both threads, and counts every request exactly once', async () => {
    const connections = [ownConnection(), ownConnection(), ownConnection(), ownConnection()];
    const perClient = 6;
    const answers = await Promise.all(
      connections.flatMap((client, c) => Array.from({ length: perClient }, (_, i) => client.call('ModelInfer', infer([c, i, 0.5])))),
    );
    for (const [k, answer] of answers.entries()) {
      expect(answer['model_name']).toBe('echo');
      expect([...readF32(answer['raw_output_contents'][0])]).toEqual([Math.floor(k / perClient), k % perClient, 0.5]);
    }
    const viaHttp = await Promise.all([httpInfer(server.httpPort, [1, 2]), httpInfer(server.httpPort, [3, 4])]);
    for (const answer of viaHttp) expect(answer.status).toBe(200);
    const sent = connections.length * perClient + viaHttp.length;

    const stats = (await connections[0]!.call('ModelStatistics', { name: 'echo' }))['model_stats'][0];
    expect(stats.inference_stats.success.count).toBe(String(sent));
    expect(stats.inference_count).toBe(String(sent));
    const metrics = await scrape(server.metricsPort);
    expect(metrics.get('nv_inference_request_success{model="echo",version="1"}')).toBe(sent);
    expect(metrics.get('nv_inference_count{model="echo",version="1"}')).toBe(sent);
    // Round-robin: 4 gRPC and at least 1 HTTP connection, so each thread took at least 2.
    expect(metrics.get('hotpath_door_connections_total{door_thread="0"}')).toBeGreaterThanOrEqual(2);
    expect(metrics.get('hotpath_door_connections_total{door_thread="1"}')).toBeGreaterThanOrEqual(2);
    expect(metrics.get('hotpath_door_thread_exits_total')).toBe(0);
  });

  it('answers errors, control RPCs, streams, health and HTTP as one thread does', async () => {
    const client = ownConnection();
    const unknown = await client.callError('ModelInfer', infer([1], { model_name: 'nope' }));
    expect(unknown.code).toBe(grpc.status.NOT_FOUND);
    expect(unknown.details).toMatch(/model 'nope' is not found; available models: echo/);
    const wrongType = await client.callError('ModelInfer', { ...infer([1]), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1] }] });
    expect(wrongType.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(wrongType.details).toMatch(/INPUT0/);

    const index = await client.call('RepositoryIndex', {});
    expect(index['models'].map((m: Message) => [m['name'], m['state']])).toContainEqual(['echo', 'READY']);
    await client.call('RepositoryModelUnload', { model_name: 'echo' });
    expect((await client.call('ModelReady', { name: 'echo' }))['ready']).toBe(false);
    await client.call('RepositoryModelLoad', { model_name: 'echo' });
    expect((await client.call('ModelReady', { name: 'echo' }))['ready']).toBe(true);

    const stream = client.stream();
    const streamed = new Promise<Message>((resolve, reject) => {
      stream.once('data', resolve);
      stream.once('error', reject);
    });
    stream.write(infer([7, 8], { id: 's1' }));
    const answer = await streamed;
    expect(answer['error_message']).toBe('');
    expect(answer['infer_response']['id']).toBe('s1');
    expect([...readF32(answer['infer_response']['raw_output_contents'][0])]).toEqual([7, 8]);
    stream.end();

    expect(await healthCheck(server.grpcAddress)).toBe(SERVING);
    expect((await httpGet(server.httpPort, '/v2/health/ready')).status).toBe(200);
    const missing = await httpGet(server.httpPort, '/v2/models/nope');
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).error).toMatch(/nope/);
  });

  it('drains the calls open in both threads on SIGTERM and exits 0', async () => {
    // Two new connections, one after the other: round-robin gives one to each thread.
    const a = ownConnection();
    await a.call('ServerLive', {});
    const b = ownConnection();
    await b.call('ServerLive', {});
    const slow = (id: string) => infer([1], { id, parameters: { hotpath_fault: { string_param: 'delay:1000' } } });
    const calls = [a.call('ModelInfer', slow('a')), b.call('ModelInfer', slow('b'))];
    // Both calls reached the request path (forwarded by their threads) before the signal.
    for (let i = 0; (await scrape(server.metricsPort)).get('hotpath_inflight_requests') !== 2; i++) {
      if (i === 200) throw new Error('the two slow calls never were in flight together');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const exited = server.stop();
    const answers = await Promise.all(calls);
    expect(answers.map((m) => m['id'])).toEqual(['a', 'b']);
    expect(await exited).toBe(0);
    expect(server.logs.some((line) => line['msg'] === 'stopped' && line['graceful'] === true)).toBe(true);
  });
});

describe('--front-door-threads 2 with --header-timeout', () => {
  it("closes an HTTP connection whose request head stops arriving, from the door thread's own timeout sweep", async () => {
    const timeoutMs = 1000;
    const doors = await startServer(repo.dir, ['--front-door-threads', '2', '--header-timeout', String(timeoutMs)]);
    try {
      // Two connections, so each door thread gets one (round-robin): both threads must enforce it.
      const outcomes = await Promise.all([0, 1].map(() => partialHead(doors.httpPort)));
      for (const outcome of outcomes) {
        // Closed by the server (this client never ends or destroys its side), with Node's 408.
        expect(outcome.endedByServer).toBe(true);
        expect(outcome.reply).toMatch(/^HTTP\/1\.1 408 /);
        // The sweep runs once a second: at the earliest the timeout; a generous bound for a loaded machine.
        expect(outcome.elapsedMs).toBeGreaterThanOrEqual(timeoutMs - 100);
        expect(outcome.elapsedMs).toBeLessThan(10 * timeoutMs);
      }
    } finally {
      await doors.stop();
    }
  });
});

/** A raw connection that sends part of a request head and waits: what it got back, and when and how it closed. */
function partialHead(port: number): Promise<{ reply: string; elapsedMs: number; endedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    let endedByServer = false;
    let began = 0;
    // Give up well after the bound the test asserts, so a door that never times out fails the test rather than hangs it.
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server never closed a connection whose request head stopped arriving'));
    }, 30_000);
    socket.on('connect', () => {
      began = Date.now();
      socket.write('GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Partial: ');
    });
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
    socket.on('end', () => {
      endedByServer = true;
    });
    socket.on('error', () => {
      // A reset by the server is also the server closing it.
      endedByServer = true;
    });
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve({ reply, elapsedMs: Date.now() - began, endedByServer });
    });
  });
}
