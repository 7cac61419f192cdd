/**
 * A front-door thread's HTTP ModelInfer (src/server/door-http.ts) between
 * real sockets: a client on TCP, the door's handler on an HTTP server, and a
 * stand-in for the main thread's REST server on a unix socket that records
 * what it is sent. The door's DoorInference is replaced by a stand-in runner
 * (a DoorInference needs a natively fed batcher); what is under test is what
 * the door does with the runner's verdicts: answer here, forward as received,
 * or hand back with the body as read (its charge to the body budget released
 * first), each counted once; nothing is counted for a client gone before the
 * hand-back.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { create } from '@bufbuild/protobuf';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferResponseSchema, type ModelInferRequest, type ModelInferResponse } from '../../src/generated/grpc_service_pb.js';
import { ForwardToMainThread } from '../../src/inference/door-inference.js';
import type { InferContext } from '../../src/inference/infer-context.js';
import { RefusalLog } from '../../src/observability/refusal-log.js';
import { doorGates, type Caller } from '../../src/security/caller.js';
import { HttpForwarding } from '../../src/server/door-forwarding.js';
import { DoorHttp } from '../../src/server/door-http.js';
import { HttpAdmission } from '../../src/server/http/http-admission.js';
import { httpBodyLimits } from '../../src/server/http/rest-server.js';

interface Received {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
  /** The door's body budget when this request reached the main thread: what the door still held. */
  readonly doorHeld: number;
}

/** What the stand-in runner does next, and what it saw. */
let verdict: 'answer' | 'hand-back' | 'hand-back-once-gone' = 'answer';
/** 'hand-back-once-gone': resolved just before the runner hands back the request of a client that went away. */
let handingBack: () => void = () => {};
let servesHere = true;
const runs: { request: ModelInferRequest; context: InferContext; method: string | undefined }[] = [];
const asked: { model: string; version: string; caller: Caller }[] = [];
const received: Received[] = [];
const counted: ('door' | 'main')[] = [];

const runner = {
  serves(model: string, version: string, caller: Caller): boolean {
    asked.push({ model, version, caller });
    return servesHere;
  },
  async infer(request: ModelInferRequest, context: InferContext, method?: string): Promise<ModelInferResponse> {
    runs.push({ request, context, method });
    if (verdict === 'hand-back') throw new ForwardToMainThread('the version is unloading');
    if (verdict === 'hand-back-once-gone') {
      for (let i = 0; context.cancelledAtMs?.() === undefined; i += 1) {
        if (i === 400) throw new Error('the client never went away');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      handingBack();
      throw new ForwardToMainThread('the version is unloading');
    }
    return create(ModelInferResponseSchema, {
      modelName: request.modelName,
      modelVersion: '1',
      outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [1n, 2n] }],
      rawOutputContents: [new Uint8Array(Float32Array.from([3, 4]).buffer)],
    });
  },
};

let dir: string;
let main: http.Server;
let door: http.Server;
let doorPort: number;
let forwarding: HttpForwarding;
let requests: DoorHttp;
let bodies: ReturnType<typeof httpBodyLimits>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-door-http-'));
  const socketPath = path.join(dir, 'http.sock');
  main = http.createServer((request, response) => {
    const doorHeld = bodies.budget!.inFlight;
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ method: request.method, url: request.url, headers: request.headers, body: Buffer.concat(chunks), doorHeld });
      response.writeHead(409, { 'content-type': 'application/json', 'x-request-id': 'main-answer' });
      response.end(JSON.stringify({ error: 'answered by the main thread' }));
    });
  });
  await new Promise<void>((resolve) => main.listen(socketPath, resolve));
  const logger = pino({ level: 'silent' });
  const admission = new HttpAdmission(
    doorGates({ requireApiKey: false, apiKeys: [], adminTenant: undefined, grpcRestrictedProtocol: [], httpRestrictedApi: ['inference:door-key=open'] }).http,
    new RefusalLog(logger),
  );
  forwarding = new HttpForwarding(socketPath, admission);
  bodies = httpBodyLimits(1024 * 1024, {});
  requests = new DoorHttp({
    served: runner,
    forwarding,
    admission,
    bodies,
    log: logger,
    framing: new RefusalLog(logger),
    count: (by) => counted.push(by),
  });
  door = http.createServer(requests.handle);
  await new Promise<void>((resolve) => door.listen(0, '127.0.0.1', resolve));
  doorPort = (door.address() as AddressInfo).port;
});

afterEach(() => {
  verdict = 'answer';
  servesHere = true;
  for (const list of [runs, asked, received, counted] as unknown[][]) list.length = 0;
});

afterAll(async () => {
  forwarding?.close();
  await requests?.close();
  await Promise.all([door, main].map((server) => new Promise((resolve) => server?.close(resolve))));
  await rm(dir, { recursive: true, force: true });
});

function post(route: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port: doorPort,
        method: 'POST',
        path: route,
        agent: false,
        headers: { 'door-key': 'open', 'content-length': String(body.byteLength), ...headers },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const jsonInfer = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [3, 4] }] }));

describe('DoorHttp', () => {
  it('answers a served version in the door with the REST encoding, counted once as the door’s', async () => {
    const answer = await post('/v2/models/m%20x/versions/1/infer?ignored=1', jsonInfer, { 'x-request-id': 'abc' });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toBe('abc');
    expect(JSON.parse(answer.body.toString())).toEqual({
      model_name: 'm x',
      model_version: '1',
      outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [1, 2], data: [3, 4] }],
    });
    expect(asked.map(({ model, version }) => [model, version])).toEqual([['m x', '1']]);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.method).toBe('HTTP ModelInfer');
    expect(runs[0]!.context.requestId).toBe('abc');
    expect(received).toEqual([]);
    expect(counted).toEqual(['door']);
  });

  it('forwards a version it does not serve as received, before reading the body, counted once as the main thread’s', async () => {
    servesHere = false;
    const zipped = gzipSync(jsonInfer);
    const answer = await post('/v2/models/m/infer', zipped, { 'content-encoding': 'gzip', 'x-request-id': 'abc' });
    expect(answer.status).toBe(409);
    expect(answer.headers['x-request-id']).toBe('main-answer');
    expect(JSON.parse(answer.body.toString())).toEqual({ error: 'answered by the main thread' });
    expect(runs).toEqual([]);
    expect(received).toHaveLength(1);
    expect(received[0]!.url).toBe('/v2/models/m/infer');
    expect(received[0]!.doorHeld).toBe(0);
    expect(received[0]!.headers['content-encoding']).toBe('gzip');
    expect(received[0]!.body.equals(zipped)).toBe(true);
    expect(received[0]!.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(counted).toEqual(['main']);
  });

  it('hands a request the runner gives back to the main thread with the body as read (inflated), its charge released, counted once as the main thread’s', async () => {
    verdict = 'hand-back';
    const raw = Buffer.from(Float32Array.from([3, 4]).buffer);
    const json = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], parameters: { binary_data_size: 8 } }] }));
    const whole = Buffer.concat([json, raw]);
    const answer = await post('/v2/models/m/infer', gzipSync(whole), {
      'content-encoding': 'gzip',
      'inference-header-content-length': String(json.byteLength),
      'x-request-id': 'abc',
    });
    expect(answer.status).toBe(409);
    expect(answer.headers['x-request-id']).toBe('main-answer');
    expect(JSON.parse(answer.body.toString())).toEqual({ error: 'answered by the main thread' });
    expect(runs).toHaveLength(1);
    expect(received).toHaveLength(1);
    const forwarded = received[0]!;
    expect(forwarded.method).toBe('POST');
    expect(forwarded.url).toBe('/v2/models/m/infer');
    expect(forwarded.body.equals(whole)).toBe(true);
    expect(forwarded.headers['content-encoding']).toBeUndefined();
    expect(forwarded.headers['content-length']).toBe(String(whole.byteLength));
    expect(forwarded.headers['inference-header-content-length']).toBe(String(json.byteLength));
    expect(forwarded.headers['x-request-id']).toBe('abc');
    expect(forwarded.headers['x-forwarded-for']).toBe('127.0.0.1');
    // The door released the body (compressed and inflated) before sending it: the main thread charges it once, as it reads it.
    expect(forwarded.doorHeld).toBe(0);
    expect(counted).toEqual(['main']);
    expect(bodies.budget!.inFlight).toBe(0);
  });

  it('counts nothing for a request to hand back whose client has gone, and sends it nowhere', async () => {
    verdict = 'hand-back-once-gone';
    const handedBack = new Promise<void>((resolve) => (handingBack = resolve));
    const request = http.request({
      host: '127.0.0.1',
      port: doorPort,
      method: 'POST',
      path: '/v2/models/m/infer',
      agent: false,
      headers: { 'door-key': 'open', 'content-length': String(jsonInfer.byteLength) },
    });
    request.on('error', () => {});
    request.end(jsonInfer);
    for (let i = 0; runs.length === 0; i += 1) {
      if (i === 400) throw new Error('the request never ran');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    request.destroy();
    await handedBack;
    // The endpoint's outcome is counted a few microtasks after the hand-back.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runs).toHaveLength(1);
    expect(received).toEqual([]);
    expect(counted).toEqual([]);
    expect(bodies.budget!.inFlight).toBe(0);
  });

  it('keeps a large JSON body intact for a hand-back after its parse off the event loop', async () => {
    verdict = 'hand-back';
    // Over the JsonParser's 256 KiB inline limit: parsed in its worker, which may otherwise take the body's buffer.
    const values = Array.from({ length: 60_000 }, (_, i) => i + 0.25);
    const body = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length], data: values }] }));
    expect(body.byteLength).toBeGreaterThan(256 * 1024);
    const answer = await post('/v2/models/m/infer', body);
    expect(answer.status).toBe(409);
    expect(received[0]!.body.equals(body)).toBe(true);
  });

  it('refuses a request its admission refuses, before the lookup, counting nothing', async () => {
    const answer = await post('/v2/models/m/infer', jsonInfer, { 'door-key': 'wrong', 'x-request-id': 'abc' });
    expect(answer.status).toBe(403);
    expect(answer.headers['x-request-id']).toBe('abc');
    expect(JSON.parse(answer.body.toString()).error).toMatch(/door-key/);
    expect(asked).toEqual([]);
    expect(received).toEqual([]);
    expect(counted).toEqual([]);
  });

  it('answers a decoding failure in the door as the REST endpoint does, counted as the door’s', async () => {
    const answer = await post('/v2/models/m/infer', Buffer.from('{"inputs": ['));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body.toString()).error).toMatch(/JSON/i);
    expect(runs).toEqual([]);
    expect(counted).toEqual(['door']);
  });
});
