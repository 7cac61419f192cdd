import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { DataType, ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import { compareGolden, goldenRequest, parseGoldenCase, GoldenCheckError } from '../../src/repository/golden-check.js';
import { prepareInference } from '../../src/tensor/infer-request.js';
import { signatureFromConfig } from '../../src/tensor/model-signature.js';
import { encodeBytesTensor } from '../../src/tensor/bytes-codec.js';
import type { TensorPayload } from '../../src/workers/worker-protocol.js';

const ranker = signatureFromConfig(
  create(ModelConfigSchema, {
    name: 'ranker',
    maxBatchSize: 8,
    input: [{ name: 'features', dataType: DataType.TYPE_FP32, dims: [2n] }],
    output: [
      { name: 'score', dataType: DataType.TYPE_FP32, dims: [1n] },
      { name: 'label', dataType: DataType.TYPE_STRING, dims: [2n] },
    ],
  }),
);

const score = (...values: number[]): TensorPayload => ({
  name: 'score', type: 'float32', dims: [values.length, 1], data: Float32Array.from(values),
});

const golden = (outputs: unknown, tolerance?: number) =>
  parseGoldenCase('golden/case.json', {
    inputs: { features: [[1, 2], [3, 4], [5, 6], [7, 8]] },
    outputs,
    ...(tolerance === undefined ? {} : { tolerance }),
  });

describe('golden comparison', () => {
  it('passes within the tolerance', () => {
    expect(compareGolden(golden({ score: [[0.731], [0.5], [0.1], [0.269]] }, 1e-4), ranker, [score(0.73105, 0.5, 0.1, 0.26901)])).toBeUndefined();
  });

  it('names output, row, expected, actual, tolerance and case file on a mismatch', () => {
    const reordered = golden({ score: [[0.5], [0.5], [0.5], [0.731]] }, 1e-4);
    expect(compareGolden(reordered, ranker, [score(0.5, 0.5, 0.5, 0.269)])).toBe(
      "output 'score' row 3 expected 0.731 got 0.269 (tol 1e-4) in golden/case.json",
    );
  });

  it('names the element within a row, and compares BYTES exactly', () => {
    const labels: TensorPayload = { name: 'label', type: 'string', dims: [1, 2], data: encodeBytesTensor(['a', 'b']) };
    const expected = parseGoldenCase('golden/l.json', { inputs: { features: [[1, 2]] }, outputs: { label: [['a', 'c']] } });
    expect(compareGolden(expected, ranker, [labels])).toBe(
      `output 'label' row 0 element 1 expected "c" got "b" (tol 1e-5) in golden/l.json`,
    );
  });

  it('reports an element count mismatch and an unknown output', () => {
    expect(compareGolden(golden({ score: [[1], [2]] }), ranker, [score(1, 2, 3, 4)])).toMatch(
      /^output 'score' has 4 elements \(shape \[4,1\]\), expected 2 \(shape \[2,1\]\) in golden\/case\.json$/,
    );
    expect(compareGolden(golden({ prob: [[1]] }), ranker, [score(1)])).toMatch(/^output 'prob' is not an output of the model/);
  });

  it('accepts {shape, data} and {shape, base64} tensors', () => {
    const raw = Buffer.from(Float32Array.from([0.25, 0.75]).buffer).toString('base64');
    const parsed = parseGoldenCase('golden/b.json', {
      inputs: { features: { shape: [1, 2], data: [1, 2] } },
      outputs: { score: { shape: [2, 1], base64: raw } },
    });
    expect(compareGolden(parsed, ranker, [score(0.25, 0.75)])).toBeUndefined();
    expect(compareGolden(parsed, ranker, [score(0.25, 0.5)])).toMatch(/row 1 expected 0\.75 got 0\.5/);
  });
});

describe('golden files', () => {
  it('turn into a request that passes the same validation as a client request', () => {
    const prepared = prepareInference(goldenRequest(golden({ score: [[0], [0], [0], [0]] }), ranker), ranker);
    expect(prepared.batchSize).toBe(4);
    expect([...((prepared.inputs[0] as TensorPayload).data as Float32Array)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('are refused with a reason when malformed', () => {
    expect(() => parseGoldenCase('golden/x.json', { outputs: {} })).toThrow(GoldenCheckError);
    expect(() => parseGoldenCase('golden/x.json', { inputs: { a: [1] }, outputs: { b: [1] }, tolerance: -1 })).toThrow(
      /^golden check failed: golden\/x\.json: "tolerance": expected a number >= 0, got -1$/,
    );
    expect(() => parseGoldenCase('golden/x.json', { inputs: { a: [[1, 2], [3]] }, outputs: { b: [1] } })).toThrow(/ragged/);
    expect(() => goldenRequest(parseGoldenCase('golden/x.json', { inputs: { nope: [1] }, outputs: { score: [1] } }), ranker)).toThrow(
      /golden\/x\.json: unknown input 'nope'; expected inputs: features/,
    );
  });
});
