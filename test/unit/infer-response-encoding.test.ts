import { create, equals, fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import {
  InferTensorContentsSchema,
  ModelInferResponseSchema,
  ModelStreamInferResponseSchema,
  type ModelInferResponse,
} from '../../src/generated/grpc_service_pb.js';
import { encodeModelInferResponse, encodeModelStreamInferResponse } from '../../src/server/infer-response-encoding.js';

/** A seeded generator (models/lib's mulberry32), so a failure names a seed that reproduces it. */
function generator(seed: number): () => number {
  const random = new SeededRandom(seed);
  return () => random.next();
}

const ALPHABET = ['a', 'Z', '_', '0', '-', ' ', 'é', 'ß', '中', '😀', '\u007f', '\u0080'];

function randomAnswer(random: () => number): ModelInferResponse {
  const int = (below: number) => Math.floor(random() * below);
  const text = (max: number) => Array.from({ length: int(max + 1) }, () => (random() < 0.8 ? ALPHABET[int(5)]! : ALPHABET[int(ALPHABET.length)]!)).join('');
  // Dims from small to past 2^32 and up to 2^53 - 1, every varint length.
  const dim = () => BigInt([int(3), int(200), int(70_000), int(2 ** 33), Number.MAX_SAFE_INTEGER - int(5)][int(5)]!);
  const outputs = Array.from({ length: int(4) }, () => ({
    $typeName: 'inference.ModelInferResponse.InferOutputTensor' as const,
    name: text(12),
    datatype: ['FP32', 'INT64', 'BYTES', ''][int(4)]!,
    shape: Array.from({ length: int(5) }, dim),
    parameters: {},
  }));
  return {
    $typeName: 'inference.ModelInferResponse',
    modelName: text(20),
    modelVersion: random() < 0.2 ? '' : String(int(1000)),
    id: text(40),
    parameters: {},
    outputs,
    // Sizes either side of the one- and two-byte varint lengths, and a large one.
    rawOutputContents: outputs.map(() => Uint8Array.from({ length: [0, 1, 127, 128, 300, 16_384, 20_000][int(7)]! }, () => int(256))),
  };
}

describe('the inference answer encoder', () => {
  it('writes the bytes toBinary writes, for 300 random answers (every varint length, non-ASCII text, empty fields)', () => {
    for (let seed = 1; seed <= 300; seed += 1) {
      const answer = randomAnswer(generator(seed));
      const bytes = encodeModelInferResponse(answer);
      expect(Buffer.compare(bytes, Buffer.from(toBinary(ModelInferResponseSchema, answer))), `seed ${seed}`).toBe(0);
      expect(equals(ModelInferResponseSchema, fromBinary(ModelInferResponseSchema, bytes), create(ModelInferResponseSchema, answer)), `seed ${seed}`).toBe(true);
    }
  });

  it('wraps an answer and an error message in a stream response as toBinary does', () => {
    for (let seed = 1; seed <= 100; seed += 1) {
      const random = generator(seed);
      const inferResponse = randomAnswer(random);
      for (const message of [
        create(ModelStreamInferResponseSchema, { inferResponse }),
        create(ModelStreamInferResponseSchema, { errorMessage: `model 'm' failed: über ${seed}`, inferResponse }),
        create(ModelStreamInferResponseSchema, { errorMessage: 'refused' }),
        create(ModelStreamInferResponseSchema, {}),
      ]) {
        const bytes = encodeModelStreamInferResponse(message);
        expect(Buffer.compare(bytes, Buffer.from(toBinary(ModelStreamInferResponseSchema, message))), `seed ${seed}`).toBe(0);
        expect(equals(ModelStreamInferResponseSchema, fromBinary(ModelStreamInferResponseSchema, bytes), message)).toBe(true);
      }
    }
  });

  it('leaves to toBinary what it does not write itself: parameters, typed contents, negative or huge dims, unknown fields', () => {
    const base = randomAnswer(generator(7));
    const output = {
      $typeName: 'inference.ModelInferResponse.InferOutputTensor' as const,
      name: 'y',
      datatype: 'INT64',
      shape: [2n],
      parameters: {},
    };
    const cases: ModelInferResponse[] = [
      { ...base, parameters: { hotpath_arm: { $typeName: 'inference.InferParameter', parameterChoice: { case: 'stringParam', value: 'b' } } } },
      { ...base, outputs: [{ ...output, parameters: { p: { $typeName: 'inference.InferParameter', parameterChoice: { case: 'boolParam', value: true } } } }] },
      { ...base, outputs: [{ ...output, contents: create(InferTensorContentsSchema, { int64Contents: [5n, 6n] }) }] },
      { ...base, outputs: [{ ...output, shape: [-1n, 3n] }] },
      { ...base, outputs: [{ ...output, shape: [2n ** 60n] }] },
      { ...base, $unknown: [{ no: 99, wireType: 0, data: Uint8Array.of(1) }] },
    ];
    for (const answer of cases) {
      const bytes = encodeModelInferResponse(answer);
      expect(Buffer.compare(bytes, Buffer.from(toBinary(ModelInferResponseSchema, answer)))).toBe(0);
      const stream = create(ModelStreamInferResponseSchema, { inferResponse: answer });
      expect(Buffer.compare(encodeModelStreamInferResponse(stream), Buffer.from(toBinary(ModelStreamInferResponseSchema, stream)))).toBe(0);
    }
  });

  it('writes an answer decoded from the wire (protobuf-es defaults) the same way', () => {
    const answer = randomAnswer(generator(11));
    const decoded = fromBinary(ModelInferResponseSchema, toBinary(ModelInferResponseSchema, answer));
    expect(Buffer.compare(encodeModelInferResponse(decoded), Buffer.from(toBinary(ModelInferResponseSchema, decoded)))).toBe(0);
  });
});
