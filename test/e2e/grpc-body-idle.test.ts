/**
 * Issue 21 item 4, the gRPC door's body-idle timeout (server/grpc-body-idle.ts):
 * a call whose request stops arriving part way is ended DEADLINE_EXCEEDED,
 * then its stream reset NO_ERROR, within --body-idle-timeout (1 s here) plus
 * slack, and the connection's other calls are served as before. A stream
 * that waits between two whole requests is not ended. A call refused at
 * admission whose client keeps its half of the stream open is reset after
 * the same time.
 *
 * A real server process and a raw HTTP/2 client (node:http2, gRPC framing by
 * hand), so the test can stop a message at any byte, which no gRPC library
 * would do.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { keyHash } from '../../src/security/api-keys.js';
import { inferRequestBytes, MODEL_INFER } from './helpers/raw-grpc.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

const TIMEOUT_MS = 1000;
/** Scheduling on a shared 2-core machine; the timer itself is exact to a few ms. */
const SLACK_MS = 2500;
const MODEL_STREAM_INFER = '/inference.GRPCInferenceService/ModelStreamInfer';

let served: ServedRepository;
let session: http2.ClientHttp2Session;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository((dir) => writeIdentityModel(dir, { name: 'identity', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] })),
    ['--body-idle-timeout', String(TIMEOUT_MS)],
  );
  session = http2.connect(`http://${served.server.grpcAddress}`);
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
});

afterAll(async () => {
  session?.close();
  await served?.close();
});

/** A gRPC message: flag 0, the 4-byte big-endian length, the bytes. */
function framed(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** A valid ModelInfer request for the identity model with `n` floats. */
function inferMessage(n: number): Buffer {
  const raw = Buffer.alloc(n * 4);
  for (let i = 0; i < n; i += 1) raw.writeFloatLE(i, i * 4);
  return inferRequestBytes('identity', { name: 'INPUT0', datatype: 'FP32', shape: [n], raw });
}

interface CallRecord {
  readonly stream: http2.ClientHttp2Stream;
  /** grpc-status and grpc-message, from the trailers or a trailers-only answer. */
  readonly status: Promise<{ code: string | undefined; message: string }>;
  /** Whole response messages received so far. */
  readonly messages: Buffer[];
  /** Resolves with the stream's RST_STREAM code (0 = NO_ERROR) and ms from `started` when it closes. */
  readonly closed: Promise<{ rstCode: number; ms: number }>;
}

/** Opens a call of `path` on the shared session; the caller writes its request bytes. */
function open(path: string, started = performance.now()): CallRecord {
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
  const messages: Buffer[] = [];
  let pending = Buffer.alloc(0);
  stream.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      messages.push(pending.subarray(5, 5 + pending.readUInt32BE(1)));
      pending = pending.subarray(5 + pending.readUInt32BE(1));
    }
  });
  const fromHeaders = (headers: http2.IncomingHttpHeaders) => ({
    code: headers['grpc-status'] as string | undefined,
    message: decodeURIComponent(String(headers['grpc-message'] ?? '')),
  });
  const status = new Promise<{ code: string | undefined; message: string }>((resolve) => {
    stream.once('response', (headers) => {
      if (headers['grpc-status'] !== undefined) resolve(fromHeaders(headers));
    });
    stream.once('trailers', (trailers) => resolve(fromHeaders(trailers)));
  });
  const closed = new Promise<{ rstCode: number; ms: number }>((resolve) => {
    stream.once('close', () => resolve({ rstCode: stream.rstCode ?? -1, ms: performance.now() - started }));
  });
  stream.on('error', () => {}); // a reset surfaces as 'close' with its code; asserted there
  return { stream, status, messages, closed };
}

/** A whole ModelInfer call on the shared session; resolves with its grpc-status. */
async function normalInfer(): Promise<string | undefined> {
  const call = open(MODEL_INFER);
  call.stream.end(framed(inferMessage(4)));
  const { code } = await call.status;
  await call.closed;
  expect(call.messages).toHaveLength(1);
  return code;
}

describe('gRPC body-idle timeout', () => {
  it('a unary message that stops half way is ended DEADLINE_EXCEEDED and reset within the timeout; the connection serves on', async () => {
    expect(await normalInfer()).toBe('0');
    const message = framed(inferMessage(64 * 1024));
    const half = Math.floor(message.length / 2);
    const started = performance.now();
    const call = open(MODEL_INFER, started);
    call.stream.write(message.subarray(0, half));
    const [{ code, message: details }, { rstCode, ms }] = await Promise.all([call.status, call.closed]);
    console.log(`half a ${message.length}-byte message: ended after ${ms.toFixed(0)} ms (timeout ${TIMEOUT_MS} ms), grpc-status ${code}, RST_STREAM ${rstCode}`);
    expect(code).toBe('4'); // DEADLINE_EXCEEDED
    expect(details).toBe(
      `the request stopped arriving: no byte for ${TIMEOUT_MS} ms (--body-idle-timeout) after ${half} bytes of a message of ${message.length} bytes (length prefix included)`,
    );
    expect(rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    // The same connection: not closed, and a normal call succeeds.
    expect(session.closed || session.destroyed).toBe(false);
    expect(await normalInfer()).toBe('0');
    const line = served.server.logs.find((l) => l['msg'] === 'call ended: its request stopped arriving (--body-idle-timeout)');
    expect(line).toMatchObject({ component: 'connections', rpc: MODEL_INFER, received_bytes: half, declared_bytes: message.length - 5 });
  });

  it('bytes that keep coming, slowly, are not idle: a message sent in pieces 0.6 s apart over 3 s is served', async () => {
    const message = framed(inferMessage(1024));
    const call = open(MODEL_INFER);
    const pieces = 5;
    const size = Math.ceil(message.length / pieces);
    for (let i = 0; i < pieces; i += 1) {
      call.stream.write(message.subarray(i * size, (i + 1) * size));
      await new Promise((resolve) => setTimeout(resolve, 0.6 * TIMEOUT_MS));
    }
    call.stream.end();
    expect((await call.status).code).toBe('0');
    expect(call.messages).toHaveLength(1);
  });

  it('a unary call that sends headers and no message is ended the same way', async () => {
    const call = open(MODEL_INFER);
    const [{ code, message }, { rstCode, ms }] = await Promise.all([call.status, call.closed]);
    expect(code).toBe('4');
    expect(message).toBe(`the request stopped arriving: no byte for ${TIMEOUT_MS} ms (--body-idle-timeout); expected a request message, got none`);
    expect(rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('a stream may wait between whole requests, but not inside one', async () => {
    const call = open(MODEL_STREAM_INFER);
    call.stream.write(framed(inferMessage(4)));
    // Twice the timeout between two whole requests: still served.
    await new Promise((resolve) => setTimeout(resolve, 2 * TIMEOUT_MS));
    call.stream.write(framed(inferMessage(4)));
    await expect.poll(() => call.messages.length, { timeout: 5000 }).toBe(2);
    // Then half a request, and nothing.
    const message = framed(inferMessage(256));
    const started = performance.now();
    call.stream.write(message.subarray(0, 100));
    const [{ code, message: details }, { rstCode }] = await Promise.all([call.status, call.closed]);
    const ms = performance.now() - started;
    expect(code).toBe('4');
    expect(details).toBe(
      `the request stopped arriving: no byte for ${TIMEOUT_MS} ms (--body-idle-timeout) after 100 bytes of a message of ${message.length} bytes (length prefix included)`,
    );
    expect(rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(await normalInfer()).toBe('0');
  });
});

describe('gRPC body-idle timeout after the call was answered', () => {
  let keyed: ServedRepository;
  let keyedSession: http2.ClientHttp2Session;

  beforeAll(async () => {
    // One tenant with a key, so that --require-api-key has keys to require; the test's call has none.
    const secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-body-idle-'));
    const tenantsFile = path.join(secrets, 'tenants.json');
    await writeFile(tenantsFile, JSON.stringify({ tenants: { ads: { quota: '256MiB', keys: [keyHash('ads-key-0123456789abcdef')] } } }));
    keyed = await serveRepository(
      tempRepository((dir) => writeIdentityModel(dir, { name: 'identity', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] })),
      ['--body-idle-timeout', String(TIMEOUT_MS), '--tenants-file', tenantsFile, '--require-api-key'],
    );
    keyedSession = http2.connect(`http://${keyed.server.grpcAddress}`);
    await new Promise<void>((resolve, reject) => {
      keyedSession.once('connect', () => resolve());
      keyedSession.once('error', reject);
    });
  });

  afterAll(async () => {
    keyedSession?.close();
    await keyed?.close();
  });

  it('a keyless call is refused at once; a client that then keeps its half open is reset after the timeout', async () => {
    const started = performance.now();
    const stream = keyedSession.request({ ':method': 'POST', ':path': MODEL_INFER, 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => {});
    const refused = new Promise<{ status: string | undefined; ms: number }>((resolve) =>
      stream.once('response', (headers) => resolve({ status: headers['grpc-status'] as string | undefined, ms: performance.now() - started })),
    );
    const closed = new Promise<{ rstCode: number | undefined; ms: number }>((resolve) =>
      stream.once('close', () => resolve({ rstCode: stream.rstCode, ms: performance.now() - started })),
    );
    stream.write(framed(inferMessage(1024)).subarray(0, 100));
    stream.resume();
    const answer = await refused;
    expect(answer.status).toBe('16'); // UNAUTHENTICATED
    expect(answer.ms).toBeLessThan(TIMEOUT_MS);
    const end = await closed;
    expect(end.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(end.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(end.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
    expect(keyedSession.closed || keyedSession.destroyed).toBe(false);
  });
});
