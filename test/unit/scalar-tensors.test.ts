// Scalar (rank-0) tensors, from the ONNX model to the request: onnxruntime
// reports them with shape [], auto-complete keeps dims [] for a model without
// batching (and Triton's dims [1] + empty reshape for a batch of scalars),
// validation accepts both ways of writing a scalar, requests send shape []
// (or the config's dims for a Triton-style config), and the response shows
// the shape the config declares.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from '@bufbuild/protobuf';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema, type ModelInferRequest } from '../../src/generated/grpc_service_pb.js';
import { DataType, type ModelConfig } from '../../src/generated/model_config_pb.js';
import { completeModelConfig, type ModelIo } from '../../src/repository/config-autocomplete.js';
import { ModelConfigError, parseModelConfigText, validateModelConfig } from '../../src/repository/model-config.js';
import { ortTypeToDataType } from '../../src/repository/datatypes.js';
import { prepareInference } from '../../src/tensor/infer-request.js';
import { externalShape, signatureFromConfig, type ModelSignature } from '../../src/tensor/model-signature.js';
import { buildInferResponse } from '../../src/inference/infer-response.js';
import { checkEnqueue, fillBatcherOptions } from '../../src/native/batcher-options.js';
import { fromOrtTensor, toOrtTensor } from '../../src/workers/ort-tensors.js';
import type { TensorPayload } from '../../src/workers/worker-protocol.js';
import { ServingError } from '../../src/common/serving-error.js';
import { writeScalarModels } from '../fixtures/scalar-models.js';

let repo: string;
const io = new Map<string, ModelIo>();

/** The model's I/O as a worker reads it from its session (inference-worker.ts describe()). */
async function sessionIo(name: string): Promise<ModelIo> {
  const session = await ort.InferenceSession.create(join(repo, name, '1', 'model.onnx'));
  try {
    const info = (meta: ort.InferenceSession.ValueMetadata) => {
      if (!meta.isTensor) throw new Error(`${meta.name} is not a tensor`);
      return {
        name: meta.name,
        dataType: ortTypeToDataType(meta.type) ?? DataType.TYPE_INVALID,
        shape: meta.shape.map((dim) => (typeof dim === 'number' && dim >= 0 ? dim : -1)),
      };
    };
    return { inputs: session.inputMetadata.map(info), outputs: session.outputMetadata.map(info) };
  } finally {
    await session.release();
  }
}

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), 'hotpath-scalars-'));
  await writeScalarModels(repo, 'auto');
  for (const name of ['dot', 'add_scalars', 'scale_batch']) io.set(name, await sessionIo(name));
});

afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

const f32 = (...v: number[]) => new Uint8Array(Float32Array.from(v).buffer);

function autoCompleted(name: string): ModelConfig {
  const config = completeModelConfig(undefined, name, io.get(name)!);
  return validateModelConfig(config, { file: name, modelName: name }).config;
}

function tritonConfig(text: string, name: string): ModelConfig {
  const parsed = parseModelConfigText(text, `${name}/config.pbtxt`).config;
  const completed = completeModelConfig(parsed, name, io.get(name)!);
  return validateModelConfig(completed, { file: name, modelName: name }).config;
}

const TRITON_ADD =
  'max_batch_size: 0\n' +
  'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } },' +
  ' { name: "y" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } } ]\n' +
  'output [ { name: "z" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] } } ]\n';

function addRequest(shape: bigint[]): ModelInferRequest {
  return create(ModelInferRequestSchema, {
    modelName: 'add_scalars',
    inputs: [
      { name: 'x', datatype: 'FP32', shape },
      { name: 'y', datatype: 'FP32', shape },
    ],
    rawInputContents: [f32(1.5), f32(2.25)],
  });
}

function rejection(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ServingError);
    return (err as ServingError).message;
  }
  throw new Error('expected a rejection');
}

describe('onnxruntime and scalars', () => {
  it('reports a scalar input or output with shape []', () => {
    expect(io.get('dot')!.outputs).toEqual([{ name: 'y', dataType: DataType.TYPE_FP32, shape: [] }]);
    expect(io.get('add_scalars')!.inputs.map((t) => t.shape)).toEqual([[], []]);
    expect(io.get('scale_batch')!.inputs[0]!.shape).toEqual([-1]);
  });

  it('runs a payload with dims [] as a scalar and returns a scalar payload', async () => {
    const session = await ort.InferenceSession.create(join(repo, 'add_scalars', '1', 'model.onnx'));
    try {
      const x: TensorPayload = { name: 'x', type: 'float32', dims: [], data: Float32Array.of(1.5) };
      const y: TensorPayload = { name: 'y', type: 'float32', dims: [], data: Float32Array.of(2.25) };
      const result = await session.run({ x: toOrtTensor(x), y: toOrtTensor(y) });
      const z = fromOrtTensor('z', result['z']);
      expect(z.dims).toEqual([]);
      expect(Array.from(z.data as Float32Array)).toEqual([3.75]);
    } finally {
      await session.release();
    }
  });
});

describe('config for scalars', () => {
  it('auto-completes a model without batching with dims [] and no reshape', () => {
    const dot = autoCompleted('dot');
    expect(dot.maxBatchSize).toBe(0);
    expect(dot.input.map((t) => t.dims)).toEqual([[3n], [3n]]);
    expect(dot.output[0]!.dims).toEqual([]);
    expect(dot.output[0]!.reshape).toBeUndefined();
    const add = autoCompleted('add_scalars');
    expect([...add.input, ...add.output].map((t) => [t.name, t.dims, t.reshape])).toEqual([
      ['x', [], undefined],
      ['y', [], undefined],
      ['z', [], undefined],
    ]);
  });

  it("auto-completes a batch of scalars with Triton's dims [1] and an empty reshape", () => {
    const scale = autoCompleted('scale_batch');
    expect(scale.maxBatchSize).toBeGreaterThan(0);
    expect(scale.input[0]!.dims).toEqual([1n]);
    expect(scale.input[0]!.reshape?.shape).toEqual([]);
  });

  it('accepts a Triton-style scalar (dims [1], reshape []) in a model without batching', () => {
    const add = tritonConfig(TRITON_ADD, 'add_scalars');
    expect(add.input[0]!.dims).toEqual([1n]);
    expect(add.input[0]!.reshape?.shape).toEqual([]);
  });

  it('accepts dims [] without batching and explains the batching form when max_batch_size > 0', () => {
    const ok = parseModelConfigText('input { name: "x" data_type: TYPE_FP32 dims: [] }', 'c').config;
    expect(() => validateModelConfig(ok, { file: 'c', modelName: 'm' })).not.toThrow();
    const batching = parseModelConfigText('max_batch_size: 4 input { name: "x" data_type: TYPE_FP32 }', 'c').config;
    expect(() => validateModelConfig(batching, { file: 'c', modelName: 'm' })).toThrow(
      /input 'x': dims must list at least one dimension when max_batch_size > 0 \(for a batch of scalars write dims: \[1\] with reshape: \{ shape: \[\] \}\), got \[\]/,
    );
  });

  it('tells how to write a scalar when the config disagrees with the model', () => {
    const parsed = parseModelConfigText('input { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }', 'c').config;
    let error: unknown;
    try {
      completeModelConfig(parsed, 'add_scalars', io.get('add_scalars')!);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ModelConfigError);
    expect((error as Error).message).toMatch(
      /input 'x': dims: expected \[\] .*got \[1\]; for a scalar write dims: \[\] or dims: \[1\] with reshape: \{ shape: \[\] \}/,
    );
  });
});

describe('requests with scalars', () => {
  it('auto-completed config: metadata shape [], a request of shape [] reaches the model as [], the answer has shape []', () => {
    const signature = signatureFromConfig(autoCompleted('add_scalars'));
    expect(signature.inputs.map((spec) => externalShape(signature, spec))).toEqual([[], []]);
    const prepared = prepareInference(addRequest([]), signature);
    expect(prepared.inputs.map((input) => input.dims)).toEqual([[], []]);
    const z: TensorPayload = { name: 'z', type: 'float32', dims: [], data: Float32Array.of(3.75) };
    const response = buildInferResponse(addRequest([]), '1', prepared.outputs, [z], false);
    expect(response.outputs[0]!.shape).toEqual([]);
    expect(rejection(() => prepareInference(addRequest([1n]), signature))).toMatch(
      /input 'x': expected rank 0 with shape \[\], got rank 1 with shape \[1\]/,
    );
  });

  it('Triton-style config: the client may send the dims [1] or the scalar []; the answer has the dims [1]', () => {
    const signature = signatureFromConfig(tritonConfig(TRITON_ADD, 'add_scalars'));
    expect(externalShape(signature, signature.inputs[0]!)).toEqual([1]);
    for (const shape of [[1n], []]) {
      const prepared = prepareInference(addRequest(shape), signature);
      expect(prepared.inputs.map((input) => input.dims)).toEqual([[], []]);
    }
    const z: TensorPayload = { name: 'z', type: 'float32', dims: [], data: Float32Array.of(3.75) };
    const response = buildInferResponse(addRequest([1n]), '1', signature.outputs, [z], false);
    expect(response.outputs[0]!.shape).toEqual([1n]);
    expect(rejection(() => prepareInference(addRequest([2n]), signature))).toMatch(/input 'x': expected shape \[1\], got \[2\]/);
  });

  it('batch of scalars: [rows, 1] and [rows] both reach the model as [rows]', () => {
    const signature: ModelSignature = signatureFromConfig(autoCompleted('scale_batch'));
    for (const shape of [[2n, 1n], [2n]]) {
      const request = create(ModelInferRequestSchema, {
        modelName: 'scale_batch',
        inputs: [{ name: 'x', datatype: 'FP32', shape }],
        rawInputContents: [f32(1, 2)],
      });
      const prepared = prepareInference(request, signature);
      expect(prepared.batchSize).toBe(2);
      expect(prepared.inputs[0]!.dims).toEqual([2]);
    }
  });

  it('a scalar needs exactly one element', () => {
    const signature = signatureFromConfig(autoCompleted('add_scalars'));
    const request = addRequest([]);
    request.rawInputContents[0] = f32(1, 2);
    expect(rejection(() => prepareInference(request, signature))).toMatch(
      /input 'x': expected 4 bytes \(1 elements of FP32 for shape \[\]\), got 8 bytes/,
    );
  });
});

describe('the batcher takes rank-0 inputs', () => {
  const options = (dims: number[], maxBatchSize: number) =>
    fillBatcherOptions({
      arena: 'unused',
      owner: 1,
      modelName: 'add_scalars:1',
      inputs: [{ name: 'x', elementBytes: 4, dims }],
      maxBatchSize,
      onBatch: () => undefined,
    });

  it('accepts dims [] unbatched (one element) and per row when batching (one element a row)', () => {
    expect(checkEnqueue(options([], 0), { inputs: [f32(1)], dims: [[]] }).variableDims).toBeNull();
    expect(checkEnqueue(options([], 4), { rows: 3, inputs: [f32(1, 2, 3)], dims: [[]] }).rows).toBe(3);
    expect(() => checkEnqueue(options([], 0), { inputs: [f32(1, 2)], dims: [[]] })).toThrow(
      /input 'x': expected 4 bytes \(1 elements of 4 bytes\), got 8/,
    );
  });
});
