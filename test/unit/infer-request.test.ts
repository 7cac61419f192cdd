import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { ServingError } from '../../src/common/serving-error.js';
import { ModelInferRequestSchema, type ModelInferRequest } from '../../src/generated/grpc_service_pb.js';
import { DataType, ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import { prepareBatchedInference, prepareInference } from '../../src/tensor/infer-request.js';
import { signatureFromConfig } from '../../src/tensor/model-signature.js';
import type { ArenaTensorPayload, TensorPayload } from '../../src/workers/worker-protocol.js';
import { Arena } from '../../src/native/arena.js';

const ctr = signatureFromConfig(
  create(ModelConfigSchema, {
    name: 'ctr',
    maxBatchSize: 8,
    input: [
      { name: 'features', dataType: DataType.TYPE_FP32, dims: [4n] },
      { name: 'ids', dataType: DataType.TYPE_INT64, dims: [-1n] },
    ],
    output: [{ name: 'score', dataType: DataType.TYPE_FP32, dims: [1n] }],
  }),
);
const unbatched = signatureFromConfig(
  create(ModelConfigSchema, {
    name: 'fixed',
    maxBatchSize: 0,
    input: [{ name: 'x', dataType: DataType.TYPE_INT8, dims: [2n, 2n], reshape: { shape: [4n] } }],
    output: [{ name: 'y', dataType: DataType.TYPE_INT8, dims: [4n] }],
  }),
);

const f32 = (...v: number[]) => new Uint8Array(Float32Array.from(v).buffer);
const i64 = (...v: bigint[]) => new Uint8Array(BigInt64Array.from(v).buffer);

function request(init: MessageInitShape<typeof ModelInferRequestSchema>): ModelInferRequest {
  return create(ModelInferRequestSchema, { modelName: 'ctr', ...init } as MessageInitShape<typeof ModelInferRequestSchema>);
}

function validCtr(): ModelInferRequest {
  return request({
    inputs: [
      { name: 'features', datatype: 'FP32', shape: [2n, 4n] },
      { name: 'ids', datatype: 'INT64', shape: [2n, 3n] },
    ],
    rawInputContents: [f32(1, 2, 3, 4, 5, 6, 7, 8), i64(1n, 2n, 3n, 4n, 5n, 6n)],
  });
}

function rejection(fn: () => unknown): ServingError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ServingError);
    expect((err as ServingError).code).toBe(status.INVALID_ARGUMENT);
    return err as ServingError;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

describe('prepareInference', () => {
  it('copies raw inputs into aligned typed arrays with the request shape', () => {
    const prepared = prepareInference(validCtr(), ctr);
    expect(prepared.batchSize).toBe(2);
    const [features, ids] = prepared.inputs;
    expect(features?.dims).toEqual([2, 4]);
    expect(Array.from((features as TensorPayload | undefined)?.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect((ids as TensorPayload | undefined)?.data).toBeInstanceOf(BigInt64Array);
    expect(prepared.transfer).toHaveLength(2);
    expect(prepared.outputs.map((o) => o.name)).toEqual(['score']);
  });

  it('accepts typed contents', () => {
    const prepared = prepareInference(
      request({
        inputs: [
          { name: 'features', datatype: 'FP32', shape: [1n, 4n], contents: { fp32Contents: [1, 2, 3, 4] } },
          { name: 'ids', datatype: 'INT64', shape: [1n, 1n], contents: { int64Contents: [7n] } },
        ],
      }),
      ctr,
    );
    expect(Array.from((prepared.inputs[1] as TensorPayload | undefined)?.data as BigInt64Array)).toEqual([7n]);
  });

  it('applies the config reshape for the model and range-checks small ints', () => {
    const prepared = prepareInference(
      request({ modelName: 'fixed', inputs: [{ name: 'x', datatype: 'INT8', shape: [2n, 2n], contents: { intContents: [1, -2, 3, 127] } }] }),
      unbatched,
    );
    expect(prepared.inputs[0]?.dims).toEqual([4]);
    expect(
      rejection(() =>
        prepareInference(
          request({ modelName: 'fixed', inputs: [{ name: 'x', datatype: 'INT8', shape: [2n, 2n], contents: { intContents: [1, 2, 3, 200] } }] }),
          unbatched,
        ),
      ).message,
    ).toMatch(/input 'x': element 3 is 200, outside the INT8 range -128..127/);
  });

  it('names missing, unknown and duplicate inputs', () => {
    const missing = validCtr();
    missing.inputs.pop();
    missing.rawInputContents.pop();
    expect(rejection(() => prepareInference(missing, ctr)).message).toMatch(/missing input 'ids' for model 'ctr'/);

    const unknown = validCtr();
    unknown.inputs[1]!.name = 'idz';
    expect(rejection(() => prepareInference(unknown, ctr)).message).toMatch(/unknown input 'idz'.*expected inputs: 'features' \(FP32 \[4\]\), 'ids'/);

    const duplicate = validCtr();
    duplicate.inputs[1] = { ...duplicate.inputs[0]! };
    expect(rejection(() => prepareInference(duplicate, ctr)).message).toMatch(/input 'features' is given more than once/);
  });

  it('names datatype, rank, shape and batch errors with expected vs actual', () => {
    const dtype = validCtr();
    dtype.inputs[0]!.datatype = 'FP64';
    expect(rejection(() => prepareInference(dtype, ctr)).message).toMatch(/input 'features': expected datatype FP32, got FP64/);

    const rank = validCtr();
    rank.inputs[0]!.shape = [8n];
    expect(rejection(() => prepareInference(rank, ctr)).message).toMatch(/expected rank 2 with shape \[-1,4\], got rank 1 with shape \[8\]/);

    const shape = validCtr();
    shape.inputs[0]!.shape = [1n, 8n];
    expect(rejection(() => prepareInference(shape, ctr)).message).toMatch(/input 'features': expected shape \[-1,4\], got \[1,8\]/);

    const batch = validCtr();
    batch.inputs[0]!.shape = [9n, 4n];
    expect(rejection(() => prepareInference(batch, ctr)).message).toMatch(/batch size 9 is outside 1..8 \(max_batch_size of model 'ctr'\)/);

    const mixed = validCtr();
    mixed.inputs[1]!.shape = [3n, 2n];
    expect(rejection(() => prepareInference(mixed, ctr)).message).toMatch(/batch size 3 differs from the other inputs' batch size 2/);

    const negative = validCtr();
    negative.inputs[0]!.shape = [2n, -4n];
    expect(rejection(() => prepareInference(negative, ctr)).message).toMatch(/shape dimension 1 is -4; expected a non-negative integer/);
  });

  it('calls a dimension beyond 2^53-1 (2^63-1 included) too large, and a shape with too many elements too', () => {
    const max = validCtr();
    max.inputs[1]!.shape = [2n, 2n ** 63n - 1n];
    expect(rejection(() => prepareInference(max, ctr)).message).toMatch(
      /^input 'ids': shape dimension 1 is 9223372036854775807, too large \(expected at most 9007199254740991\)$/,
    );
    const rows = validCtr();
    rows.inputs[0]!.shape = [2n ** 63n - 1n, 4n];
    expect(rejection(() => prepareInference(rows, ctr)).message).toMatch(/input 'features': shape dimension 0 is 9223372036854775807, too large/);
    const product = validCtr();
    product.inputs[1]!.shape = [2n, 2n ** 53n - 1n];
    expect(rejection(() => prepareInference(product, ctr)).message).toMatch(
      /input 'ids': shape \[2,9007199254740991\] is too large \(more than 9007199254740991 elements\)/,
    );
  });

  it('checks byte sizes against shape × datatype', () => {
    const short = validCtr();
    short.rawInputContents[0] = f32(1, 2, 3);
    expect(rejection(() => prepareInference(short, ctr)).message).toMatch(
      /input 'features': expected 32 bytes \(8 elements of FP32 for shape \[2,4\]\), got 12 bytes/,
    );
  });

  it('refuses raw and typed contents together, and a raw count that does not match the inputs', () => {
    const both = validCtr();
    both.inputs[0]!.contents = { $typeName: 'inference.InferTensorContents', fp32Contents: [1], boolContents: [], intContents: [], int64Contents: [], uintContents: [], uint64Contents: [], fp64Contents: [], bytesContents: [] };
    expect(rejection(() => prepareInference(both, ctr)).message).toMatch(/both raw_input_contents and typed contents are given/);

    const count = validCtr();
    count.rawInputContents.pop();
    expect(rejection(() => prepareInference(count, ctr)).message).toMatch(/raw_input_contents has 1 entries but the request has 2 inputs/);
  });

  it('names unknown and duplicate requested outputs', () => {
    const unknown = validCtr();
    unknown.outputs.push({ $typeName: 'inference.ModelInferRequest.InferRequestedOutputTensor', name: 'scores', parameters: {} });
    expect(rejection(() => prepareInference(unknown, ctr)).message).toMatch(/unknown output 'scores'.*expected one of: 'score'/);
  });
});

describe('prepareBatchedInference', () => {
  it("takes the inputs in the model's order, whatever order the request lists them in, as views of the request's bytes", () => {
    const reversed = validCtr();
    reversed.inputs.reverse();
    reversed.rawInputContents.reverse();
    const prepared = prepareBatchedInference(reversed, ctr);
    expect(prepared.batchSize).toBe(2);
    expect(prepared.dims).toEqual([[2, 4], [2, 3]]);
    expect(Array.from(new Float32Array(prepared.inputs[0]!.slice().buffer))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(Array.from(new BigInt64Array(prepared.inputs[1]!.slice().buffer))).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    // Not copied: the batcher copies them once, into the batch.
    expect(prepared.inputs[0]!.buffer).toBe(reversed.rawInputContents[1]!.buffer);
    expect(prepared.outputs.map((o) => o.name)).toEqual(['score']);
    expect(prepared.scheduling).toEqual({ priority: 0, timeoutUs: 0 });
  });

  it('gives typed contents as byte views of the array they were read into', () => {
    const prepared = prepareBatchedInference(
      request({
        inputs: [
          { name: 'ids', datatype: 'INT64', shape: [1n, 1n], contents: { int64Contents: [7n] } },
          { name: 'features', datatype: 'FP32', shape: [1n, 4n], contents: { fp32Contents: [1, 2, 3, 4] } },
        ],
      }),
      ctr,
    );
    expect(prepared.inputs.map((bytes) => bytes.byteLength)).toEqual([16, 8]);
    expect(Array.from(new Float32Array(prepared.inputs[0]!.slice().buffer))).toEqual([1, 2, 3, 4]);
    expect(prepared.dims).toEqual([[1, 4], [1, 1]]);
  });

  it('refuses every malformed request with the very message prepareInference gives', () => {
    const cases: Array<(r: ModelInferRequest) => void> = [
      (r) => { r.inputs.pop(); r.rawInputContents.pop(); },
      (r) => { r.inputs[1]!.name = 'idz'; },
      (r) => { r.inputs[1] = { ...r.inputs[0]! }; },
      (r) => { r.inputs[0]!.datatype = 'FP64'; },
      (r) => { r.inputs[0]!.shape = [8n]; },
      (r) => { r.inputs[0]!.shape = [9n, 4n]; },
      (r) => { r.inputs[1]!.shape = [3n, 2n]; },
      (r) => { r.inputs[0]!.shape = [2n, -4n]; },
      (r) => { r.rawInputContents[0] = f32(1, 2, 3); },
      (r) => { r.rawInputContents.pop(); },
      (r) => { r.outputs.push({ $typeName: 'inference.ModelInferRequest.InferRequestedOutputTensor', name: 'scores', parameters: {} }); },
      (r) => { r.parameters['priority'] = { $typeName: 'inference.InferParameter', parameterChoice: { case: 'stringParam', value: 'abc' } }; },
    ];
    for (const spoil of cases) {
      const r = validCtr();
      spoil(r);
      expect(rejection(() => prepareBatchedInference(r, ctr)).message).toBe(rejection(() => prepareInference(r, ctr)).message);
    }
  });
});

describe('scheduling parameters are checked for every model', () => {
  const withParameters = (parameters: Record<string, { case: string; value: unknown }>) => {
    const r = validCtr();
    for (const [key, parameterChoice] of Object.entries(parameters)) {
      r.parameters[key] = { $typeName: 'inference.InferParameter', parameterChoice } as never;
    }
    return r;
  };

  it('reads priority and timeout as unsigned integers, 0 when absent', () => {
    expect(prepareInference(validCtr(), ctr).scheduling).toEqual({ priority: 0, timeoutUs: 0 });
    expect(
      prepareInference(withParameters({ priority: { case: 'uint64Param', value: 2n }, timeout: { case: 'int64Param', value: 5000n } }), ctr)
        .scheduling,
    ).toEqual({ priority: 2, timeoutUs: 5000 });
    // Triton's uint64 range: a level above any model's priority_levels is the default level (0);
    // a timeout beyond 2^53 µs is as long as can be.
    expect(
      prepareInference(withParameters({ priority: { case: 'uint64Param', value: 2n ** 64n - 1n }, timeout: { case: 'uint64Param', value: 2n ** 64n - 1n } }), ctr)
        .scheduling,
    ).toEqual({ priority: 0, timeoutUs: Number.MAX_SAFE_INTEGER });
  });

  it('refuses a wrong type or a negative value, naming the parameter, the expected form and what was sent', () => {
    // The unbatched signature too: the check does not depend on how the model is scheduled.
    for (const signature of [ctr, unbatched]) {
      const r = withParameters({ priority: { case: 'stringParam', value: 'abc' } });
      if (signature === unbatched) {
        r.inputs = [{ $typeName: 'inference.ModelInferRequest.InferInputTensor', name: 'x', datatype: 'INT8', shape: [2n, 2n], parameters: {} } as never];
        r.rawInputContents = [new Uint8Array(4)];
      }
      expect(rejection(() => prepareInference(r, signature)).message).toBe(
        "parameter 'priority': expected an unsigned integer (uint64_param or int64_param >= 0), got string_param 'abc'",
      );
    }
    expect(rejection(() => prepareInference(withParameters({ timeout: { case: 'int64Param', value: -1n } }), ctr)).message).toBe(
      "parameter 'timeout': expected an unsigned integer (uint64_param or int64_param >= 0), got int64_param -1",
    );
    expect(rejection(() => prepareInference(withParameters({ timeout: { case: 'doubleParam', value: 1.5 } }), ctr)).message).toMatch(
      /parameter 'timeout': .*got double_param 1.5/,
    );
    expect(rejection(() => prepareInference(withParameters({ sequence_start: { case: 'int64Param', value: 1n } }), ctr)).message).toBe(
      "parameter 'sequence_start': expected a bool_param, got int64_param 1",
    );
    expect(rejection(() => prepareInference(withParameters({ sequence_id: { case: 'boolParam', value: true } }), ctr)).message).toBe(
      "parameter 'sequence_id': expected an int64_param, uint64_param or string_param, got bool_param true",
    );
  });
});

describe('prepareInference with arena memory', () => {
  it('copies each numeric input once into a block charged to the tenant, and releases on failure', () => {
    const arena = Arena.create('infer-request-unit', { backend: 'host', capacityBytes: 64 * 1024 * 1024 });
    try {
      arena.createTenant('small', 300);
      const owner = arena.createOwner('model', 'ctr/1');
      const allocate = (tenant: string) => (bytes: number) => arena.alloc(owner, bytes, { tenant });
      const prepared = prepareInference(validCtr(), ctr, allocate('default'));
      const [features, ids] = prepared.inputs as ArenaTensorPayload[];
      expect(prepared.transfer).toHaveLength(0);
      expect(prepared.blocks).toHaveLength(2);
      expect(features).toMatchObject({ name: 'features', type: 'float32', dims: [2, 4], byteLength: 32 });
      expect(Array.from(new Float32Array(prepared.blocks[0]!.view(), 0, 8))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(ids?.arenaBlock).toBe(prepared.blocks[1]?.id);
      for (const block of prepared.blocks) block.release();

      // Blocks are at least 256 bytes: the features' block fits the 300-byte quota,
      // the ids' block then does not, and the first block must be released, not leaked.
      expect(() => prepareInference(validCtr(), ctr, allocate('small'))).toThrow(/quota/);
      expect(arena.stats().tenants.find((t) => t.name === 'small')?.allocated).toBe(0);
    } finally {
      arena.close();
    }
  });
});
