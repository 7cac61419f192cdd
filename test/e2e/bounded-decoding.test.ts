/**
 * Issue 21 item 2: a ModelInfer message whose repeated fields cannot fit its
 * declared inputs is refused INVALID_ARGUMENT before it is decoded
 * (server/infer-request-prescan.ts), with the field, the limit and the count
 * named. 32 MB of empty `bytes_contents` entries from a keyed client is
 * refused about as fast as a plain message of its size travels, with a bounded RSS rise; so is the same
 * flood under a shape that declares it, and on a stream the request is
 * answered with the error while the stream stays open.
 */
import { appendFile, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { keyHash } from '../../src/security/api-keys.js';
import { PRESCAN_LIMITS } from '../../src/server/infer-request-prescan.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { MiB, RssSampler } from './helpers/process-memory.js';
import { inferRequestBytes, MODEL_INFER, rawUnary, wire } from './helpers/raw-grpc.js';

const KEY = 'decode-key-0123456789abcdef';
let served: ServedRepository;
let client: grpc.Client;
const keyed = () => {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${KEY}`);
  return metadata;
};

/**
 * How long a plain message of `bytes` takes to reach the server and be
 * answered (raw_input_contents for an unknown model: NOT_FOUND once decoded).
 * Under load the transfer itself (HTTP/2 flow control, 64 KiB windows) takes
 * most of a second for 32 MB, so a refusal is timed against this baseline
 * measured in the same run.
 */
async function transferBaselineMs(bytes: number): Promise<number> {
  const floats = bytes / 4;
  const plain = inferRequestBytes('absent', { name: 'INPUT0', datatype: 'FP32', shape: [floats], raw: Buffer.alloc(bytes, 1) });
  const outcome = await rawUnary(client, MODEL_INFER, plain, keyed());
  expect(grpc.status[outcome.code]).toBe('NOT_FOUND');
  return outcome.ms;
}

/**
 * The most a refusal may take against a plain message's transfer measured just
 * before it. Decoding 16 Mi entries would also show in the RSS bound (each entry
 * is an object); the time bound is generous because vitest runs several files
 * at once on 2 cores and one transfer is a noisy baseline. The figures for the
 * closing note are the logged ones.
 */
const REFUSAL_BOUND = (baselineMs: number) => 3 * Math.max(500, baselineMs);

/** InferTensorContents of `count` empty bytes_contents entries (2 bytes each on the wire). */
const emptyEntries = (count: number) => Buffer.alloc(count * 2, Buffer.from([0x42, 0x00]));

beforeAll(async () => {
  const secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-decoding-'));
  const tenantsFile = path.join(secrets, 'tenants.json');
  await writeFile(tenantsFile, JSON.stringify({ tenants: { ads: { quota: '256MiB', keys: [keyHash(KEY)] } } }));
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeIdentityModel(dir, { name: 'text', dtype: 'BYTES', maxBatchSize: 0, withConfig: true, dims: [-1] });
      await appendFile(path.join(dir, 'text', 'config.pbtxt'), '\nparameters { key: "tenant" value: { string_value: "ads" } }\n');
    }),
    ['--tenants-file', tenantsFile, '--require-api-key'],
  );
  client = new grpc.Client(served.server.grpcAddress, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  await served?.close();
});

describe('bounded decoding of ModelInfer', () => {
  it('32 MB of empty bytes_contents under shape [1]: refused within 3x a plain 32 MiB transfer, RSS rise < 100 MB', async () => {
    const entries = 16 * 1024 * 1024;
    const baseline = await transferBaselineMs(32 * MiB);
    const message = inferRequestBytes('text', { name: 'INPUT0', datatype: 'BYTES', shape: [1], contents: emptyEntries(entries) });
    const rss = new RssSampler(served.server.process.pid!);
    const outcome = await rawUnary(client, MODEL_INFER, message, keyed());
    const rise = rss.stop();
    expect(grpc.status[outcome.code]).toBe('INVALID_ARGUMENT');
    expect(outcome.details).toBe("input 'INPUT0': bytes_contents: expected at most 1 elements (shape [1]), got more");
    console.log(
      `32 MB empty entries, shape [1]: refused in ${outcome.ms.toFixed(0)} ms (a plain 32 MiB message: ${baseline.toFixed(0)} ms), RSS rise ${(rise / MiB).toFixed(1)} MiB`,
    );
    expect(outcome.ms).toBeLessThan(REFUSAL_BOUND(baseline));
    expect(rise).toBeLessThan(100 * MiB);
  }, 30_000);

  it('the same flood under a shape that declares it: refused by the typed-elements bound', async () => {
    const entries = 16 * 1024 * 1024;
    const message = inferRequestBytes('text', { name: 'INPUT0', datatype: 'BYTES', shape: [entries], contents: emptyEntries(entries) });
    const baseline = await transferBaselineMs(32 * MiB);
    const rss = new RssSampler(served.server.process.pid!);
    const outcome = await rawUnary(client, MODEL_INFER, message, keyed());
    const rise = rss.stop();
    expect(grpc.status[outcome.code]).toBe('INVALID_ARGUMENT');
    expect(outcome.details).toBe(
      `input 'INPUT0': bytes_contents: typed contents of all inputs together hold more than ${PRESCAN_LIMITS.typedElements} elements; send large tensors in raw_input_contents`,
    );
    console.log(
      `32 MB empty entries, shape [${entries}]: refused in ${outcome.ms.toFixed(0)} ms (a plain 32 MiB message: ${baseline.toFixed(0)} ms), RSS rise ${(rise / MiB).toFixed(1)} MiB`,
    );
    expect(outcome.ms).toBeLessThan(REFUSAL_BOUND(baseline));
    expect(rise).toBeLessThan(100 * MiB);
  }, 30_000);

  it('names the field for each bound: raw entries, inputs, shape dimensions, packed numbers', async () => {
    const input = (name: string, shape: number[]) => wire.field(5, Buffer.concat([wire.field(1, name), wire.field(2, 'BYTES'), wire.packed(3, shape)]));
    const cases: Array<[Buffer, RegExp]> = [
      [
        Buffer.concat([wire.field(1, 'text'), input('INPUT0', [1]), wire.field(7, 'a'), wire.field(7, 'b')]),
        /^raw_input_contents: expected at most one entry per input \(1\), got 2$/,
      ],
      [
        Buffer.concat([wire.field(1, 'text'), input('INPUT0', [1]), ...Array.from({ length: 5000 }, () => wire.field(7, ''))]),
        /^raw_input_contents: expected at most 4096 entries \(one per input\), got more$/,
      ],
      [
        Buffer.concat([wire.field(1, 'text'), ...Array.from({ length: PRESCAN_LIMITS.inputs + 1 }, (_, i) => input(`I${i}`, [1]))]),
        /^inputs: expected at most 4096 inputs, got more$/,
      ],
      [
        Buffer.concat([wire.field(1, 'text'), input('INPUT0', Array.from({ length: 65 }, () => 1))]),
        /^input 'INPUT0': shape: expected at most 64 dimensions, got more$/,
      ],
      [
        // 1000 packed int64 elements (1 byte each) under shape [2, 3].
        inferRequestBytes('text', { name: 'X', datatype: 'INT64', shape: [2, 3], contents: wire.field(3, Buffer.alloc(1000, 1)) }),
        /^input 'X': int64_contents: expected at most 6 elements \(shape \[2,3\]\), got more$/,
      ],
    ];
    for (const [message, expected] of cases) {
      const outcome = await rawUnary(client, MODEL_INFER, message, keyed());
      expect(grpc.status[outcome.code]).toBe('INVALID_ARGUMENT');
      expect(outcome.details).toMatch(expected);
    }
  });

  it('a message within its shape is decoded and served as before', async () => {
    const contents = Buffer.concat([wire.field(8, 'hello'), wire.field(8, 'world')]);
    const outcome = await rawUnary(client, MODEL_INFER, inferRequestBytes('text', { name: 'INPUT0', datatype: 'BYTES', shape: [2], contents }), keyed());
    expect([grpc.status[outcome.code], outcome.details]).toEqual(['OK', '']);
  });

  it('on ModelStreamInfer the refused request is answered with its error and the stream stays open', async () => {
    const stream = client.makeBidiStreamRequest(
      '/inference.GRPCInferenceService/ModelStreamInfer',
      (message: Buffer) => message,
      (reply: Buffer) => reply,
      keyed(),
    );
    const replies: Buffer[] = [];
    const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    stream.on('data', (reply: Buffer) => {
      replies.push(reply);
      if (replies.length === 2) stream.end();
    });
    stream.on('error', () => undefined);
    stream.write(inferRequestBytes('text', { name: 'INPUT0', datatype: 'BYTES', shape: [1], contents: emptyEntries(1000) }));
    stream.write(inferRequestBytes('text', { name: 'INPUT0', datatype: 'BYTES', shape: [1], contents: wire.field(8, 'ok') }));
    expect(grpc.status[(await status).code]).toBe('OK');
    const texts = replies.map((reply) => reply.toString('latin1'));
    expect(texts.some((t) => t.includes("input 'INPUT0': bytes_contents: expected at most 1 elements (shape [1]), got more"))).toBe(true);
    expect(texts.some((t) => t.includes('OUTPUT0'))).toBe(true);
  });
});

