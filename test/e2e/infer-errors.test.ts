/**
 * Every ModelInfer rejection carries the right status and a message naming the
 * field with expected vs actual; bad requests never disturb good ones.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { tempRepository } from './helpers/repositories.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(tempRepository((dir) => writeSampleRepository(dir, { only: ['ctr_mlp', 'typed_identity'] })));
});

afterAll(() => served?.close());

const row = new Float32Array(32).fill(0.25);
const good = (): Message => ({
  model_name: 'ctr_mlp',
  inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32] }],
  raw_input_contents: [f32Bytes(row)],
});

const typedIdentity = (overrides: Partial<Record<string, Message>> = {}, raw?: Buffer[]): Message => {
  const inputs: Message[] = [
    { name: 'in_fp32', datatype: 'FP32', shape: [1, 4] },
    { name: 'in_fp16', datatype: 'FP16', shape: [1, 4] },
    { name: 'in_int64', datatype: 'INT64', shape: [1, 4] },
    { name: 'in_bool', datatype: 'BOOL', shape: [1, 4] },
    { name: 'in_bytes', datatype: 'BYTES', shape: [1, 4] },
  ].map((input) => ({ ...input, ...(overrides[input['name'] as string] ?? {}) }));
  const bytes = (...s: string[]) =>
    Buffer.concat(s.flatMap((v) => [Buffer.from(Uint32Array.from([Buffer.byteLength(v)]).buffer), Buffer.from(v)]));
  return {
    model_name: 'typed_identity',
    inputs,
    raw_input_contents: raw ?? [
      Buffer.alloc(16), Buffer.alloc(8), Buffer.alloc(32), Buffer.alloc(4), bytes('a', 'b', 'c', 'd'),
    ],
  };
};

async function expectError(request: Message, code: grpc.status, message: RegExp): Promise<void> {
  const err = await served.client.callError('ModelInfer', request);
  expect(grpc.status[err.code]).toBe(grpc.status[code]);
  expect(err.details).toMatch(message);
}

describe('ModelInfer errors', () => {
  it('unknown model or version → NOT_FOUND', async () => {
    await expectError({ ...good(), model_name: 'ctr' }, grpc.status.NOT_FOUND, /model 'ctr' is not found; available models: ctr_mlp, typed_identity/);
    await expectError({ ...good(), model_version: '3' }, grpc.status.NOT_FOUND, /model 'ctr_mlp' version 3 is not found; loaded versions: 1/);
  });

  it('missing, unknown and duplicate inputs → INVALID_ARGUMENT', async () => {
    await expectError({ ...good(), inputs: [], raw_input_contents: [] }, grpc.status.INVALID_ARGUMENT, /missing input 'features' for model 'ctr_mlp'; expected inputs: 'features' \(FP32 \[32\]\)/);
    const unknown = good();
    unknown['inputs'][0].name = 'feature';
    await expectError(unknown, grpc.status.INVALID_ARGUMENT, /unknown input 'feature' for model 'ctr_mlp'/);
    const duplicate = good();
    duplicate['inputs'].push(duplicate['inputs'][0]);
    duplicate['raw_input_contents'].push(f32Bytes(row));
    await expectError(duplicate, grpc.status.INVALID_ARGUMENT, /input 'features' is given more than once/);
  });

  it('wrong datatype, rank or shape → INVALID_ARGUMENT', async () => {
    const dtype = good();
    dtype['inputs'][0].datatype = 'FP64';
    await expectError(dtype, grpc.status.INVALID_ARGUMENT, /input 'features': expected datatype FP32, got FP64/);
    const rank = good();
    rank['inputs'][0].shape = [32];
    await expectError(rank, grpc.status.INVALID_ARGUMENT, /input 'features': expected rank 2 with shape \[-1,32\], got rank 1 with shape \[32\]/);
    const shape = good();
    shape['inputs'][0].shape = [2, 16];
    await expectError(shape, grpc.status.INVALID_ARGUMENT, /input 'features': expected shape \[-1,32\], got \[2,16\]/);
  });

  it('byte size that disagrees with shape × datatype → INVALID_ARGUMENT', async () => {
    const short = good();
    short['raw_input_contents'] = [f32Bytes(new Float32Array(31))];
    await expectError(short, grpc.status.INVALID_ARGUMENT, /input 'features': expected 128 bytes \(32 elements of FP32 for shape \[1,32\]\), got 124 bytes/);
  });

  it('batch larger than max_batch_size → INVALID_ARGUMENT', async () => {
    const big = good();
    big['inputs'][0].shape = [65, 32];
    big['raw_input_contents'] = [f32Bytes(new Float32Array(65 * 32))];
    await expectError(big, grpc.status.INVALID_ARGUMENT, /input 'features': batch size 65 is outside 1..64 \(max_batch_size of model 'ctr_mlp'\)/);
  });

  it('malformed BYTES → INVALID_ARGUMENT', async () => {
    const truncated = typedIdentity({}, [
      Buffer.alloc(16), Buffer.alloc(8), Buffer.alloc(32), Buffer.alloc(4), Buffer.from([9, 0, 0, 0, 65]),
    ]);
    await expectError(truncated, grpc.status.INVALID_ARGUMENT, /input 'in_bytes': malformed BYTES: element 0: length prefix says 9 bytes, only 1 left/);
    const tooFew = typedIdentity({}, [
      Buffer.alloc(16), Buffer.alloc(8), Buffer.alloc(32), Buffer.alloc(4), Buffer.from([1, 0, 0, 0, 65]),
    ]);
    await expectError(tooFew, grpc.status.INVALID_ARGUMENT, /input 'in_bytes': malformed BYTES: expected 4 elements, got 1/);
  });

  it('both raw and typed contents → INVALID_ARGUMENT', async () => {
    const both = good();
    both['inputs'][0].contents = { fp32_contents: Array.from(row) };
    await expectError(both, grpc.status.INVALID_ARGUMENT, /input 'features': both raw_input_contents and typed contents are given; send only one/);
  });

  it('unknown requested output → INVALID_ARGUMENT', async () => {
    await expectError({ ...good(), outputs: [{ name: 'prob' }] }, grpc.status.INVALID_ARGUMENT, /unknown output 'prob' requested from model 'ctr_mlp'; expected one of: 'score'/);
  });

  it('the fault-injection hook is refused without --enable-fault-injection', async () => {
    await expectError(
      { ...good(), parameters: { hotpath_fault: { string_param: 'crash-worker' } } },
      grpc.status.INVALID_ARGUMENT,
      /parameter 'hotpath_fault' is refused: fault injection is disabled \(start the server with --enable-fault-injection\)/,
    );
  });

  it('keeps serving correct results while malformed requests arrive concurrently', async () => {
    const malformed: Message[] = [
      { ...good(), model_name: 'missing' },
      { ...good(), raw_input_contents: [Buffer.from([1, 2, 3])] },
      { ...good(), inputs: [{ name: 'features', datatype: 'INT8', shape: [1, 32] }] },
      { ...good(), inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 32] }] },
      { model_name: 'ctr_mlp' },
      typedIdentity({ in_bool: { shape: [1, 5] } }),
    ];
    const goodOnes = Array.from({ length: 30 }, () => served.client.call('ModelInfer', good()));
    const badOnes = Array.from({ length: 60 }, (_, i) => served.client.callError('ModelInfer', malformed[i % malformed.length]!));
    const [results, errors] = await Promise.all([Promise.all(goodOnes), Promise.all(badOnes)]);
    const first = readF32(results[0]!['raw_output_contents'][0])[0];
    for (const result of results) expect(readF32(result['raw_output_contents'][0])[0]).toBe(first);
    for (const err of errors) expect([grpc.status.INVALID_ARGUMENT, grpc.status.NOT_FOUND]).toContain(err.code);
    expect(await served.client.call('ServerReady')).toEqual({ ready: true });
  });
});
