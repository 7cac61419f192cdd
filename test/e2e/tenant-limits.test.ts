/**
 * Per-tenant limits against a real server, under load from real clients
 * (grpc-js through @grpc/proto-loader, and node:http for REST): a tenant over
 * its request rate or its in-flight cap is refused RESOURCE_EXHAUSTED (HTTP
 * 429) with the limit named, and counted in hotpath_tenant_rejected_total,
 * while a tenant under its limits, loaded at the same time, sees no refusal.
 * The message size limit holds on both doors.
 *
 * Then the connection limits, on a second server: streams per gRPC
 * connection, idle timeouts on both doors, requests per HTTP connection, and
 * the metrics port bound to another address (--metrics-address).
 */
import { appendFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { parseMetrics, scrape } from './helpers/probes.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes, TritonClient, type CallError, type Message } from './helpers/triton-client.js';

const MESSAGE_LIMIT = 65536;

async function identity(dir: string, name: string, tenant: string): Promise<void> {
  await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 8, withConfig: true, dims: [-1] });
  await appendFile(path.join(dir, name, 'config.pbtxt'), `\nparameters { key: "tenant" value: { string_value: "${tenant}" } }\n`);
}

const request = (model: string, floats = 4): Message => ({
  model_name: model,
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, floats] }],
  raw_input_contents: [f32Bytes(new Float32Array(floats).fill(0.5))],
});

/** A request the worker holds for `ms` before running it (test-only fault hook): it stays in flight that long. */
const slow = (model: string, ms: number): Message => ({
  ...request(model),
  parameters: { hotpath_fault: { string_param: `delay:${ms}` } },
});

type Outcome = { ok: true } | { ok: false; error: CallError };

function attempt(client: TritonClient, message: Message): Promise<Outcome> {
  return client.call('ModelInfer', message).then(
    () => ({ ok: true }) as const,
    (error: CallError) => ({ ok: false, error }) as const,
  );
}

interface HttpAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly reusedSocket: boolean;
}

function httpRequest(
  port: number,
  method: string,
  route: string,
  body?: string,
  options: { host?: string; agent?: http.Agent | false } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const req = http.request({ host: options.host ?? '127.0.0.1', port, method, path: route, headers, agent: options.agent ?? false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text, reusedSocket: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const restInfer = (port: number, model: string, floats = 4) =>
  httpRequest(
    port,
    'POST',
    `/v2/models/${model}/infer`,
    JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, floats], data: new Array(floats).fill(0.5) }] }),
  );

describe('tenant limits under load', () => {
  let served: ServedRepository;
  /** Refusals the tests provoked, by tenant and reason: what the metric must say. */
  const provoked = { paced: { rate: 0, inflight: 0 }, capped: { rate: 0, inflight: 0 } };

  beforeAll(async () => {
    const repo = tempRepository(async (dir) => {
      await identity(dir, 'paced_scorer', 'paced');
      await identity(dir, 'capped_scorer', 'capped');
      await identity(dir, 'free_scorer', 'free');
      await writeFile(
        path.join(dir, 'tenants.json'),
        JSON.stringify({
          tenants: {
            paced: { quota: '64MiB', rate: 2, burst: 3 },
            capped: { quota: '64MiB', max_inflight: 2 },
            free: '64MiB',
          },
        }),
      );
    });
    const dir = (await repo).dir;
    served = await serveRepository(repo, [
      '--tenants-file', path.join(dir, 'tenants.json'),
      '--enable-fault-injection',
      '--max-message-size', String(MESSAGE_LIMIT),
    ]);
  });

  afterAll(() => served?.close());

  it('refuses a tenant above its request rate, with the limit named, while another tenant under load is served', async () => {
    const started = performance.now();
    const [paced, free] = await Promise.all([
      Promise.all(Array.from({ length: 12 }, () => attempt(served.client, request('paced_scorer')))),
      Promise.all(Array.from({ length: 40 }, () => attempt(served.client, request('free_scorer')))),
    ]);
    const elapsedS = (performance.now() - started) / 1000;
    const admitted = paced.filter((o) => o.ok).length;
    // The bucket starts full (burst 3) and refills 2 a second while the calls arrive.
    expect(admitted).toBeGreaterThanOrEqual(3);
    expect(admitted).toBeLessThanOrEqual(3 + Math.floor(2 * elapsedS));
    const refused = paced.flatMap((o) => (o.ok ? [] : [o.error]));
    expect(refused.length).toBe(12 - admitted);
    for (const error of refused) {
      expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(error.details).toMatch(
        /^tenant 'paced' is over its request rate limit \(rate 2 requests\/s, burst 3 in the tenants file\): no request left in the bucket; the next is allowed in \d+ ms$/,
      );
    }
    provoked.paced.rate += refused.length;
    expect(free.filter((o) => !o.ok)).toEqual([]);

    // The bucket refills: after a second, two more requests pass.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await attempt(served.client, request('paced_scorer'))).toEqual({ ok: true });
  });

  it('refuses a tenant above its in-flight cap until one of its requests is answered', async () => {
    const [capped, free] = await Promise.all([
      Promise.all(Array.from({ length: 6 }, () => attempt(served.client, slow('capped_scorer', 1000)))),
      Promise.all(Array.from({ length: 6 }, () => attempt(served.client, slow('free_scorer', 200)))),
    ]);
    expect(capped.filter((o) => o.ok).length).toBe(2);
    const refused = capped.flatMap((o) => (o.ok ? [] : [o.error]));
    expect(refused.length).toBe(4);
    for (const error of refused) {
      expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(error.details).toBe(
        "tenant 'capped' is over its in-flight limit (max_inflight 2 in the tenants file): 2 of its requests are already in flight; retry when one is answered",
      );
    }
    provoked.capped.inflight += refused.length;
    // Six of the free tenant's requests were in flight at once, beside them.
    expect(free.filter((o) => !o.ok)).toEqual([]);
    // Answered: the places are free again.
    expect(await attempt(served.client, request('capped_scorer'))).toEqual({ ok: true });
  });

  it('refuses over REST with 429 and the same message', async () => {
    const held = Promise.all([attempt(served.client, slow('capped_scorer', 1500)), attempt(served.client, slow('capped_scorer', 1500))]);
    // Once the server holds both (the only requests in flight), the cap is full.
    for (let i = 0; i < 100 && (await scrape(served.server.metricsPort)).get('hotpath_inflight_requests') !== 2; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const answer = await restInfer(served.server.httpPort, 'capped_scorer');
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.body)).toEqual({
      error: "tenant 'capped' is over its in-flight limit (max_inflight 2 in the tenants file): 2 of its requests are already in flight; retry when one is answered",
    });
    provoked.capped.inflight += 1;
    expect((await held).every((o) => o.ok)).toBe(true);

    let rate: HttpAnswer | undefined;
    for (let i = 0; i < 20; i += 1) {
      rate = await restInfer(served.server.httpPort, 'paced_scorer');
      if (rate.status !== 200) break;
    }
    expect(rate!.status).toBe(429);
    expect(JSON.parse(rate!.body).error).toMatch(/^tenant 'paced' is over its request rate limit \(rate 2 requests\/s, burst 3 in the tenants file\)/);
    provoked.paced.rate += 1;
    expect((await restInfer(served.server.httpPort, 'free_scorer')).status).toBe(200);
  });

  it('refuses each request of a stream on its own, inline, and keeps the stream open', async () => {
    const stream = served.client.stream();
    const received: Message[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (message: Message) => received.push(message));
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    // Six requests of a tenant with at most two in flight, then one of a tenant without limits.
    for (let k = 0; k < 6; k += 1) stream.write({ ...slow('capped_scorer', 500), id: `c-${k}` });
    stream.write({ ...request('free_scorer'), id: 'f' });
    stream.end();
    await done;
    expect(received).toHaveLength(7);
    const errors = received.map((m) => m['error_message'] as string).filter((e) => e !== '');
    expect(errors).toHaveLength(4);
    for (const error of errors) expect(error).toMatch(/^tenant 'capped' is over its in-flight limit \(max_inflight 2 in the tenants file\)/);
    expect(received.find((m) => m['infer_response']['id'] === 'f')!['error_message']).toBe('');
    provoked.capped.inflight += errors.length;
  });

  it('counts every refusal in hotpath_tenant_rejected_total{tenant,reason}, and none for the tenant under its limits', async () => {
    const metrics = await scrape(served.server.metricsPort);
    for (const tenant of ['paced', 'capped'] as const) {
      for (const reason of ['rate', 'inflight'] as const) {
        expect(metrics.get(`hotpath_tenant_rejected_total{tenant="${tenant}",reason="${reason}"}`), `${tenant} ${reason}`).toBe(provoked[tenant][reason]);
      }
    }
    expect([...metrics.keys()].filter((k) => k.startsWith('hotpath_tenant_rejected_total{tenant="free"'))).toEqual([]);
    // Refused before execution: Triton's REJECTED failures of the model, none for the free tenant's.
    expect(metrics.get('nv_inference_request_failure{model="paced_scorer",version="1",reason="REJECTED"}')).toBe(provoked.paced.rate);
    expect(metrics.get('nv_inference_request_failure{model="capped_scorer",version="1",reason="REJECTED"}')).toBe(provoked.capped.inflight);
    for (const reason of ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER']) {
      expect(metrics.get(`nv_inference_request_failure{model="free_scorer",version="1",reason="${reason}"}`)).toBe(0);
    }
  });

  it('holds the message size limit on both doors', async () => {
    const floats = MESSAGE_LIMIT / 4 + 16;
    const err = await served.client.callError('ModelInfer', request('free_scorer', floats));
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(new RegExp(`larger than max \\(\\d+ vs ${MESSAGE_LIMIT}\\)`));
    const rest = await restInfer(served.server.httpPort, 'free_scorer', floats);
    expect(rest.status).toBe(413);
    expect(JSON.parse(rest.body).error).toMatch(new RegExp(`^request body too large: a body of \\d+ bytes exceeds the limit of ${MESSAGE_LIMIT} bytes \\(--max-message-size\\)$`));
    // Below the limit, both doors serve.
    expect(await attempt(served.client, request('free_scorer', 1024))).toEqual({ ok: true });
    expect((await restInfer(served.server.httpPort, 'free_scorer', 1024)).status).toBe(200);
  });
});

describe('connection limits and the metrics address', () => {
  let served: ServedRepository;
  const GRPC_IDLE_MS = 400;
  // Node's agent reuses a socket only when the server's Keep-Alive hint is above 1 s.
  const HTTP_IDLE_MS = 2500;

  beforeAll(async () => {
    served = await serveRepository(
      tempRepository((dir) => identity(dir, 'free_scorer', 'free')),
      [
        '--tenant', 'free:64MiB',
        '--enable-fault-injection',
        '--grpc-max-concurrent-streams', '2',
        '--grpc-max-connection-idle', String(GRPC_IDLE_MS),
        '--http-idle-timeout', String(HTTP_IDLE_MS),
        '--http-max-requests-per-socket', '2',
        '--metrics-address', '127.0.0.2',
      ],
    );
  });

  afterAll(() => served?.close());

  it('announces the concurrent-stream limit to gRPC clients, which queue the calls above it', async () => {
    const session = http2.connect(`http://127.0.0.1:${served.server.grpcPort}`);
    try {
      const settings = await new Promise<http2.Settings>((resolve, reject) => {
        session.once('remoteSettings', resolve);
        session.once('error', reject);
      });
      expect(settings.maxConcurrentStreams).toBe(2);
    } finally {
      session.close();
    }
    // Five slow calls on one connection: none is refused, the client holds three back.
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => attempt(served.client, slow('free_scorer', 150))));
    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
  });

  it('sends GOAWAY to an idle gRPC connection, and a client reconnects by itself', async () => {
    const session = http2.connect(`http://127.0.0.1:${served.server.grpcPort}`);
    session.on('error', () => {});
    const opened = performance.now();
    const goaway = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no GOAWAY within 5 s')), 5000);
      const ended = () => {
        clearTimeout(timer);
        resolve(performance.now() - opened);
      };
      session.once('goaway', ended);
      session.once('close', ended);
    });
    session.destroy();
    expect(goaway).toBeGreaterThanOrEqual(GRPC_IDLE_MS - 50);
    // The typed client's connection went idle between these calls as well.
    const client = new TritonClient(served.server.grpcAddress);
    try {
      expect(await attempt(client, request('free_scorer'))).toEqual({ ok: true });
      await new Promise((resolve) => setTimeout(resolve, GRPC_IDLE_MS * 3));
      expect(await attempt(client, request('free_scorer'))).toEqual({ ok: true });
    } finally {
      client.close();
    }
  });

  it('closes an idle kept-alive HTTP connection, and a connection after its request limit', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await httpRequest(served.server.httpPort, 'GET', '/v2/health/live', undefined, { agent });
      expect(first.status).toBe(200);
      expect(first.headers.connection).toBe('keep-alive');
      const second = await httpRequest(served.server.httpPort, 'GET', '/v2/health/live', undefined, { agent });
      // The second request on the connection is its last (--http-max-requests-per-socket 2).
      expect([second.reusedSocket, second.headers.connection]).toEqual([true, 'close']);
      const third = await httpRequest(served.server.httpPort, 'GET', '/v2/health/live', undefined, { agent });
      expect([third.status, third.reusedSocket, third.headers.connection]).toEqual([200, false, 'keep-alive']);
    } finally {
      agent.destroy();
    }

    // A plain socket, so that only the server can close it.
    const socket = net.connect(served.server.httpPort, '127.0.0.1');
    try {
      let answered = -1;
      let text = '';
      const closedAfter = new Promise<number>((resolve) => {
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          if (answered < 0 && text.includes('\r\n\r\n')) answered = performance.now();
        });
        socket.once('close', () => resolve(performance.now() - answered));
      });
      socket.write('GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
      const idleMs = await closedAfter;
      expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      // The idle timeout and the requests left on the connection, announced.
      expect(text).toMatch(/\r\nKeep-Alive: timeout=2, max=2\r\n/i);
      expect(idleMs).toBeGreaterThanOrEqual(HTTP_IDLE_MS - 100);
      expect(idleMs).toBeLessThan(HTTP_IDLE_MS + 3000);
    } finally {
      socket.destroy();
    }
  });

  it('binds the metrics port to --metrics-address only', async () => {
    const port = served.server.metricsPort;
    const answer = await httpRequest(port, 'GET', '/metrics', undefined, { host: '127.0.0.2' });
    expect(answer.status).toBe(200);
    expect(parseMetrics(answer.body).get('hotpath_inflight_requests')).toBe(0);
    await expect(httpRequest(port, 'GET', '/metrics')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    // The other doors stay on --host.
    expect((await httpRequest(served.server.httpPort, 'GET', '/v2/health/ready')).status).toBe(200);
  });
});
