// ONNX -> executor plan (src/executor/onnx-plan.ts) on models built with
// models/lib: the tensor table, initializer bytes from every storage form,
// Constant folding into initializers, batch dimensions, foreign domains,
// index bounds for the server and the errors that name what is wrong.
import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';

import {
  attrFloat,
  attrFloats,
  attrInt,
  attrInts,
  attrString,
  floatInitializer,
  node,
  serializeModel,
  tensorValueInfo,
  type GraphSpec,
} from '../../models/lib/onnx-builder.js';
import { CTR_DEEP_SHAPE, ctrDeepGraph, ctrDeepParams } from '../../models/lib/ctr-deep.js';
import { ctrMlpLayers, SAMPLE_MODELS } from '../../models/lib/sample-models.js';
import {
  AttributeProto_AttributeType,
  AttributeProtoSchema,
  StringStringEntryProtoSchema,
  TensorProto_DataLocation,
  TensorProto_DataType,
  TensorProtoSchema,
} from '../../src/generated/onnx/onnx_pb.js';
import { OnnxPlanError, planFromOnnx, type OnnxPlan } from '../../src/executor/onnx-plan.js';

const FLOAT = TensorProto_DataType.FLOAT;
const INT64 = TensorProto_DataType.INT64;

function sample(name: string): Uint8Array {
  const model = SAMPLE_MODELS.find((m) => m.name === name);
  if (model === undefined) throw new Error(`no sample model ${name}`);
  return model.model();
}

function tensorOf(plan: OnnxPlan, name: string) {
  const tensor = plan.tensors.find((t) => t.name === name);
  if (tensor === undefined) throw new Error(`no tensor ${name}`);
  return tensor;
}

function floats(data: Uint8Array | undefined): number[] {
  if (data === undefined) throw new Error('no data');
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return Array.from({ length: data.byteLength / 4 }, (_, i) => view.getFloat32(i * 4, true));
}

function error(fn: () => unknown): OnnxPlanError {
  try {
    fn();
  } catch (caught) {
    if (caught instanceof OnnxPlanError) return caught;
    throw caught;
  }
  throw new Error('expected an OnnxPlanError');
}

/** A one-input graph `x` [batch, 4] FLOAT around `nodes`, output `y`. */
function small(spec: Partial<GraphSpec>): Uint8Array {
  return serializeModel({
    name: 'small',
    doc: '',
    inputs: [tensorValueInfo('x', FLOAT, ['batch', 4])],
    outputs: [tensorValueInfo('y', FLOAT, ['batch', 4])],
    nodes: [node('Relu', ['x'], ['y'])],
    ...spec,
  });
}

describe('planFromOnnx', () => {
  it('flattens ctr_mlp into the tensor table with its weights as little-endian bytes', () => {
    const plan = planFromOnnx(sample('ctr_mlp'), { modelName: 'ctr_mlp:1', maxBatchSize: 64 });
    expect(plan).toMatchObject({ modelName: 'ctr_mlp:1', opset: 17, maxBatchSize: 64, indexBounds: [] });
    expect(plan.nodes.map((n) => n.opType)).toEqual(['Gemm', 'Relu', 'Gemm', 'Relu', 'Gemm', 'Sigmoid']);
    const input = plan.tensors[plan.inputs[0]!]!;
    expect(input).toEqual({ name: 'features', dtype: FLOAT, dims: [-1, 32], initializer: false });
    expect(plan.tensors[plan.outputs[0]!]!.name).toBe('score');
    const layers = ctrMlpLayers();
    const w0 = tensorOf(plan, 'fc0.weight');
    expect(w0).toMatchObject({ dtype: FLOAT, dims: [64, 32], initializer: true });
    expect(floats(w0.data)).toEqual(Array.from(layers[0]!.weight));
    expect(floats(tensorOf(plan, 'fc2.bias').data)).toEqual(Array.from(layers[2]!.bias));
    // Operands by index; attributes typed.
    const gemm = plan.nodes[0]!;
    expect(gemm.inputs.map((i) => plan.tensors[i]!.name)).toEqual(['features', 'fc0.weight', 'fc0.bias']);
    expect(gemm.attributes).toEqual([{ name: 'transB', type: 'int', value: 1 }]);
    expect(plan.io).toEqual({
      inputs: [{ name: 'features', elemType: FLOAT, type: 'float32', shape: [-1, 32] }],
      outputs: [{ name: 'score', elemType: FLOAT, type: 'float32', shape: [-1, 1] }],
    });
  });

  it('reports Gather index bounds of ctr_deep for the server, and its INT64 initializers', () => {
    const plan = planFromOnnx(serializeModel(ctrDeepGraph(ctrDeepParams())), { modelName: 'ctr_deep:1', maxBatchSize: 256 });
    expect(plan.indexBounds).toEqual([{ input: 'categorical', axisLength: CTR_DEEP_SHAPE.vocabulary }]);
    const shape = tensorOf(plan, 'flatten.shape');
    expect(shape).toMatchObject({ dtype: INT64, dims: [2] });
    const view = new DataView(shape.data!.buffer, shape.data!.byteOffset, 16);
    expect([view.getBigInt64(0, true), view.getBigInt64(8, true)]).toEqual([0n, -1n]);
    expect(plan.io.inputs.map((t) => [t.name, t.type, t.shape])).toEqual([
      ['dense', 'float32', [-1, 13]],
      ['categorical', 'int64', [-1, 8]],
    ]);
    expect(plan.tensors[plan.inputs[1]!]).toMatchObject({ name: 'categorical', dtype: INT64, dims: [-1, 8] });
  });

  it('lays out float_data, double_data, int64_data and int32_data initializers as little-endian bytes', () => {
    const initializers = [
      create(TensorProtoSchema, { name: 'f', dims: [2n], dataType: FLOAT, floatData: [1.5, -2] }),
      create(TensorProtoSchema, { name: 'd', dims: [1n], dataType: TensorProto_DataType.DOUBLE, doubleData: [0.25] }),
      create(TensorProtoSchema, { name: 'l', dims: [2n], dataType: INT64, int64Data: [7n, -3n] }),
      create(TensorProtoSchema, { name: 'i', dims: [1n, 1n], dataType: TensorProto_DataType.INT32, int32Data: [-5] }),
      create(TensorProtoSchema, { name: 'h', dims: [1n], dataType: TensorProto_DataType.FLOAT16, int32Data: [0x3c00] }),
    ];
    const plan = planFromOnnx(small({ initializers }), { modelName: 's', maxBatchSize: 8 });
    const bytes = (name: string) => Array.from(tensorOf(plan, name).data!);
    expect(floats(tensorOf(plan, 'f').data)).toEqual([1.5, -2]);
    expect(new DataView(new Uint8Array(bytes('d')).buffer).getFloat64(0, true)).toBe(0.25);
    expect(bytes('l')).toEqual([7, 0, 0, 0, 0, 0, 0, 0, 253, 255, 255, 255, 255, 255, 255, 255]);
    expect(bytes('i')).toEqual([251, 255, 255, 255]);
    expect(tensorOf(plan, 'i').dims).toEqual([1, 1]);
    expect(bytes('h')).toEqual([0x00, 0x3c]);
  });

  it('turns Constant nodes into initializers and keeps defaulted graph inputs as initializers', () => {
    const value = create(TensorProtoSchema, { dims: [4n], dataType: FLOAT, floatData: [1, 2, 3, 4] });
    const constant = (output: string, attribute: ReturnType<typeof attrFloat>) => node('Constant', [], [output], { attributes: [attribute] });
    const bytes = serializeModel({
      name: 'consts',
      doc: '',
      inputs: [tensorValueInfo('x', FLOAT, ['batch', 4]), tensorValueInfo('bias', FLOAT, [4])],
      outputs: [tensorValueInfo('y', FLOAT, ['batch', 4])],
      initializers: [floatInitializer('bias', [4], new Float32Array([0, 0, 0, 1]))],
      nodes: [
        constant('c', create(AttributeProtoSchema, { name: 'value', type: AttributeProto_AttributeType.TENSOR, t: value })),
        constant('s', attrFloat('value_float', 0.5)),
        constant('axes', attrInts('value_ints', [1])),
        node('Add', ['x', 'c'], ['t']),
        node('Mul', ['t', 's'], ['u']),
        node('Add', ['u', 'bias'], ['y']),
      ],
    });
    const plan = planFromOnnx(bytes, { modelName: 'consts', maxBatchSize: 4 });
    expect(plan.inputs.map((i) => plan.tensors[i]!.name)).toEqual(['x']);
    expect(plan.nodes.map((n) => n.opType)).toEqual(['Add', 'Mul', 'Add']);
    expect(tensorOf(plan, 'c')).toMatchObject({ initializer: true, dims: [4], dtype: FLOAT });
    expect(floats(tensorOf(plan, 'c').data)).toEqual([1, 2, 3, 4]);
    expect(tensorOf(plan, 's')).toMatchObject({ initializer: true, dims: [], dtype: FLOAT });
    expect(floats(tensorOf(plan, 's').data)).toEqual([0.5]);
    expect(tensorOf(plan, 'axes')).toMatchObject({ initializer: true, dims: [1], dtype: INT64 });
    expect(tensorOf(plan, 'bias')).toMatchObject({ initializer: true, dims: [4] });
    expect(plan.io.inputs.map((t) => t.name)).toEqual(['x']);
  });

  it('keeps nodes of other domains by qualified name, so the executor refuses them by name', () => {
    const plan = planFromOnnx(sample('fraud_gbdt'), { modelName: 'fraud_gbdt:1', maxBatchSize: 64 });
    expect(plan.nodes.map((n) => n.opType)).toContain('ai.onnx.ml.TreeEnsembleRegressor');
    const tree = plan.nodes.find((n) => n.opType.startsWith('ai.onnx.ml.'))!;
    expect(tree.attributes.find((a) => a.name === 'aggregate_function')).toEqual({ name: 'aggregate_function', type: 'string', value: 'SUM' });
    expect(tree.attributes.some((a) => a.type === 'floats')).toBe(true);
    expect(tree.attributes.some((a) => a.type === 'ints')).toBe(true);
  });

  it('maps every attribute type, clamps int64 sentinels and marks omitted operands -1', () => {
    const bytes = small({
      nodes: [
        node('Custom', ['x', '', 'x'], ['y', '', ''], {
          domain: 'example.org',
          attributes: [
            attrInt('big', 0),
            attrFloat('f', 0.25),
            attrInts('ints', [1, -2]),
            attrFloats('floats', [0.5, 1]),
            attrString('s', 'héllo'),
            create(AttributeProtoSchema, { name: 'huge', type: AttributeProto_AttributeType.INT, i: 9223372036854775807n }),
          ],
        }),
      ],
    });
    const plan = planFromOnnx(bytes, { modelName: 'attrs', maxBatchSize: 2 });
    const n = plan.nodes[0]!;
    expect(n.opType).toBe('example.org.Custom');
    expect(n.inputs).toEqual([plan.inputs[0], -1, plan.inputs[0]]);
    expect(n.outputs).toEqual([plan.outputs[0]]); // trailing omitted outputs dropped
    expect(n.attributes).toEqual([
      { name: 'big', type: 'int', value: 0 },
      { name: 'f', type: 'float', value: 0.25 },
      { name: 'ints', type: 'ints', value: [1, -2] },
      { name: 'floats', type: 'floats', value: [0.5, 1] },
      { name: 's', type: 'string', value: 'héllo' },
      { name: 'huge', type: 'int', value: Number.MAX_SAFE_INTEGER },
    ]);
  });

  it('fixes the batch dimension only with batching, and names the input with any other dynamic dimension', () => {
    const dims = (plan: OnnxPlan) => plan.tensors[plan.inputs[0]!]!.dims;
    expect(dims(planFromOnnx(small({}), { modelName: 's', maxBatchSize: 8 }))).toEqual([-1, 4]);
    const fixed = small({ inputs: [tensorValueInfo('x', FLOAT, [3, 4])], outputs: [tensorValueInfo('y', FLOAT, [3, 4])] });
    expect(dims(planFromOnnx(fixed, { modelName: 's', maxBatchSize: 0 }))).toEqual([3, 4]);

    const inner = error(() => planFromOnnx(small({ inputs: [tensorValueInfo('x', FLOAT, ['batch', 'width'])] }), { modelName: 's:1', maxBatchSize: 8 }));
    expect(inner).toMatchObject({ code: 'FAILED_PRECONDITION', model: 's:1' });
    expect(inner.message).toMatch(/^model 's:1': input 'x': dimension 1 is dynamic/);
    const unbatched = error(() => planFromOnnx(small({}), { modelName: 's', maxBatchSize: 0 }));
    expect(unbatched.message).toMatch(/input 'x': dimension 0 is dynamic/);
    const notBatch = error(() => planFromOnnx(fixed, { modelName: 's', maxBatchSize: 8 }));
    expect(notBatch.message).toMatch(/input 'x': the first dimension must be dynamic \(the batch\) with max_batch_size 8, got 3/);
  });

  it('refuses external data with a clear error', () => {
    const external = create(TensorProtoSchema, {
      name: 'w',
      dims: [4n],
      dataType: FLOAT,
      dataLocation: TensorProto_DataLocation.EXTERNAL,
      externalData: [create(StringStringEntryProtoSchema, { key: 'location', value: 'weights.bin' })],
    });
    const caught = error(() => planFromOnnx(small({ initializers: [external] }), { modelName: 'ext', maxBatchSize: 8 }));
    expect(caught.code).toBe('FAILED_PRECONDITION');
    expect(caught.message).toMatch(/initializer 'w' keeps its data in an external file \('weights\.bin'\)/);
  });

  it('refuses malformed models with INVALID_ARGUMENT naming the problem', () => {
    expect(error(() => planFromOnnx(new Uint8Array([0xff, 0xff, 0xff]), { modelName: 'junk', maxBatchSize: 0 })).code).toBe('INVALID_ARGUMENT');
    const dangling = error(() => planFromOnnx(small({ nodes: [node('Add', ['x', 'nope'], ['y'], { name: 'add0' })] }), { modelName: 'd', maxBatchSize: 8 }));
    expect(dangling.message).toMatch(/node 'add0' reads 'nope', which no input, initializer or earlier node defines/);
    const short = create(TensorProtoSchema, { name: 'w', dims: [4n], dataType: FLOAT, rawData: new Uint8Array(8) });
    expect(error(() => planFromOnnx(small({ initializers: [short] }), { modelName: 'r', maxBatchSize: 8 })).message).toMatch(
      /initializer 'w': raw_data holds 8 bytes, expected 16/,
    );
    const missing = small({ outputs: [tensorValueInfo('z', FLOAT, ['batch', 4])] });
    expect(error(() => planFromOnnx(missing, { modelName: 'o', maxBatchSize: 8 })).message).toMatch(/output 'z' is not produced by any node/);
    expect(error(() => planFromOnnx(small({ opsets: [{ domain: 'ai.onnx.ml', version: 3 }] }), { modelName: 'o', maxBatchSize: 8 })).message).toMatch(/no ai\.onnx opset/);
  });
});
