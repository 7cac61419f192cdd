/**
 * `--front-door-threads 2` serving HTTP `POST /v2/models/{m}/infer` in the door
 * threads (src/server/door-http.ts), driven with raw node:http requests on
 * kept-alive connections of their own (so the acceptor spreads them over both
 * threads), bodies built by hand from the protocol and the binary tensor data
 * extension. Shows:
 *   - JSON and binary-extension requests answered correctly in both threads
 *     (hotpath_door_model_infer_total{answered_by="door"}), counted exactly
 *     once in ModelStatistics and the metrics;
 *   - bad requests answered with the same status, body and headers as a
 *     one-thread server gives, a validation failure counted once;
 *   - a request the doors do not serve (an unknown model, a wrong method) is
 *     forwarded and answered as with one thread (answered_by="main");
 *   - a client that goes away before its request runs cancels it (a CANCELED
 *     failure), as with one thread;
 *   - --http-body-budget bounds the bodies all threads hold together, and a
 *     body a door thread read and hands back to the main thread is charged
 *     once (the door releases it first), so one over half the budget passes;
 *   - a gzip body, and a reload under load (versions unloading while their
 *     requests are read or queued here: handed to the main thread with the
 *     body as read), fail no request; requests carrying the test-only
 *     `hotpath_fault` parameter are handed back with their body every time
 *     (door-inference.ts), so hand-backs with a body are sure to happen.
 */
import { appendFile } from 'node:fs/promises';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { tempRepository } from './helpers/repositories.js';
import { scrape } from './helpers/probes.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { httpSend, type HttpAnswer, type HttpSendOptions } from './helpers/http-send.js';

let doors: RunningServer;
let single: RunningServer;
let repo: { dir: string; remove: () => Promise<void> };
const agents: http.Agent[] = [];

type Answer = HttpAnswer;

/** A kept-alive connection of its own (one socket): the acceptor hands each new connection to the next door thread. */
function ownConnection(): http.Agent {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return agent;
}

function send(server: RunningServer, method: string, route: string, options: HttpSendOptions = {}): Promise<Answer> {
  return httpSend(server.httpPort, method, route, options);
}

const jsonInfer = (values: number[]) => JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length], data: values }] });

/**
 * A request a door thread reads and then always hands back to the main thread with its body: it carries the
 * test-only `hotpath_fault` parameter (door-inference.ts), which the main thread refuses 400 (no
 * --enable-fault-injection). `padding`: trailing spaces (still JSON), to make the body that large.
 */
const handedBackInfer = (values: number[], padding = 0) =>
  JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length], data: values }],
    parameters: { hotpath_fault: 'delay:1' },
  }) + ' '.repeat(padding);
const HANDED_BACK_ERROR = /parameter 'hotpath_fault' is refused: fault injection is disabled/;

/** A binary-extension request: INPUT0 as raw FP32 bytes after the JSON header, OUTPUT0 asked for in binary. */
function binaryInfer(values: number[]): { body: Buffer; headers: Record<string, string> } {
  const raw = Buffer.from(Float32Array.from(values).buffer);
  const json = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length], parameters: { binary_data_size: raw.byteLength } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  return { body: Buffer.concat([json, raw]), headers: { 'inference-header-content-length': String(json.byteLength) } };
}

/** OUTPUT0's values from a JSON answer or a binary-extension answer. */
function output0(answer: Answer): number[] {
  const length = answer.headers['inference-header-content-length'];
  if (length === undefined) return JSON.parse(answer.body.toString()).outputs[0].data;
  const json = JSON.parse(answer.body.subarray(0, Number(length)).toString());
  expect(json.outputs[0].parameters.binary_data_size).toBe(answer.body.byteLength - Number(length));
  const bytes = answer.body.subarray(Number(length));
  return [...new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))];
}

const answeredBy = (metrics: Map<string, number>, thread: number, by: 'door' | 'main') =>
  metrics.get(`hotpath_door_model_infer_total{door_thread="${thread}",answered_by="${by}"}`) ?? 0;
const doorTotal = (metrics: Map<string, number>, by: 'door' | 'main') => answeredBy(metrics, 0, by) + answeredBy(metrics, 1, by);

async function statsOf(server: RunningServer, model: string): Promise<any> {
  const answer = await send(server, 'GET', `/v2/models/${model}/stats`);
  expect(answer.status).toBe(200);
  return JSON.parse(answer.body.toString()).model_stats[0];
}

/** Sends on every connection until each door thread has answered an `echo` request itself (its catalog arrived). */
async function untilServedInDoors(connections: http.Agent[]): Promise<void> {
  for (let round = 0; round < 100; round += 1) {
    const metrics = await scrape(doors.metricsPort);
    if (answeredBy(metrics, 0, 'door') > 0 && answeredBy(metrics, 1, 'door') > 0) return;
    await Promise.all(connections.map((agent) => send(doors, 'POST', '/v2/models/echo/infer', { body: jsonInfer([0]), agent })));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the door threads never served echo over HTTP themselves');
}

beforeAll(async () => {
  repo = await tempRepository(async (dir) => {
    const written = await writeIdentityModel(dir, { name: 'echo', dtype: 'FP32', maxBatchSize: 8, withConfig: true });
    await appendFile(written.configPath!, 'dynamic_batching { max_queue_delay_microseconds: 100 }\n');
    // Waits up to 400 ms for a batch of 8: a lone request stays queued long enough to be cancelled.
    const slow = await writeIdentityModel(dir, { name: 'slow', dtype: 'FP32', maxBatchSize: 8, withConfig: true });
    await appendFile(slow.configPath!, 'dynamic_batching { preferred_batch_size: [8] max_queue_delay_microseconds: 400000 }\n');
  });
  [doors, single] = await Promise.all([
    // The body budget equal to --max-message-size: a body over half of it, charged twice, would be refused.
    startServer(repo.dir, ['--front-door-threads', '2', '--drain-timeout', '10', '--max-message-size', '65536', '--http-body-budget', '65536']),
    startServer(repo.dir, ['--max-message-size', '65536']),
  ]);
});

afterAll(async () => {
  for (const agent of agents) agent.destroy();
  await Promise.all([doors?.stop(), single?.stop()]);
  await repo?.remove();
});

describe('--front-door-threads 2, HTTP ModelInfer served in the door threads', () => {
  it('answers JSON and binary requests in both threads, counted exactly once in ModelStatistics and the metrics', async () => {
    const connections = [ownConnection(), ownConnection(), ownConnection(), ownConnection()];
    await untilServedInDoors(connections);
    const before = await statsOf(doors, 'echo');
    const metricsBefore = await scrape(doors.metricsPort);

    const perConnection = 6;
    const sent = await Promise.all(
      connections.flatMap((agent, c) =>
        Array.from({ length: perConnection }, async (_, i) => {
          const values = [c, i, 0.5];
          if (i % 2 === 0) {
            const answer = await send(doors, 'POST', '/v2/models/echo/infer', {
              body: jsonInfer(values),
              headers: { 'content-type': 'application/json', 'x-request-id': `json-${c}-${i}` },
              agent,
            });
            expect(answer.status).toBe(200);
            expect(answer.headers['content-type']).toBe('application/json');
            expect(answer.headers['x-request-id']).toBe(`json-${c}-${i}`);
            expect(JSON.parse(answer.body.toString())).toMatchObject({ model_name: 'echo', model_version: '1' });
            expect(output0(answer)).toEqual(values);
          } else {
            const { body, headers } = binaryInfer(values);
            const answer = await send(doors, 'POST', '/v2/models/echo/versions/1/infer', { body, headers, agent });
            expect(answer.status).toBe(200);
            expect(answer.headers['content-type']).toBe('application/octet-stream');
            expect(answer.headers['x-request-id']).toMatch(/\S/);
            expect(output0(answer)).toEqual(values);
          }
        }),
      ),
    );
    const count = sent.length;

    const after = await statsOf(doors, 'echo');
    const delta = (read: (stats: any) => string | number) => Number(read(after)) - Number(read(before));
    expect(delta((s) => s.inference_stats.success.count)).toBe(count);
    expect(delta((s) => s.inference_count)).toBe(count);
    expect(delta((s) => s.inference_stats.fail.count)).toBe(0);
    const executions = delta((s) => s.execution_count);
    expect(executions).toBeGreaterThanOrEqual(1);
    expect(executions).toBeLessThanOrEqual(count);
    const metrics = await scrape(doors.metricsPort);
    const metricDelta = (name: string) => (metrics.get(name) ?? 0) - (metricsBefore.get(name) ?? 0);
    expect(metricDelta('nv_inference_request_success{model="echo",version="1"}')).toBe(count);
    expect(metricDelta('nv_inference_count{model="echo",version="1"}')).toBe(count);
    expect(metricDelta('nv_inference_exec_count{model="echo",version="1"}')).toBe(executions);
    expect(metricDelta('hotpath_request_duration_ms_count{model="echo",version="1",tenant="default"}')).toBe(count);
    // Every request answered in a door thread, both threads taking part.
    const servedInDoors = [0, 1].map((thread) => answeredBy(metrics, thread, 'door') - answeredBy(metricsBefore, thread, 'door'));
    expect(servedInDoors[0]! + servedInDoors[1]!).toBe(count);
    expect(servedInDoors[0]).toBeGreaterThan(0);
    expect(servedInDoors[1]).toBeGreaterThan(0);
    expect(doorTotal(metrics, 'main') - doorTotal(metricsBefore, 'main')).toBe(0);
  });

  it('answers bad requests in the doors with the status, body and headers of one thread, a validation failure counted once', async () => {
    const connections = [ownConnection(), ownConnection()];
    await untilServedInDoors(connections);
    const cases: { name: string; route?: string; body: Buffer | string; headers?: Record<string, string> }[] = [
      { name: 'wrong datatype', body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: [1] }] }) },
      { name: 'malformed JSON', body: '{"inputs": [' },
      { name: 'no inputs', body: '{}' },
      { name: 'shape and data disagree', body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: [1] }] }) },
      { name: 'bad Inference-Header-Content-Length', body: jsonInfer([1]), headers: { 'inference-header-content-length': 'ten' } },
      { name: 'header length past the body', body: jsonInfer([1]), headers: { 'inference-header-content-length': '100000' } },
      { name: 'body over --max-message-size', body: Buffer.alloc(70_000, 0x20) },
      { name: 'unsupported Content-Encoding', body: jsonInfer([1]), headers: { 'content-encoding': 'br' } },
    ];
    const before = await statsOf(doors, 'echo');
    const metricsBefore = await scrape(doors.metricsPort);
    for (const [i, testCase] of cases.entries()) {
      const headers = { 'x-request-id': `bad-${i}`, ...testCase.headers };
      const route = testCase.route ?? '/v2/models/echo/infer';
      // A 413 closes its connection: each bad request on a fresh one.
      const [threaded, one] = await Promise.all([
        send(doors, 'POST', route, { body: testCase.body, headers }),
        send(single, 'POST', route, { body: testCase.body, headers }),
      ]);
      expect({ name: testCase.name, status: threaded.status }).toEqual({ name: testCase.name, status: one.status });
      expect(threaded.status).toBeGreaterThanOrEqual(400);
      expect(threaded.body.toString()).toBe(one.body.toString());
      expect(JSON.parse(threaded.body.toString()).error).toMatch(/\S/);
      for (const header of ['content-type', 'x-request-id', 'connection']) expect(threaded.headers[header]).toBe(one.headers[header]);
    }
    const after = await statsOf(doors, 'echo');
    // The datatype mismatch reaches the request path (a failure); the others are refused before it, as with one thread.
    expect(Number(after.inference_stats.fail.count) - Number(before.inference_stats.fail.count)).toBe(1);
    const metrics = await scrape(doors.metricsPort);
    // Answered in the doors (the body over the limit is a framing refusal: not counted, as gRPC's transport refusals are not).
    expect(doorTotal(metrics, 'door') - doorTotal(metricsBefore, 'door')).toBe(cases.length - 1);
    expect(doorTotal(metrics, 'main') - doorTotal(metricsBefore, 'main')).toBe(0);
  });

  it('forwards what the doors do not serve, answered as with one thread', async () => {
    const metricsBefore = await scrape(doors.metricsPort);
    const cases: { method: string; route: string; body?: string }[] = [
      { method: 'POST', route: '/v2/models/nope/infer', body: jsonInfer([1]) },
      { method: 'POST', route: '/v2/models/echo/versions/7/infer', body: jsonInfer([1]) },
      { method: 'GET', route: '/v2/models/echo/infer' },
      { method: 'POST', route: '/v2/models/%E0%A4%A/infer', body: jsonInfer([1]) },
    ];
    for (const testCase of cases) {
      const headers = { 'x-request-id': 'forwarded' };
      const [threaded, one] = await Promise.all([
        send(doors, testCase.method, testCase.route, { body: testCase.body, headers }),
        send(single, testCase.method, testCase.route, { body: testCase.body, headers }),
      ]);
      expect({ route: testCase.route, status: threaded.status }).toEqual({ route: testCase.route, status: one.status });
      expect(threaded.body.toString()).toBe(one.body.toString());
    }
    const unknown = await send(doors, 'POST', '/v2/models/nope/infer', { body: jsonInfer([1]) });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body.toString()).error).toMatch(/model 'nope' is not found/);
    const metrics = await scrape(doors.metricsPort);
    // The two POSTs to an unserved model or version (and the repeat) went to the main thread; the 405 and the bad path match no infer route.
    expect(doorTotal(metrics, 'main') - doorTotal(metricsBefore, 'main')).toBe(3);
    expect(doorTotal(metrics, 'door') - doorTotal(metricsBefore, 'door')).toBe(0);
  });

  it('fails a request whose client went away before it ran as CANCELED, as with one thread', async () => {
    const connections = [ownConnection(), ownConnection()];
    await untilServedInDoors(connections);
    const outcome = async (server: RunningServer) => {
      const before = await statsOf(server, 'slow');
      const metricsBefore = await scrape(server.metricsPort);
      const request = http.request({ host: '127.0.0.1', port: server.httpPort, method: 'POST', path: '/v2/models/slow/infer', agent: false });
      request.on('error', () => {});
      request.end(jsonInfer([1]));
      for (let i = 0; (await scrape(server.metricsPort)).get('hotpath_inflight_requests') !== 1; i++) {
        if (i === 200) throw new Error('the slow request never was in flight');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      request.destroy();
      for (let i = 0; (await scrape(server.metricsPort)).get('hotpath_inflight_requests') !== 0; i++) {
        if (i === 200) throw new Error('the cancelled request never finished');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const after = await statsOf(server, 'slow');
      const metrics = await scrape(server.metricsPort);
      return {
        success: Number(after.inference_stats.success.count) - Number(before.inference_stats.success.count),
        fail: Number(after.inference_stats.fail.count) - Number(before.inference_stats.fail.count),
        answeredInDoor: doorTotal(metrics, 'door') - doorTotal(metricsBefore, 'door'),
      };
    };
    const [threaded, one] = [await outcome(doors), await outcome(single)];
    expect(threaded).toEqual({ success: 0, fail: 1, answeredInDoor: 1 });
    expect({ ...one, answeredInDoor: 1 }).toEqual(threaded);
  });

  it('holds --http-body-budget for all threads together', async () => {
    // The budget is --max-message-size (65536 bytes): two bodies of 30000 bytes fit, a third does not,
    // whichever threads read them (three connections: both door threads take part).
    const connections = [ownConnection(), ownConnection(), ownConnection()];
    await untilServedInDoors(connections);
    const partial = connections.map((agent) => {
      const request = http.request({
        host: '127.0.0.1',
        port: doors.httpPort,
        method: 'POST',
        path: '/v2/models/echo/infer',
        agent,
        headers: { 'content-length': '65000' },
      });
      const answered = new Promise<{ status: number; body: string }>((resolve) => {
        request.on('response', (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        });
        request.on('error', () => resolve({ status: 0, body: '' }));
      });
      return { request, answered };
    });
    partial[0]!.request.write(Buffer.alloc(30_000, 0x20));
    partial[1]!.request.write(Buffer.alloc(30_000, 0x20));
    await new Promise((resolve) => setTimeout(resolve, 300));
    partial[2]!.request.write(Buffer.alloc(30_000, 0x20));
    const third = await partial[2]!.answered;
    expect(third.status).toBe(503);
    expect(JSON.parse(third.body).error).toMatch(/budget of 65536 bytes \(--http-body-budget\)/);
    for (const { request } of partial) request.destroy();
    for (const agent of connections) agent.destroy();
  });

  it('charges a body a door thread hands back to the main thread once, so one over half the budget is not refused', async () => {
    const connections = [ownConnection(), ownConnection()];
    await untilServedInDoors(connections);
    // 40000 bytes, as sent and as inflated: with the door still holding it while the main thread reads it, 80000 (more for
    // the gzip body: compressed and inflated) would pass the budget of 65536 bytes.
    const body = handedBackInfer([1, 2], 40_000 - handedBackInfer([1, 2]).length);
    expect(body.length).toBe(40_000);
    const bodies: { name: string; body: Buffer; headers: Record<string, string> }[] = [
      { name: 'identity', body: Buffer.from(body), headers: {} },
      { name: 'gzip', body: gzipSync(body), headers: { 'content-encoding': 'gzip' } },
    ];
    const metricsBefore = await scrape(doors.metricsPort);
    for (const [c, sent] of bodies.entries()) {
      const headers = { 'x-request-id': `handed-back-${sent.name}`, ...sent.headers };
      const [threaded, one] = await Promise.all([
        send(doors, 'POST', '/v2/models/echo/infer', { body: sent.body, headers, agent: connections[c] }),
        send(single, 'POST', '/v2/models/echo/infer', { body: sent.body, headers }),
      ]);
      // The main thread's answer: it read the whole body (the parameter inside it), within the budget.
      expect({ name: sent.name, status: threaded.status, body: threaded.body.toString() }).toEqual({
        name: sent.name,
        status: one.status,
        body: one.body.toString(),
      });
      expect(threaded.status).toBe(400);
      expect(JSON.parse(threaded.body.toString()).error).toMatch(HANDED_BACK_ERROR);
      expect(threaded.headers['x-request-id']).toBe(`handed-back-${sent.name}`);
    }
    const metrics = await scrape(doors.metricsPort);
    expect(doorTotal(metrics, 'main') - doorTotal(metricsBefore, 'main')).toBe(bodies.length);
    expect(doorTotal(metrics, 'door') - doorTotal(metricsBefore, 'door')).toBe(0);
  });

  it('takes a gzip body, and fails no request while the model reloads under load', async () => {
    const connections = [ownConnection(), ownConnection(), ownConnection(), ownConnection()];
    await untilServedInDoors(connections);
    const zipped = await send(doors, 'POST', '/v2/models/echo/infer', {
      body: gzipSync(jsonInfer([7, 8])),
      headers: { 'content-encoding': 'gzip' },
      agent: connections[0],
    });
    expect(zipped.status).toBe(200);
    expect(output0(zipped)).toEqual([7, 8]);

    const metricsBefore = await scrape(doors.metricsPort);
    let stop = false;
    const failures: unknown[] = [];
    let answered = 0;
    let handedBack = 0;
    const load = connections.map(async (agent, c) => {
      for (let i = 0; !stop; i += 1) {
        const values = [c, i];
        if (c === 0 && i % 3 === 2) {
          // Handed back with its body by whichever door thread reads it (or forwarded whole while no catalog lists echo):
          // the main thread answers it, having read its body whole.
          try {
            const answer = await send(doors, 'POST', '/v2/models/echo/infer', {
              body: gzipSync(handedBackInfer(values)),
              headers: { 'content-encoding': 'gzip' },
              agent,
            });
            if (answer.status !== 400 || !HANDED_BACK_ERROR.test(answer.body.toString())) throw new Error(`${answer.status} ${answer.body.toString()}`);
            handedBack += 1;
          } catch (err) {
            failures.push(err);
          }
          continue;
        }
        const binary = i % 2 === 1;
        const request = binary ? binaryInfer(values) : { body: gzipSync(jsonInfer(values)), headers: { 'content-encoding': 'gzip' } };
        try {
          const answer = await send(doors, 'POST', '/v2/models/echo/infer', { ...request, agent });
          if (answer.status !== 200) throw new Error(`${answer.status} ${answer.body.toString()}`);
          expect(output0(answer)).toEqual(values);
          answered += 1;
        } catch (err) {
          failures.push(err);
        }
      }
    });
    for (let reload = 0; reload < 3; reload += 1) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      const loaded = await send(doors, 'POST', '/v2/repository/models/echo/load');
      expect(loaded.status).toBe(200);
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
    stop = true;
    await Promise.all(load);
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(20);
    expect(handedBack).toBeGreaterThan(2);
    // Each request counted once by its door thread: answered there, or handed to the main thread (the catalog
    // without the version, the version unloading once its body was read, or the fault parameter).
    const metrics = await scrape(doors.metricsPort);
    const taken = (by: 'door' | 'main') => doorTotal(metrics, by) - doorTotal(metricsBefore, by);
    expect(taken('door') + taken('main')).toBe(answered + handedBack);
    expect(taken('main')).toBeGreaterThanOrEqual(handedBack);
    expect(taken('door')).toBeGreaterThan(0);
  });
});
