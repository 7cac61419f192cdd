import { describe, expect, it } from 'vitest';
import { DataType, ModelInstanceGroup_Kind } from '../../src/generated/model_config_pb.js';
import {
  completeModelConfig,
  DEFAULT_MAX_BATCH_SIZE,
  type ModelIo,
} from '../../src/repository/config-autocomplete.js';
import {
  bytesPerElement,
  dataTypeToOrtType,
  dataTypeToWire,
  ortTypeToDataType,
  wireToDataType,
} from '../../src/repository/datatypes.js';
import { ModelConfigError, parseModelConfigText, validateModelConfig } from '../../src/repository/model-config.js';

const BATCHING: ModelIo = {
  inputs: [
    { name: 'features', dataType: DataType.TYPE_FP32, shape: [-1, 32] },
    { name: 'ids', dataType: DataType.TYPE_INT64, shape: [-1, -1] },
  ],
  outputs: [{ name: 'score', dataType: DataType.TYPE_FP32, shape: [-1, 1] }],
};

const FIXED: ModelIo = {
  inputs: [{ name: 'image', dataType: DataType.TYPE_UINT8, shape: [1, 3, 224, 224] }],
  outputs: [{ name: 'logits', dataType: DataType.TYPE_FP32, shape: [1, 1000] }],
};

const parse = (text: string) => parseModelConfigText(text, 'config.pbtxt').config;

function completionError(text: string | undefined, io: ModelIo): ModelConfigError {
  try {
    completeModelConfig(text === undefined ? undefined : parse(text), 'ranker', io, { file: 'models/ranker/config.pbtxt' });
  } catch (err) {
    expect(err).toBeInstanceOf(ModelConfigError);
    return err as ModelConfigError;
  }
  throw new Error('expected auto-complete to fail');
}

describe('completeModelConfig', () => {
  it('builds a batching config from a model with dynamic first dims', () => {
    const config = completeModelConfig(undefined, 'ranker', BATCHING);
    expect(config.name).toBe('ranker');
    expect(config.platform).toBe('onnxruntime_onnx');
    expect(config.backend).toBe('onnxruntime');
    expect(config.maxBatchSize).toBe(DEFAULT_MAX_BATCH_SIZE);
    expect(DEFAULT_MAX_BATCH_SIZE).toBe(4);
    expect(config.schedulingChoice.case).toBe('dynamicBatching');
    expect(config.input.map((i) => [i.name, i.dataType, i.dims])).toEqual([
      ['features', DataType.TYPE_FP32, [32n]],
      ['ids', DataType.TYPE_INT64, [-1n]],
    ]);
    expect(config.output.map((o) => [o.name, o.dims])).toEqual([['score', [1n]]]);
    expect(config.instanceGroup).toHaveLength(1);
    expect(config.instanceGroup[0]).toMatchObject({ count: 1, kind: ModelInstanceGroup_Kind.CPU });
    // The completed config passes validation unchanged.
    expect(() => validateModelConfig(config, { file: 'ranker', modelName: 'ranker' })).not.toThrow();
  });

  it('uses the configured default max batch size', () => {
    expect(completeModelConfig(undefined, 'ranker', BATCHING, { defaultMaxBatchSize: 32 }).maxBatchSize).toBe(32);
    const single = completeModelConfig(undefined, 'ranker', BATCHING, { defaultMaxBatchSize: 1 });
    expect(single.maxBatchSize).toBe(1);
    // Batches of one gain nothing from a batcher, so none is added (as in Triton).
    expect(single.schedulingChoice.case).toBeUndefined();
  });

  it('builds a non-batching config with full shapes when a first dim is fixed', () => {
    const config = completeModelConfig(undefined, 'vision', FIXED);
    expect(config.maxBatchSize).toBe(0);
    expect(config.schedulingChoice.case).toBeUndefined();
    expect(config.input[0]?.dims).toEqual([1n, 3n, 224n, 224n]);
    expect(config.output[0]?.dims).toEqual([1n, 1000n]);
  });

  it('keeps max_batch_size and dims the config sets, filling only what is missing', () => {
    const config = completeModelConfig(
      parse('max_batch_size: 64 input { name: "ids" dims: [ 16 ] } instance_group { count: 3 }'),
      'ranker',
      BATCHING,
    );
    expect(config.maxBatchSize).toBe(64);
    // Config order first, then the model's remaining tensors.
    expect(config.input.map((i) => i.name)).toEqual(['ids', 'features']);
    expect(config.input[0]).toMatchObject({ dataType: DataType.TYPE_INT64, dims: [16n] });
    expect(config.output[0]?.name).toBe('score');
    expect(config.instanceGroup).toHaveLength(1);
    expect(config.instanceGroup[0]?.count).toBe(3);
    expect(config.schedulingChoice.case).toBeUndefined();
  });

  it('keeps a non-batching config whose dims include the batch dimension', () => {
    const config = completeModelConfig(parse('input { name: "features" dims: [ 2, 32 ] }'), 'ranker', BATCHING);
    expect(config.maxBatchSize).toBe(0);
    expect(config.input[1]?.dims).toEqual([-1n, -1n]);
  });

  it('does not modify the parsed config', () => {
    const original = parse('name: "ranker"');
    completeModelConfig(original, 'ranker', BATCHING);
    expect(original.input).toHaveLength(0);
    expect(original.maxBatchSize).toBe(0);
  });

  it('turns a batch of scalars into dims [1] with an empty reshape', () => {
    const io: ModelIo = {
      inputs: [{ name: 'x', dataType: DataType.TYPE_FP32, shape: [-1] }],
      outputs: [{ name: 'y', dataType: DataType.TYPE_FP32, shape: [-1] }],
    };
    const config = completeModelConfig(undefined, 'scalar', io);
    expect(config.input[0]?.dims).toEqual([1n]);
    expect(config.input[0]?.reshape?.shape).toEqual([]);
    expect(() => validateModelConfig(config, { file: 'scalar', modelName: 'scalar' })).not.toThrow();
  });

  it('rejects a config input the model does not have', () => {
    expect(completionError('input { name: "nope" data_type: TYPE_FP32 dims: [1] }', BATCHING).message).toMatch(
      /^models\/ranker\/config\.pbtxt: input 'nope': not an input of the ONNX model \(the model's inputs are: features, ids\)$/,
    );
    expect(completionError('output { name: "extra" }', BATCHING).reason).toMatch(/output 'extra': not an output of the ONNX model/);
  });

  it('rejects a datatype that differs from the model', () => {
    expect(completionError('input { name: "ids" data_type: TYPE_INT32 }', BATCHING).reason).toMatch(
      /input 'ids': data_type: expected TYPE_INT64 \(from the ONNX model\), got TYPE_INT32/,
    );
  });

  it('rejects max_batch_size on a model that cannot batch', () => {
    expect(completionError('max_batch_size: 8', FIXED).reason).toMatch(
      /max_batch_size: expected 0, got 8; the ONNX model cannot batch .* 'image' has shape \[1, 3, 224, 224\]/,
    );
  });

  it('rejects a negative max_batch_size instead of replacing it with the default', () => {
    expect(completionError('max_batch_size: -1', BATCHING).reason).toBe('max_batch_size: expected >= 0, got -1');
  });

  it('rejects dims that disagree with the model shape', () => {
    expect(completionError('max_batch_size: 4 input { name: "features" dims: [ 16 ] }', BATCHING).reason).toMatch(
      /input 'features': dims: expected \[32\] \(the ONNX model's shape without the batch dimension\), got \[16\]/,
    );
    expect(completionError('input { name: "image" dims: [ 3, 224, 224 ] }', FIXED).reason).toMatch(
      /input 'image': dims: expected \[1, 3, 224, 224\] \(the ONNX model's shape\), got \[3, 224, 224\]/,
    );
  });

  it('checks reshape, not dims, against the model when reshape is given', () => {
    const ok = completeModelConfig(
      parse('max_batch_size: 4 input { name: "features" dims: [4, 8] reshape { shape: [32] } }'),
      'ranker',
      BATCHING,
    );
    expect(ok.input[0]?.dims).toEqual([4n, 8n]);
    expect(completionError('max_batch_size: 4 input { name: "features" dims: [32] reshape { shape: [4, 8] } }', BATCHING).reason)
      .toMatch(/input 'features': reshape.shape: expected \[32\]/);
  });
});

describe('datatypes', () => {
  it('maps every Triton datatype to its KServe wire name and back', () => {
    const pairs: Array<[DataType, string]> = [
      [DataType.TYPE_BOOL, 'BOOL'], [DataType.TYPE_UINT8, 'UINT8'], [DataType.TYPE_UINT16, 'UINT16'],
      [DataType.TYPE_UINT32, 'UINT32'], [DataType.TYPE_UINT64, 'UINT64'], [DataType.TYPE_INT8, 'INT8'],
      [DataType.TYPE_INT16, 'INT16'], [DataType.TYPE_INT32, 'INT32'], [DataType.TYPE_INT64, 'INT64'],
      [DataType.TYPE_FP16, 'FP16'], [DataType.TYPE_FP32, 'FP32'], [DataType.TYPE_FP64, 'FP64'],
      [DataType.TYPE_STRING, 'BYTES'], [DataType.TYPE_BF16, 'BF16'],
    ];
    for (const [dataType, wire] of pairs) {
      expect(dataTypeToWire(dataType)).toBe(wire);
      expect(wireToDataType(wire)).toBe(dataType);
    }
    expect(dataTypeToWire(DataType.TYPE_INVALID)).toBeUndefined();
    expect(wireToDataType('STRING')).toBeUndefined();
  });

  it('maps onnxruntime-node tensor types both ways, with no ORT type for BF16', () => {
    const ortTypes = ['bool', 'uint8', 'int8', 'uint16', 'int16', 'int32', 'int64', 'uint32', 'uint64', 'float16', 'float32', 'float64', 'string'];
    for (const ort of ortTypes) {
      const dataType = ortTypeToDataType(ort);
      expect(dataType).toBeDefined();
      expect(dataTypeToOrtType(dataType!)).toBe(ort);
    }
    expect(ortTypeToDataType('string')).toBe(DataType.TYPE_STRING);
    expect(dataTypeToOrtType(DataType.TYPE_BF16)).toBeUndefined();
    expect(ortTypeToDataType('bfloat16')).toBeUndefined();
  });

  it('gives element sizes, none for BYTES', () => {
    expect(bytesPerElement(DataType.TYPE_BOOL)).toBe(1);
    expect(bytesPerElement(DataType.TYPE_FP16)).toBe(2);
    expect(bytesPerElement(DataType.TYPE_BF16)).toBe(2);
    expect(bytesPerElement(DataType.TYPE_INT32)).toBe(4);
    expect(bytesPerElement(DataType.TYPE_UINT64)).toBe(8);
    expect(bytesPerElement(DataType.TYPE_FP64)).toBe(8);
    expect(bytesPerElement(DataType.TYPE_STRING)).toBeUndefined();
    expect(bytesPerElement(DataType.TYPE_INVALID)).toBeUndefined();
  });
});
