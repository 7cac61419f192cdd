/**
 * The KServe V2 / Triton REST door, driven with raw HTTP (node:http and a
 * plain TCP socket) and bodies built by hand from the protocol spec and
 * Triton's binary tensor data extension: no hotpath types or codecs. Scores
 * are checked against onnxruntime run directly on the same model file.
 */
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directRun, sampleRepository } from './helpers/repositories.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { httpSend, type HttpAnswer, type HttpSendOptions } from './helpers/http-send.js';

/** The body limit the server runs with (--max-message-size), small enough to cross in a test. */
const LIMIT = 65536;

let server: RunningServer;
let repository: { dir: string; remove: () => Promise<void> };

beforeAll(async () => {
  repository = await sampleRepository(['ctr_mlp', 'typed_identity']);
  server = await startServer(repository.dir, ['--max-message-size', String(LIMIT)]);
});

afterAll(async () => {
  await server?.stop();
  await repository?.remove();
});

type Answer = HttpAnswer;

function send(method: string, route: string, options: HttpSendOptions = {}): Promise<Answer> {
  return httpSend(server.httpPort, method, route, options);
}

const getJson = async (route: string) => {
  const answer = await send('GET', route);
  return { status: answer.status, json: JSON.parse(answer.body.toString()), headers: answer.headers };
};
const postJson = async (route: string, body: unknown, headers: Record<string, string> = {}) => {
  const answer = await send('POST', route, { body: JSON.stringify(body), headers });
  return { ...answer, json: answer.body.byteLength === 0 ? undefined : JSON.parse(answer.body.toString()) };
};

/** A request written byte for byte on a fresh TCP connection; resolves with the raw response text. */
function rawExchange(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.httpPort, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      const split = received.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(received)?.[1];
      if (split >= 0 && length !== undefined && received.length >= split + 4 + Number(length)) {
        socket.end();
        resolve(received);
      }
    });
    socket.on('error', reject);
    socket.write(text);
  });
}

/** A binary-extension body: the JSON header, then each buffer back to back. */
function binaryBody(header: unknown, ...parts: Uint8Array[]): { body: Buffer; headers: Record<string, string> } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...parts]), headers: { 'Inference-Header-Content-Length': String(json.byteLength) } };
}

/** Splits a binary-extension response into its JSON and each binary output's bytes, by binary_data_size. */
function splitBinaryAnswer(answer: Answer): { json: any; binary: Map<string, Buffer> } {
  const headerLength = Number(answer.headers['inference-header-content-length']);
  const json = JSON.parse(answer.body.subarray(0, headerLength).toString());
  const binary = new Map<string, Buffer>();
  let offset = headerLength;
  for (const output of json.outputs) {
    const size = output.parameters?.binary_data_size;
    if (size === undefined) continue;
    binary.set(output.name, answer.body.subarray(offset, offset + size));
    offset += size;
  }
  expect(offset).toBe(answer.body.byteLength);
  return { json, binary };
}

const f32 = (values: number[]) => Buffer.from(Float32Array.from(values).buffer);
/** IEEE half bits for 1, -2, 0.5 and 65504, written out by hand. */
const HALF_BITS = Buffer.from([0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b]);
/** BYTES in the binary format: a 4-byte little-endian length, then the UTF-8 bytes. */
function lengthPrefixed(strings: string[]): Buffer {
  return Buffer.concat(strings.flatMap((s) => {
    const bytes = Buffer.from(s, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.byteLength);
    return [length, bytes];
  }));
}

const features = (rows: number) => Array.from({ length: rows }, (_, r) => Array.from({ length: 32 }, (_, i) => Math.sin(r * 7 + i)));

async function referenceScores(rows: number[][]): Promise<number[]> {
  const input = new ort.Tensor('float32', Float32Array.from(rows.flat()), [rows.length, 32]);
  const out = await directRun(path.join(repository.dir, 'ctr_mlp', '1', 'model.onnx'), { features: input });
  return [...(out['score']!.data as Float32Array)];
}

describe('metadata, readiness, configuration', () => {
  it('GET /v2 answers the server metadata with the binary tensor data extension', async () => {
    const { status, json, headers } = await getJson('/v2');
    expect(status).toBe(200);
    expect(headers['content-type']).toBe('application/json');
    expect(typeof json.name).toBe('string');
    expect(typeof json.version).toBe('string');
    expect(json.extensions).toEqual(expect.arrayContaining(['binary_tensor_data', 'model_repository', 'statistics']));
  });

  it('answers model metadata with numeric shapes, with and without a version', async () => {
    const expected = {
      name: 'ctr_mlp',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 32] }],
      outputs: [{ name: 'score', datatype: 'FP32', shape: [-1, 1] }],
    };
    expect(await getJson('/v2/models/ctr_mlp')).toMatchObject({ status: 200, json: expected });
    expect(await getJson('/v2/models/ctr_mlp/versions/1')).toMatchObject({ status: 200, json: expected });
    const missing = await getJson('/v2/models/ctr_mlp/versions/7');
    expect(missing.status).toBe(404);
    expect(missing.json.error).toMatch(/model 'ctr_mlp' version 7 is not found/);
  });

  it('answers readiness with 200, and 404 with an error for an unknown model', async () => {
    const ready = await send('GET', '/v2/models/typed_identity/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.byteLength).toBe(0);
    const unknown = await getJson('/v2/models/no_such_model/ready');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatch(/no_such_model/);
  });

  it('answers the config with Triton\'s field names and numbers for 64-bit fields', async () => {
    const { status, json } = await getJson('/v2/models/ctr_mlp/config');
    expect(status).toBe(200);
    expect(json).toMatchObject({
      name: 'ctr_mlp',
      platform: 'onnxruntime_onnx',
      max_batch_size: 64,
      input: [{ name: 'features', data_type: 'TYPE_FP32', dims: [32] }],
      output: [{ name: 'score', data_type: 'TYPE_FP32', dims: [1] }],
      dynamic_batching: { preferred_batch_size: [16, 32, 64], max_queue_delay_microseconds: 200 },
      instance_group: [{ count: 1, kind: 'KIND_CPU' }],
    });
  });
});

describe('JSON inference', () => {
  it('scores ctr_mlp from nested JSON data, as onnxruntime does directly', async () => {
    const rows = features(3);
    const { status, headers, json } = await postJson(
      '/v2/models/ctr_mlp/infer',
      { id: 'req-7', inputs: [{ name: 'features', datatype: 'FP32', shape: [3, 32], data: rows }] },
    );
    expect(status).toBe(200);
    expect(headers['content-type']).toBe('application/json');
    expect(headers['inference-header-content-length']).toBeUndefined();
    expect(json).toMatchObject({ id: 'req-7', model_name: 'ctr_mlp', model_version: '1' });
    expect(json.outputs).toHaveLength(1);
    expect(json.outputs[0]).toMatchObject({ name: 'score', datatype: 'FP32', shape: [3, 1] });
    const expected = await referenceScores(rows);
    json.outputs[0].data.forEach((score: number, i: number) => expect(score).toBeCloseTo(expected[i]!, 5));
  });

  it('returns every typed_identity datatype but FP16 as JSON values, and FP16 in binary', async () => {
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: 'in_fp32', datatype: 'FP32', shape: [1, 4], data: [[0.5, -1.25, 3, 1e-3]] },
          { name: 'in_fp16', datatype: 'FP16', shape: [1, 4], parameters: { binary_data_size: HALF_BITS.byteLength } },
          { name: 'in_int64', datatype: 'INT64', shape: [1, 4], data: [-9007199254740991, -1, 0, 9007199254740991] },
          { name: 'in_bool', datatype: 'BOOL', shape: [1, 4], data: [true, false, false, true] },
          { name: 'in_bytes', datatype: 'BYTES', shape: [1, 4], data: ['', 'a', 'héllo', '✓ ok'] },
        ],
        outputs: [
          { name: 'out_fp32' }, { name: 'out_fp16', parameters: { binary_data: true } }, { name: 'out_int64' },
          { name: 'out_bool' }, { name: 'out_bytes', parameters: { binary_data: false } },
        ],
      },
      HALF_BITS,
    );
    const answer = await send('POST', '/v2/models/typed_identity/infer', { body, headers });
    expect(answer.status, answer.body.toString()).toBe(200);
    expect(answer.headers['content-type']).toBe('application/octet-stream');
    const { json, binary } = splitBinaryAnswer(answer);
    const byName = Object.fromEntries(json.outputs.map((o: any) => [o.name, o]));
    expect(byName.out_fp32).toMatchObject({ datatype: 'FP32', shape: [1, 4], data: [0.5, -1.25, 3, Math.fround(1e-3)] });
    expect(byName.out_int64.data).toEqual([-9007199254740991, -1, 0, 9007199254740991]);
    expect(byName.out_bool.data).toEqual([true, false, false, true]);
    expect(byName.out_bytes).toMatchObject({ datatype: 'BYTES', data: ['', 'a', 'héllo', '✓ ok'] });
    expect(byName.out_fp16).toMatchObject({ datatype: 'FP16', shape: [1, 4], parameters: { binary_data_size: 8 } });
    expect(byName.out_fp16.data).toBeUndefined();
    expect(binary.get('out_fp16')).toEqual(HALF_BITS);
  });

  it('sends every output in binary with binary_data_output, BYTES length-prefixed', async () => {
    const { body, headers } = binaryBody(
      {
        parameters: { binary_data_output: true },
        inputs: [
          { name: 'in_fp32', datatype: 'FP32', shape: [1, 4], parameters: { binary_data_size: 16 } },
          { name: 'in_fp16', datatype: 'FP16', shape: [1, 4], parameters: { binary_data_size: 8 } },
          { name: 'in_int64', datatype: 'INT64', shape: [1, 4], data: [1, 2, 3, 4] },
          { name: 'in_bool', datatype: 'BOOL', shape: [1, 4], parameters: { binary_data_size: 4 } },
          { name: 'in_bytes', datatype: 'BYTES', shape: [1, 4], parameters: { binary_data_size: lengthPrefixed(['x', 'yy', '', 'é']).byteLength } },
        ],
      },
      f32([1, 2, 3, 4]),
      HALF_BITS,
      Buffer.from([1, 1, 0, 1]),
      lengthPrefixed(['x', 'yy', '', 'é']),
    );
    const answer = await send('POST', '/v2/models/typed_identity/infer', { body, headers });
    expect(answer.status, answer.body.toString()).toBe(200);
    const { json, binary } = splitBinaryAnswer(answer);
    expect(json.outputs.map((o: any) => o.name)).toEqual(['out_fp32', 'out_fp16', 'out_int64', 'out_bool', 'out_bytes']);
    expect(binary.get('out_fp32')).toEqual(f32([1, 2, 3, 4]));
    expect(binary.get('out_fp16')).toEqual(HALF_BITS);
    expect(binary.get('out_int64')).toEqual(Buffer.from(BigInt64Array.from([1n, 2n, 3n, 4n]).buffer));
    expect(binary.get('out_bool')).toEqual(Buffer.from([1, 1, 0, 1]));
    expect(binary.get('out_bytes')).toEqual(lengthPrefixed(['x', 'yy', '', 'é']));
  });

  it('gives the same scores for binary input as for JSON', async () => {
    const rows = features(2);
    const { body, headers } = binaryBody(
      {
        inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 32], parameters: { binary_data_size: 256 } }],
        outputs: [{ name: 'score', parameters: { binary_data: true } }],
      },
      f32(rows.flat()),
    );
    const answer = await send('POST', '/v2/models/ctr_mlp/infer', { body, headers });
    expect(answer.status, answer.body.toString()).toBe(200);
    const scores = splitBinaryAnswer(answer).binary.get('score')!;
    const fromBinary = [...new Float32Array(scores.buffer.slice(scores.byteOffset, scores.byteOffset + scores.byteLength))];
    const fromJson = (await postJson('/v2/models/ctr_mlp/infer', { inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 32], data: rows }] }))
      .json.outputs[0].data;
    expect(fromBinary).toEqual(fromJson);
  });

  it('returns the caller\'s x-request-id, or a generated one', async () => {
    const body = { inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], data: features(1) }] };
    expect((await postJson('/v2/models/ctr_mlp/infer', body, { 'x-request-id': 'trace-me-42' })).headers['x-request-id']).toBe('trace-me-42');
    expect((await postJson('/v2/models/ctr_mlp/infer', body)).headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect((await postJson('/v2/models/nope/infer', body, { 'x-request-id': 'failed-1' })).headers['x-request-id']).toBe('failed-1');
  });
});

describe('statistics', () => {
  it('answers per-model and all-model statistics as Triton\'s JSON, with numbers', async () => {
    const scored = await postJson('/v2/models/ctr_mlp/infer', { inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 32], data: features(2) }] });
    expect(scored.status).toBe(200);
    const { status, json } = await getJson('/v2/models/ctr_mlp/stats');
    expect(status).toBe(200);
    expect(json.model_stats).toHaveLength(1);
    const stats = json.model_stats[0];
    expect(stats).toMatchObject({ name: 'ctr_mlp', version: '1' });
    expect(stats.inference_count).toBeGreaterThanOrEqual(2);
    expect(stats.inference_stats.success.count).toBeGreaterThanOrEqual(1);
    expect(typeof stats.inference_stats.success.ns).toBe('number');
    expect(typeof stats.last_inference).toBe('number');
    const all = await getJson('/v2/models/stats');
    expect(all.json.model_stats.map((s: any) => s.name).sort()).toEqual(['ctr_mlp', 'typed_identity']);
    expect((await getJson('/v2/models/nope/stats')).status).toBe(404);
  });
});

describe('errors', () => {
  const ctr = (input: Record<string, unknown>) => postJson('/v2/models/ctr_mlp/infer', { inputs: [input] });

  it('answers an unknown model with 404 naming it', async () => {
    const { status, json } = await postJson('/v2/models/no_such_model/infer', { inputs: [] });
    expect(status).toBe(404);
    expect(json.error).toMatch(/model 'no_such_model'/);
  });

  it('answers a wrong datatype, shape or element count with 400 naming the input', async () => {
    const wrongType = await ctr({ name: 'features', datatype: 'INT32', shape: [1, 32], data: Array(32).fill(1) });
    expect(wrongType.status).toBe(400);
    expect(wrongType.json.error).toMatch(/input 'features': expected datatype FP32, got INT32/);
    const wrongShape = await ctr({ name: 'features', datatype: 'FP32', shape: [1, 31], data: Array(31).fill(1) });
    expect(wrongShape.status).toBe(400);
    expect(wrongShape.json.error).toMatch(/input 'features': expected shape \[-1,32\], got \[1,31\]/);
    const wrongCount = await ctr({ name: 'features', datatype: 'FP32', shape: [1, 32], data: Array(30).fill(1) });
    expect(wrongCount.status).toBe(400);
    expect(wrongCount.json.error).toMatch(/input 'features': shape \[1,32\] holds 32 elements, but 'data' has 30/);
  });

  it('refuses FP16 as JSON in either direction, naming the tensor', async () => {
    const fp16In = await postJson('/v2/models/typed_identity/infer', {
      inputs: [{ name: 'in_fp16', datatype: 'FP16', shape: [1, 4], data: [1, 2, 3, 4] }],
    });
    expect(fp16In.status).toBe(400);
    expect(fp16In.json.error).toMatch(/input 'in_fp16': FP16 data cannot be sent as JSON/);
    const { body, headers } = binaryBody(
      {
        inputs: [
          { name: 'in_fp32', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] },
          { name: 'in_fp16', datatype: 'FP16', shape: [1, 4], parameters: { binary_data_size: 8 } },
          { name: 'in_int64', datatype: 'INT64', shape: [1, 4], data: [1, 2, 3, 4] },
          { name: 'in_bool', datatype: 'BOOL', shape: [1, 4], data: [true, true, true, true] },
          { name: 'in_bytes', datatype: 'BYTES', shape: [1, 4], data: ['a', 'b', 'c', 'd'] },
        ],
      },
      HALF_BITS,
    );
    const fp16Out = await send('POST', '/v2/models/typed_identity/infer', { body, headers });
    expect(fp16Out.status).toBe(400);
    expect(JSON.parse(fp16Out.body.toString()).error).toMatch(/output 'out_fp16': FP16 data cannot be returned as JSON/);
  });

  it('answers binary sizes that do not add up with 400', async () => {
    const { body, headers } = binaryBody(
      { inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], parameters: { binary_data_size: 128 } }] },
      f32(Array(16).fill(0)),
    );
    const answer = await send('POST', '/v2/models/ctr_mlp/infer', { body, headers });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body.toString()).error).toMatch(/input 'features': parameters\.binary_data_size is 128 bytes, but only 64 bytes/);
  });

  it('answers malformed JSON with 400 and keeps serving on the same connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const bad = await send('POST', '/v2/models/ctr_mlp/infer', { body: '{"inputs": [', agent });
      expect(bad.status).toBe(400);
      expect(JSON.parse(bad.body.toString()).error).toMatch(/^malformed JSON in the request body: /);
      const after = await send('GET', '/v2', { agent });
      expect(after.status).toBe(200);
      expect(after.reusedSocket).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('answers an unknown route with 404 and a wrong method with 405, naming them', async () => {
    const unknown = await getJson('/v3/models');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatch(/no route for GET '\/v3\/models'/);
    const wrongMethod = await send('GET', '/v2/models/ctr_mlp/infer');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers['allow']).toBe('POST');
    expect(JSON.parse(wrongMethod.body.toString()).error).toMatch(/method GET is not allowed on '\/v2\/models\/ctr_mlp\/infer'; use POST/);
  });

  it('answers a body above --max-message-size with 413, declared or chunked, and keeps serving', async () => {
    const declared = await send('POST', '/v2/models/ctr_mlp/infer', { body: Buffer.alloc(LIMIT + 1, 0x20) });
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body.toString()).error).toBe(
      `request body too large: a body of ${LIMIT + 1} bytes exceeds the limit of ${LIMIT} bytes (--max-message-size)`,
    );
    const chunked = await send('POST', '/v2/models/ctr_mlp/infer', { chunks: [Buffer.alloc(40000, 0x20), Buffer.alloc(40000, 0x20)] });
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body.toString()).error).toMatch(/a chunked body of more than 65536 bytes exceeds the limit of 65536 bytes/);
    expect((await send('GET', '/v2')).status).toBe(200);
  });

  it('Expect: 100-continue: a declared body above --max-message-size gets its 413 before it is sent; one within gets 100 Continue', async () => {
    /** Headers only; the body goes only after a 100 Continue. Resolves with what came first. */
    const expectContinue = (bytes: number) =>
      new Promise<{ continued: boolean; status: number; body: string }>((resolve, reject) => {
        const request = http.request({
          host: '127.0.0.1',
          port: server.httpPort,
          method: 'POST',
          path: '/v2/models/ctr_mlp/infer',
          agent: false,
          headers: { 'content-type': 'application/json', 'content-length': bytes, expect: '100-continue' },
        });
        let continued = false;
        request.on('continue', () => {
          continued = true;
          request.end(Buffer.alloc(bytes, 0x20));
        });
        request.on('response', (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ continued, status: response.statusCode!, body: Buffer.concat(chunks).toString() }));
        });
        request.on('error', reject);
        request.flushHeaders();
      });
    const refused = await expectContinue(LIMIT * 16);
    expect([refused.continued, refused.status]).toEqual([false, 413]);
    expect(JSON.parse(refused.body).error).toBe(
      `request body too large: a body of ${LIMIT * 16} bytes exceeds the limit of ${LIMIT} bytes (--max-message-size)`,
    );
    // Within the limit: 100 Continue, then the (blank, so not JSON) body is read and answered 400.
    const within = await expectContinue(16);
    expect([within.continued, within.status]).toEqual([true, 400]);
  });
});

describe('keep-alive', () => {
  it('serves several requests, errors included, on one connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const body = JSON.stringify({ inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], data: features(1) }] });
      const first = await send('POST', '/v2/models/ctr_mlp/infer', { body, agent });
      const second = await send('GET', '/v2/models/nope', { agent });
      const third = await send('POST', '/v2/models/ctr_mlp/infer', { body, agent });
      expect([first.status, second.status, third.status]).toEqual([200, 404, 200]);
      expect([first.reusedSocket, second.reusedSocket, third.reusedSocket]).toEqual([false, true, true]);
      expect(first.headers['connection']).toBe('keep-alive');
    } finally {
      agent.destroy();
    }
  });
});

describe('repository', () => {
  it('answers the index as an array, for a POST with no body and no Content-Length (as tritonclient sends it)', async () => {
    const raw = await rawExchange('POST /v2/repository/index HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n');
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    const index = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    expect(index).toEqual(expect.arrayContaining([
      { name: 'ctr_mlp', version: '1', state: 'READY', reason: '' },
      { name: 'typed_identity', version: '1', state: 'READY', reason: '' },
    ]));
  });

  it('unloads and loads a model, with readiness and the index following', async () => {
    const unload = await postJson('/v2/repository/models/typed_identity/unload', {});
    expect(unload.status).toBe(200);
    const notReady = await getJson('/v2/models/typed_identity/ready');
    expect(notReady.status).toBe(400);
    expect(notReady.json.error).toMatch(/model 'typed_identity' is not ready/);
    const { json: index } = await postJson('/v2/repository/index', { ready: false });
    expect(index).toContainEqual(expect.objectContaining({ name: 'typed_identity', state: 'UNAVAILABLE', reason: 'unloaded' }));
    const { json: readyIndex } = await postJson('/v2/repository/index', { ready: true });
    expect(readyIndex.map((m: any) => m.name)).toEqual(['ctr_mlp']);

    const load = await send('POST', '/v2/repository/models/typed_identity/load');
    expect(load.status).toBe(200);
    expect((await send('GET', '/v2/models/typed_identity/ready')).status).toBe(200);
  });

  it('answers a load of an unknown model with 404, and refuses file: and unknown load parameters with 400', async () => {
    const unknown = await postJson('/v2/repository/models/never_was/load', {});
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatch(/model 'never_was' is not found/);
    // The config override itself is config-override.test.ts's.
    const withFile = await postJson('/v2/repository/models/ctr_mlp/load', { parameters: { 'file:1/model.onnx': 'eA==' } });
    expect(withFile.status).toBe(400);
    expect(withFile.json.error).toMatch(/'file:1\/model\.onnx': file overrides are not supported/);
    const other = await postJson('/v2/repository/models/ctr_mlp/load', { parameters: { colour: 'red' } });
    expect(other.status).toBe(400);
    expect(other.json.error).toMatch(/'colour' not supported; expected none or 'config'/);
  });
});
