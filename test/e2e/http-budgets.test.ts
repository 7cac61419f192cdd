/**
 * Issue 21 item 3: the HTTP door's process-wide budgets. A JSON bomb (24 MB
 * of `{}` in 23 KB of gzip) is refused before it becomes objects, parsed off
 * the event loop, while /v2/health/live keeps answering in < 100 ms; 16
 * parallel gzip bombs are each stopped at the first chunk past the limit or
 * the body budget (413, or 503 with Retry-After), with a bounded RSS rise;
 * a body that stops arriving is answered 408 after --body-idle-timeout.
 *
 * Real server process (RSS from /proc), plain node:http clients.
 */
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { MiB, RssSampler } from './helpers/process-memory.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository((dir) => writeIdentityModel(dir, { name: 'identity', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] })),
    ['--body-idle-timeout', '1000'],
  );
});

afterAll(() => served?.close());

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly ms: number;
}

function post(path: string, body: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port: served.server.httpPort, path, method: 'POST', agent: false, headers: { 'content-length': String(body.length), ...headers } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text, ms: performance.now() - started }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** Polls GET /v2/health/live back to back until `done` settles; resolves with the slowest answer in ms. */
async function liveLatencyDuring(done: Promise<unknown>): Promise<{ slowest: number; probes: number }> {
  let finished = false;
  void done.finally(() => (finished = true));
  let slowest = 0;
  let probes = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (!finished) {
    const started = performance.now();
    const status = await new Promise<number>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: served.server.httpPort, path: '/v2/health/live', agent }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        })
        .on('error', reject);
    });
    expect(status).toBe(200);
    slowest = Math.max(slowest, performance.now() - started);
    probes += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  agent.destroy();
  return { slowest, probes };
}

describe('HTTP process-wide budgets', () => {
  it('a 24 MB JSON bomb (gzip) is refused 400 while /v2/health/live answers in < 100 ms throughout', async () => {
    const bomb = Buffer.concat([Buffer.from('{"inputs":['), Buffer.alloc(24 * 1024 * 1024 - 14, '{},'), Buffer.from('{}]}')]);
    const gzipped = zlib.gzipSync(bomb, { level: 9 });
    // The same probes with nothing else running first: on a shared machine the
    // scheduler alone can delay an answer; the bomb must add no pause of its own.
    const idle = await liveLatencyDuring(new Promise((resolve) => setTimeout(resolve, 1500)));
    // Five in a row, probed throughout.
    const answers = (async () => {
      const all: Answer[] = [];
      for (let i = 0; i < 5; i += 1) all.push(await post('/v2/models/identity/infer', gzipped, { 'content-encoding': 'gzip' }));
      return all;
    })();
    const live = await liveLatencyDuring(answers);
    const all = await answers;
    for (const answer of all) expect(answer.status).toBe(400);
    const { status, body } = all[0]!;
    const ms = Math.max(...all.map((a) => a.ms));
    console.log(
      `JSON bomb: ${bomb.length} bytes in ${gzipped.length} bytes of gzip, answered ${status} in ${ms.toFixed(0)} ms; ` +
        `/v2/health/live slowest ${live.slowest.toFixed(1)} ms over ${live.probes} probes (idle: ${idle.slowest.toFixed(1)} ms over ${idle.probes})`,
    );
    expect(status).toBe(400);
    expect(JSON.parse(body).error).toMatch(/^the JSON body holds more than 2097152 values; send large tensors as binary data/);
    expect(live.slowest).toBeLessThan(Math.max(100, 2 * idle.slowest));
  }, 60_000);

  it('a large JSON request (parsed on the worker thread) is served as before', async () => {
    const data = Array.from({ length: 100_000 }, (_, i) => i / 8);
    const body = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [data.length], data }] }));
    expect(body.length).toBeGreaterThan(256 * 1024);
    const { status, body: answer } = await post('/v2/models/identity/infer', body);
    expect(status).toBe(200);
    const outputs = JSON.parse(answer).outputs;
    expect(outputs[0].name).toBe('OUTPUT0');
    expect(outputs[0].data).toEqual(data);
  });

  it('16 parallel gzip bombs: each refused 413 or 503 (Retry-After), RSS rise < 300 MB', async () => {
    // 128 MiB of zeros, about 128 KB of gzip: each inflates past --max-message-size (64 MiB).
    const gzipped = zlib.gzipSync(Buffer.alloc(128 * MiB), { level: 9 });
    const rss = new RssSampler(served.server.process.pid!);
    const answers = await Promise.all(Array.from({ length: 16 }, () => post('/v2/models/identity/infer', gzipped, { 'content-encoding': 'gzip' })));
    const rise = rss.stop();
    const counts = { 413: 0, 503: 0 };
    for (const { status, headers, body } of answers) {
      expect([413, 503]).toContain(status);
      if (status === 413) {
        expect(JSON.parse(body).error).toMatch(/^request body too large: a gzip body that inflates to more than 67108864 bytes exceeds the limit of 67108864 bytes \(--max-message-size\)$/);
      } else {
        expect(headers['retry-after']).toBe('1');
        expect(JSON.parse(body).error).toMatch(/^the server is holding \d+ bytes of request bodies, and \d+ more would pass its budget of 134217728 bytes \(--http-body-budget\); retry in 1 s$/);
      }
      counts[status as 413 | 503] += 1;
    }
    console.log(`16 gzip bombs (${gzipped.length} bytes each): ${counts[413]} x 413, ${counts[503]} x 503; RSS rise ${(rise / MiB).toFixed(1)} MiB`);
    expect(rise).toBeLessThan(300 * MiB);
    // The budget is free again: a normal request is served.
    const ok = await post('/v2/models/identity/infer', Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }] })));
    expect(ok.status).toBe(200);
  }, 60_000);

  it('a body that stops arriving is answered 408 after --body-idle-timeout and the connection closed', async () => {
    const socket = net.connect(served.server.httpPort, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const started = performance.now();
    socket.write('POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"inputs": [');
    let reply = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (reply += chunk));
    await new Promise((resolve) => socket.once('close', resolve));
    const ms = performance.now() - started;
    expect(reply).toMatch(/^HTTP\/1\.1 408 /);
    expect(reply).toMatch(/"error":"the request body stopped arriving: no byte for 1000 ms \(--body-idle-timeout\) after 12 bytes"/);
    expect(ms).toBeGreaterThan(900);
    expect(ms).toBeLessThan(5000);
  });
});
