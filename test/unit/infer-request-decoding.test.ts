import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import {
  InferParameterSchema,
  InferTensorContentsSchema,
  ModelInferRequest_InferInputTensorSchema,
  ModelInferRequestSchema,
  type ModelInferRequest,
} from '../../src/generated/grpc_service_pb.js';
import { decodeModelInferRequest, walkModelInferRequest } from '../../src/server/infer-request-decoding.js';

/** A seeded generator (models/lib's mulberry32), so a failure names a seed that reproduces it. */
function generator(seed: number): () => number {
  const random = new SeededRandom(seed);
  return () => random.next();
}

const ALPHABET = ['a', 'Z', '_', '0', '-', '.', 'é', 'ß', '中', '😀', '\u007f', '\u0080'];

function randomRequest(random: () => number): ModelInferRequest {
  const int = (below: number) => Math.floor(random() * below);
  // Short and long (past 12 characters, sliced natively); one request in four has non-ASCII text.
  const ascii = random() < 0.75;
  const text = (max: number) => Array.from({ length: int(max + 1) }, () => (ascii || random() < 0.9 ? ALPHABET[int(6)]! : ALPHABET[int(ALPHABET.length)]!)).join('');
  const dim = () => BigInt([int(3), int(200), int(70_000), int(2 ** 33), Number.MAX_SAFE_INTEGER - int(5)][int(5)]!);
  const inputs = Array.from({ length: int(4) }, () => ({ name: text(20), datatype: ['FP32', 'INT64', 'BYTES', ''][int(4)]!, shape: Array.from({ length: int(5) }, dim) }));
  return create(ModelInferRequestSchema, {
    modelName: text(24),
    modelVersion: random() < 0.5 ? '' : String(int(1000)),
    id: text(40),
    inputs,
    outputs: Array.from({ length: int(3) }, () => ({ name: text(16) })),
    rawInputContents: inputs.map(() => Uint8Array.from({ length: [0, 1, 127, 128, 300, 2_000][int(6)]! }, () => int(256))),
  });
}

/** Decoded by both, compared field by field, property order and classes included. */
function expectSameDecoding(bytes: Uint8Array, label: string): void {
  const expected = fromBinary(ModelInferRequestSchema, bytes);
  const actual = decodeModelInferRequest(bytes);
  expect(actual, label).toStrictEqual(expected);
  expect(Object.keys(actual), label).toEqual(Object.keys(expected));
  actual.inputs.forEach((input, i) => expect(Object.keys(input), label).toEqual(Object.keys(expected.inputs[i]!)));
  actual.rawInputContents.forEach((raw, i) => {
    expect(raw.constructor, label).toBe(expected.rawInputContents[i]!.constructor);
    // Views of the request's bytes, as fromBinary's: no copy.
    expect(raw.buffer, label).toBe(bytes.buffer);
  });
}

describe('the ModelInferRequest decoder', () => {
  it('decodes random requests as fromBinary does (every varint length, short and long, ASCII and not)', () => {
    let walked = 0;
    for (let seed = 1; seed <= 200; seed += 1) {
      const request = randomRequest(generator(seed));
      const bytes = Buffer.from(toBinary(ModelInferRequestSchema, request));
      expectSameDecoding(bytes, `seed ${seed}`);
      const texts = [request.modelName, request.modelVersion, request.id, ...request.inputs.flatMap((input) => [input.name, input.datatype]), ...request.outputs.map((output) => output.name)];
      if (texts.every((text) => /^[\x00-\x7f]*$/.test(text))) {
        // The walk itself decoded it (not the fallback).
        expect(walkModelInferRequest(bytes), `seed ${seed}`).toBeDefined();
        walked += 1;
      }
    }
    expect(walked).toBeGreaterThan(100);
  });

  it('takes a plain Uint8Array as well as a Buffer', () => {
    const bytes = toBinary(ModelInferRequestSchema, randomRequest(generator(3)));
    expect(Buffer.isBuffer(bytes)).toBe(false);
    expectSameDecoding(bytes, 'Uint8Array');
  });

  it('reads a shape sent unpacked, or partly unpacked', () => {
    // model_name "m"; inputs: name "x", shape 2 and 3 as two unpacked elements, then packed [4].
    const input = Buffer.from([0x0a, 0x01, 0x78, 0x18, 0x02, 0x18, 0x03, 0x1a, 0x01, 0x04]);
    const bytes = Buffer.concat([Buffer.from([0x0a, 0x01, 0x6d, 0x2a, input.length]), input]);
    expectSameDecoding(bytes, 'unpacked');
    expect(decodeModelInferRequest(bytes).inputs[0]!.shape).toEqual([2n, 3n, 4n]);
  });

  it('decodes non-minimal encodings as fromBinary does: an over-long tag, a padded length, 9- and 10-byte dims', () => {
    // model_name "m" with its tag as 0x8a 0x00 (field 1, wire type 2, one byte too many).
    const longTag = Buffer.from([0x8a, 0x00, 0x01, 0x6d]);
    // model_name "m" with its length 1 padded to 6 bytes.
    const paddedLength = Buffer.from([0x0a, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 0x6d]);
    // inputs: name "x", shape [2^56] (a 9-byte varint) and [2^63 - 1] (10 bytes, past 2^53).
    const dim9 = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    const dim10 = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
    const withDims = (dims: number[][]) => {
      const input = Buffer.from([0x0a, 0x01, 0x78, ...dims.flatMap((dim) => [0x18, ...dim])]);
      return Buffer.concat([Buffer.from([0x2a, input.length]), input]);
    };
    for (const [name, bytes] of Object.entries({ longTag, paddedLength, dim9: withDims([dim9]), dim10: withDims([dim10]), both: withDims([[0x02], dim9]) })) {
      expectSameDecoding(bytes, name);
    }
  });

  it('leaves to fromBinary what it does not walk: parameters, typed contents, unknown fields, negative or huge dims', () => {
    const base = randomRequest(generator(9));
    const parameter = create(InferParameterSchema, { parameterChoice: { case: 'int64Param', value: 5n } });
    const input = (init: object) => create(ModelInferRequest_InferInputTensorSchema, { name: 'x', datatype: 'INT64', shape: [2n], ...init });
    const cases: ModelInferRequest[] = [
      { ...base, parameters: { priority: parameter } },
      { ...base, inputs: [input({ parameters: { p: parameter } })] },
      { ...base, inputs: [input({ contents: create(InferTensorContentsSchema, { int64Contents: [1n, 2n] }) })] },
      { ...base, outputs: [{ $typeName: 'inference.ModelInferRequest.InferRequestedOutputTensor', name: 'y', parameters: { binary_data: parameter } }] },
      { ...base, inputs: [input({ shape: [-1n, 4n] })] },
      { ...base, inputs: [input({ shape: [2n ** 60n] })] },
      { ...base, modelName: 'modèle', id: '\ufeffid' },
    ];
    for (const [i, request] of cases.entries()) {
      const bytes = Buffer.from(toBinary(ModelInferRequestSchema, request));
      expect(walkModelInferRequest(bytes), `case ${i}`).toBeUndefined();
      expectSameDecoding(bytes, `case ${i}`);
    }
    // An unknown field (99, varint) kept in $unknown by fromBinary.
    const unknown = Buffer.concat([Buffer.from(toBinary(ModelInferRequestSchema, base)), Buffer.from([0x98, 0x06, 0x01])]);
    expectSameDecoding(unknown, 'unknown field');
    expect(decodeModelInferRequest(unknown).$unknown).toHaveLength(1);
  });

  it('fails bytes that run short or are malformed exactly as fromBinary does', () => {
    const whole = Buffer.from(toBinary(ModelInferRequestSchema, randomRequest(generator(5))));
    const invalidUtf8 = Buffer.from([0x0a, 0x03, 0x6d, 0xff, 0xfe]);
    for (const bytes of [whole.subarray(0, whole.length - 1), whole.subarray(0, 7), Buffer.from([0x2a, 0x05, 0x0a]), Buffer.from([0x07]), Buffer.from([0x0a, 0xff]), invalidUtf8]) {
      let expected: unknown;
      try {
        expected = fromBinary(ModelInferRequestSchema, bytes);
      } catch (err) {
        expected = err;
      }
      if (expected instanceof Error) expect(() => decodeModelInferRequest(bytes)).toThrow(expected.message);
      else expect(decodeModelInferRequest(bytes)).toStrictEqual(expected);
    }
  });
});
