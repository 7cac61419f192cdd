/**
 * Structured logs: every line is pino JSON with the schema's common fields;
 * request lines carry the request id (the caller's x-request-id, or generated),
 * the W3C trace id, model, version, tenant, latency and status. Sampling drops
 * successful requests at rate 0 but never an error, and the request id comes
 * back in the trailing metadata of unary calls and streams.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { tempRepository } from './helpers/repositories.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { f32Bytes, TritonClient, type Message } from './helpers/triton-client.js';

let unsampled: RunningServer;
let sampled: RunningServer;
let repo: { dir: string; remove: () => Promise<void> };

beforeAll(async () => {
  repo = await tempRepository((dir) => writeIdentityModel(dir, { name: 'echo', dtype: 'FP32', maxBatchSize: 4, withConfig: true }));
  [unsampled, sampled] = await Promise.all([
    startServer(repo.dir, ['--access-log-sample-rate', '0']),
    startServer(repo.dir, ['--access-log-sample-rate', '1']),
  ]);
});

afterAll(async () => {
  await Promise.all([unsampled?.stop(), sampled?.stop()]);
  await repo?.remove();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const good = (): Message => ({
  model_name: 'echo',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2] }],
  raw_input_contents: [f32Bytes([1, 2])],
});
const metadata = (requestId?: string): grpc.Metadata => {
  const m = new grpc.Metadata();
  if (requestId !== undefined) m.set('x-request-id', requestId);
  m.set('traceparent', `00-${TRACE_ID}-00f067aa0ba902b7-01`);
  return m;
};

/** Calls ModelInfer and resolves with the outcome and the trailing metadata. */
function infer(client: TritonClient, request: Message, md: grpc.Metadata): Promise<{ code: number; trailers: grpc.Metadata }> {
  return new Promise((resolve) => {
    let code = -1;
    const call = (client.raw['ModelInfer'] as Function).call(client.raw, request, md, (err: grpc.ServiceError | null) => {
      code = err ? err.code : grpc.status.OK;
    }) as grpc.ClientUnaryCall;
    call.on('status', (status: grpc.StatusObject) => setImmediate(() => resolve({ code: code === -1 ? status.code : code, trailers: status.metadata })));
  });
}

const waitForLines = async (server: RunningServer, match: (l: Record<string, unknown>) => boolean, count: number) => {
  for (let i = 0; i < 100 && server.logs.filter(match).length < count; i++) await new Promise((r) => setTimeout(r, 20));
  return server.logs.filter(match);
};

describe('structured logs', () => {
  it('keep every error at sample rate 0, with the request fields, and drop successes', async () => {
    const client = new TritonClient(unsampled.grpcAddress);
    try {
      for (let i = 0; i < 20; i++) expect((await infer(client, good(), metadata(`ok-${i}`))).code).toBe(grpc.status.OK);
      const bad = { ...good(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2] }] };
      for (let i = 0; i < 3; i++) expect((await infer(client, bad, metadata(`bad-${i}`))).code).toBe(grpc.status.INVALID_ARGUMENT);
      for (let i = 0; i < 2; i++) expect((await infer(client, { ...good(), model_name: 'nope' }, metadata(`lost-${i}`))).code).toBe(grpc.status.NOT_FOUND);
    } finally {
      client.close();
    }
    const access = await waitForLines(unsampled, (l) => l['component'] === 'access', 5);
    expect(access).toHaveLength(5);
    expect(access.filter((l) => l['status'] === 'OK')).toEqual([]);
    for (const [i, line] of access.slice(0, 3).entries()) {
      expect(line).toMatchObject({
        level: 'warn', service: 'hotpath', component: 'access', msg: 'request failed', method: 'ModelInfer',
        request_id: `bad-${i}`, trace_id: TRACE_ID, model: 'echo', model_version: '1', tenant: 'default', status: 'INVALID_ARGUMENT',
      });
      expect(line['error']).toMatch(/input 'INPUT0': expected datatype FP32, got INT32/);
      expect(line['latency_ms']).toEqual(expect.any(Number));
    }
    expect(access.slice(3).map((l) => [l['request_id'], l['status'], l['model']])).toEqual([
      ['lost-0', 'NOT_FOUND', 'nope'],
      ['lost-1', 'NOT_FOUND', 'nope'],
    ]);
  });

  it('access-log every success at sample rate 1', async () => {
    const client = new TritonClient(sampled.grpcAddress);
    try {
      for (let i = 0; i < 10; i++) await infer(client, good(), metadata(`s-${i}`));
    } finally {
      client.close();
    }
    const lines = await waitForLines(sampled, (l) => l['component'] === 'access' && String(l['request_id']).startsWith('s-'), 10);
    expect(lines).toHaveLength(10);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'request', status: 'OK', model: 'echo', model_version: '1', tenant: 'default', trace_id: TRACE_ID });
  });

  it('return the request id in the trailing metadata, given or generated, unary and stream', async () => {
    const client = new TritonClient(sampled.grpcAddress);
    try {
      expect((await infer(client, good(), metadata('given-id'))).trailers.get('x-request-id')).toEqual(['given-id']);
      const failed = await infer(client, { ...good(), model_name: 'nope' }, metadata('failed-id'));
      expect(failed.code).toBe(grpc.status.NOT_FOUND);
      expect(failed.trailers.get('x-request-id')).toEqual(['failed-id']);
      const generated = (await infer(client, good(), new grpc.Metadata())).trailers.get('x-request-id');
      expect(generated[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(await waitForLines(sampled, (l) => l['request_id'] === generated[0] && l['component'] === 'access', 1)).toHaveLength(1);

      const stream = (client.raw['ModelStreamInfer'] as Function).call(client.raw, metadata('stream-id')) as grpc.ClientDuplexStream<Message, Message>;
      const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
      const responses: Message[] = [];
      stream.on('data', (response: Message) => responses.push(response));
      stream.write({ ...good(), id: 'a' });
      stream.write({ ...good(), id: 'b' });
      stream.end();
      const ended = await status;
      expect(ended.code).toBe(grpc.status.OK);
      expect(ended.metadata.get('x-request-id')).toEqual(['stream-id']);
      expect(responses.map((r) => r['infer_response'].id).sort()).toEqual(['a', 'b']);
      const streamLines = await waitForLines(sampled, (l) => l['request_id'] === 'stream-id', 2);
      expect(streamLines.map((l) => l['method'])).toEqual(['ModelStreamInfer', 'ModelStreamInfer']);
    } finally {
      client.close();
    }
  });

  it('give every line the common fields, from child loggers of one root', () => {
    for (const line of [...unsampled.logs, ...sampled.logs]) {
      expect(line).toMatchObject({ level: expect.any(String), service: 'hotpath', component: expect.any(String) });
      expect(line['time']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const components = new Set(sampled.logs.map((l) => l['component']));
    expect([...components]).toEqual(expect.arrayContaining(['cli', 'server', 'repository', 'access']));
  });
});
