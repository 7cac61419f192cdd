import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { ServingError } from '../../src/common/serving-error.js';
import { ModelInferRequestSchema, type ModelInferRequest } from '../../src/generated/grpc_service_pb.js';
import { DataType, ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import { prepareInference } from '../../src/tensor/infer-request.js';
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
