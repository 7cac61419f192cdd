/**
 * A round trip for every datatype onnxruntime supports, through per-datatype
 * Identity models, in both raw_input_contents and typed contents, plus the
 * five-tensor typed_identity sample model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRITON_DATATYPES, type TritonDatatype } from '../../models/lib/datatypes.js';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { encodeBytesTensor } from '../../src/tensor/bytes-codec.js';
import { tempRepository } from './helpers/repositories.js';
import { type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

const modelName = (dt: TritonDatatype) => `identity_${dt.toLowerCase()}`;

beforeAll(async () => {
  served = await serveRepository(tempRepository(async (dir) => {
    for (const dtype of TRITON_DATATYPES) {
      await writeIdentityModel(dir, { name: modelName(dtype), dtype, maxBatchSize: 4, withConfig: true, dims: [3] });
    }
    await writeSampleRepository(dir, { only: ['typed_identity'] });
  }), ['--model-load-concurrency', '4']);
});

afterAll(() => served?.close());

/** Six elements ([2,3]) of each datatype, as raw little-endian bytes, with edge values. */
function rawSample(dtype: TritonDatatype): Buffer {
  const view = (array: ArrayBufferView) => Buffer.from(array.buffer, array.byteOffset, array.byteLength);
  switch (dtype) {
    case 'BOOL': return Buffer.from([1, 0, 0, 1, 1, 0]);
    case 'UINT8': return view(Uint8Array.from([0, 1, 127, 128, 254, 255]));
    case 'INT8': return view(Int8Array.from([-128, -1, 0, 1, 100, 127]));
    case 'UINT16': return view(Uint16Array.from([0, 1, 300, 32768, 65534, 65535]));
    case 'INT16': return view(Int16Array.from([-32768, -1, 0, 1, 1000, 32767]));
    case 'INT32': return view(Int32Array.from([-2147483648, -1, 0, 1, 123456, 2147483647]));
    case 'INT64': return view(BigInt64Array.from([-(2n ** 63n), -1n, 0n, 1n, 2n ** 40n, 2n ** 63n - 1n]));
    case 'UINT32': return view(Uint32Array.from([0, 1, 2 ** 31, 2 ** 32 - 1, 7, 9]));
    case 'UINT64': return view(BigUint64Array.from([0n, 1n, 2n ** 63n, 2n ** 64n - 1n, 5n, 6n]));
    case 'FP16': return view(Uint16Array.from([0x0000, 0x3c00, 0xbc00, 0x7bff, 0x7c00, 0x0001]));
    case 'FP32': return view(Float32Array.from([-0, 1.5, -2.25, 3.4e38, Infinity, 1e-45]));
    case 'FP64': return view(Float64Array.from([-0, Math.PI, -1e308, Infinity, -Infinity, 5e-324]));
    case 'BYTES': return Buffer.from(encodeBytesTensor(['', 'a', 'héllo', 'x'.repeat(40), '✓ ok', '42']));
  }
}

/** The same six elements in the datatype's typed contents field, where it has one. */
function typedSample(dtype: TritonDatatype): Message | undefined {
  switch (dtype) {
    case 'BOOL': return { bool_contents: [true, false, false, true, true, false] };
    case 'UINT8': case 'UINT16': case 'UINT32': return { uint_contents: [0, 1, 2, 3, 200, 255] };
    case 'INT8': case 'INT16': case 'INT32': return { int_contents: [-128, -1, 0, 1, 100, 127] };
    case 'INT64': return { int64_contents: ['-9223372036854775808', '-1', '0', '1', '2', '9223372036854775807'] };
    case 'UINT64': return { uint64_contents: ['0', '1', '2', '3', '4', '18446744073709551615'] };
    case 'FP32': return { fp32_contents: [0.5, -1.5, 2.25, 3, 4, 5] };
    case 'FP64': return { fp64_contents: [0.1, -1e300, 2, 3, 4, Math.E] };
    case 'BYTES': return { bytes_contents: ['a', 'bb', '', 'dddd', 'é', 'f'].map((s) => Buffer.from(s)) };
    case 'FP16': return undefined;
  }
}

/** What typedSample's values look like as raw little-endian bytes of the datatype. */
function typedAsRaw(dtype: TritonDatatype): Buffer {
  const sample = typedSample(dtype)!;
  const values = Object.values(sample)[0] as unknown[];
  const view = (array: ArrayBufferView) => Buffer.from(array.buffer, array.byteOffset, array.byteLength);
  const numbers = values as number[];
  const bigints = () => values.map((v) => BigInt(v as string));
  switch (dtype) {
    case 'BOOL': return Buffer.from(values.map((v) => (v ? 1 : 0)));
    case 'UINT8': return view(Uint8Array.from(numbers));
    case 'UINT16': return view(Uint16Array.from(numbers));
    case 'UINT32': return view(Uint32Array.from(numbers));
    case 'INT8': return view(Int8Array.from(numbers));
    case 'INT16': return view(Int16Array.from(numbers));
    case 'INT32': return view(Int32Array.from(numbers));
    case 'INT64': return view(BigInt64Array.from(bigints()));
    case 'UINT64': return view(BigUint64Array.from(bigints()));
    case 'FP32': return view(Float32Array.from(numbers));
    case 'FP64': return view(Float64Array.from(numbers));
    case 'BYTES': return Buffer.from(encodeBytesTensor((values as Buffer[]).map((b) => b.toString())));
    case 'FP16': throw new Error('FP16 has no typed contents');
  }
}

describe('datatype round trips', () => {
  it.each(TRITON_DATATYPES)('%s survives raw_input_contents → model → raw_output_contents unchanged', async (dtype) => {
    const bytes = rawSample(dtype);
    const response = await served.client.call('ModelInfer', {
      model_name: modelName(dtype),
      inputs: [{ name: 'INPUT0', datatype: dtype, shape: [2, 3] }],
      raw_input_contents: [bytes],
    });
    expect(response['outputs'][0]).toMatchObject({ name: 'OUTPUT0', datatype: dtype, shape: ['2', '3'] });
    expect(Buffer.compare(response['raw_output_contents'][0], bytes)).toBe(0);
  });

  it.each(TRITON_DATATYPES.filter((dt) => dt !== 'FP16'))('%s is accepted in typed contents', async (dtype) => {
    const response = await served.client.call('ModelInfer', {
      model_name: modelName(dtype),
      inputs: [{ name: 'INPUT0', datatype: dtype, shape: [2, 3], contents: typedSample(dtype) }],
    });
    expect(response['outputs'][0]).toMatchObject({ datatype: dtype, shape: ['2', '3'] });
    expect(Buffer.compare(response['raw_output_contents'][0], typedAsRaw(dtype))).toBe(0);
  });

  it('says FP16 has no typed contents field', async () => {
    const err = await served.client.callError('ModelInfer', {
      model_name: modelName('FP16'),
      inputs: [{ name: 'INPUT0', datatype: 'FP16', shape: [1, 3], contents: { fp32_contents: [1, 2, 3] } }],
    });
    expect(err.details).toMatch(/input 'INPUT0': FP16 has no typed contents field; send it in raw_input_contents/);
  });

  it('round-trips all five typed_identity tensors at once, and returns a selected subset', async () => {
    const inputs = {
      in_fp32: Buffer.from(Float32Array.from([1, 2, 3, 4]).buffer),
      in_fp16: Buffer.from(Uint16Array.from([0x3c00, 0x4000, 0x4200, 0x4400]).buffer),
      in_int64: Buffer.from(BigInt64Array.from([1n, -2n, 3n, -4n]).buffer),
      in_bool: Buffer.from([1, 0, 1, 0]),
      in_bytes: Buffer.from(encodeBytesTensor(['w', 'x', 'y', 'z'])),
    };
    const datatypes = { in_fp32: 'FP32', in_fp16: 'FP16', in_int64: 'INT64', in_bool: 'BOOL', in_bytes: 'BYTES' };
    const names = Object.keys(inputs) as (keyof typeof inputs)[];
    const request = {
      model_name: 'typed_identity',
      inputs: names.map((name) => ({ name, datatype: datatypes[name], shape: [1, 4] })),
      raw_input_contents: names.map((name) => inputs[name]),
    };
    const all = await served.client.call('ModelInfer', request);
    expect(all['outputs'].map((o: Message) => o['name'])).toEqual(['out_fp32', 'out_fp16', 'out_int64', 'out_bool', 'out_bytes']);
    names.forEach((name, i) => expect(Buffer.compare(all['raw_output_contents'][i], inputs[name])).toBe(0));

    const subset = await served.client.call('ModelInfer', { ...request, outputs: [{ name: 'out_bytes' }, { name: 'out_fp16' }] });
    expect(subset['outputs'].map((o: Message) => o['name'])).toEqual(['out_bytes', 'out_fp16']);
    expect(Buffer.compare(subset['raw_output_contents'][0], inputs.in_bytes)).toBe(0);
    expect(Buffer.compare(subset['raw_output_contents'][1], inputs.in_fp16)).toBe(0);
  });
});
