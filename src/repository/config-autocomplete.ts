/**
 * Triton's "auto-complete" of a model configuration from the model itself,
 * for a model directory with no config.pbtxt or a partial one.
 *
 * What the ONNX model says about its inputs and outputs (names, element types,
 * shapes with -1 for dynamic dimensions) fills whatever the config leaves out,
 * and anything the config does say must agree with the model. This mirrors
 * Triton's onnxruntime backend:
 *
 * - A model can batch when every input and output has a dynamic first
 *   dimension. If the config does not set max_batch_size, such a model gets
 *   `defaultMaxBatchSize` (Triton's `default-max-batch-size`, 4) and, when that
 *   is above 1 and no scheduler is configured, an empty `dynamic_batching {}`.
 *   Dims then exclude the batch dimension.
 * - Otherwise max_batch_size stays 0 and dims are the full shape; for a
 *   scalar (rank-0) tensor that is `dims: []`.
 *
 * The result still goes through validateModelConfig, which owns the checks
 * that do not need the model.
 */
import { clone, create } from '@bufbuild/protobuf';
import {
  DataType,
  ModelConfigSchema,
  ModelDynamicBatchingSchema,
  ModelInputSchema,
  ModelInstanceGroup_Kind,
  ModelInstanceGroupSchema,
  ModelOutputSchema,
  ModelTensorReshapeSchema,
  type ModelConfig,
  type ModelInput,
  type ModelOutput,
} from '../generated/model_config_pb.js';
import { dataTypeName } from './datatypes.js';
import { ModelConfigError } from './model-config-error.js';
import { ONNX_BACKEND, ONNX_PLATFORM } from './model-config.js';

/** One model input or output as the ONNX model declares it. */
export interface TensorInfo {
  readonly name: string;
  readonly dataType: DataType;
  /** Full shape, batch dimension included when there is one; -1 = dynamic. */
  readonly shape: readonly number[];
}

export interface ModelIo {
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
}

export interface AutocompleteOptions {
  /** max_batch_size given to a model that can batch when the config sets none. Default 4. */
  readonly defaultMaxBatchSize?: number;
  /** Where errors say the problem is; defaults to the model name. */
  readonly file?: string;
}

/** Triton's default for `--backend-config=default-max-batch-size`. */
export const DEFAULT_MAX_BATCH_SIZE = 4;

/**
 * Returns a completed copy of `config` (the input is not modified); `undefined`
 * stands for a model without config.pbtxt. Throws ModelConfigError when the
 * config names a tensor the model lacks, disagrees with the model's datatype
 * or shape, or asks a model that cannot batch to batch.
 */
export function completeModelConfig(
  config: ModelConfig | undefined,
  modelName: string,
  io: ModelIo,
  opts: AutocompleteOptions = {},
): ModelConfig {
  const file = opts.file ?? modelName;
  const fail = (reason: string): never => {
    throw new ModelConfigError(file, undefined, reason);
  };
  const result = config === undefined ? create(ModelConfigSchema) : clone(ModelConfigSchema, config);

  if (result.name === '') result.name = modelName;
  if (result.platform === '') result.platform = ONNX_PLATFORM;
  if (result.backend === '') result.backend = ONNX_BACKEND;

  checkNamesAndTypes('input', result.input, io.inputs, fail);
  checkNamesAndTypes('output', result.output, io.outputs, fail);

  const batching = decideBatching(result, io, opts.defaultMaxBatchSize ?? DEFAULT_MAX_BATCH_SIZE, fail);

  result.input = completeTensors('input', result.input, io.inputs, batching, fail, (info) =>
    create(ModelInputSchema, { name: info.name }),
  );
  result.output = completeTensors('output', result.output, io.outputs, batching, fail, (info) =>
    create(ModelOutputSchema, { name: info.name }),
  );

  if (result.instanceGroup.length === 0) {
    result.instanceGroup.push(create(ModelInstanceGroupSchema, { count: 1, kind: ModelInstanceGroup_Kind.CPU }));
  }
  return result;
}

type Fail = (reason: string) => never;

function checkNamesAndTypes(
  kind: 'input' | 'output',
  declared: ReadonlyArray<ModelInput | ModelOutput>,
  model: readonly TensorInfo[],
  fail: Fail,
): void {
  const byName = new Map(model.map((info) => [info.name, info]));
  for (const tensor of declared) {
    const info = byName.get(tensor.name);
    if (info === undefined) {
      fail(
        `${kind} '${tensor.name}': not an ${kind} of the ONNX model ` +
          `(the model's ${kind}s are: ${model.map((m) => m.name).join(', ') || 'none'})`,
      );
    }
    if (tensor.dataType !== DataType.TYPE_INVALID && tensor.dataType !== info.dataType) {
      fail(
        `${kind} '${tensor.name}': data_type: expected ${dataTypeName(info.dataType)} (from the ONNX model), ` +
          `got ${dataTypeName(tensor.dataType)}`,
      );
    }
  }
}

/**
 * Sets max_batch_size where the config leaves it to the model, and reports
 * whether dims exclude a batch dimension.
 */
function decideBatching(config: ModelConfig, io: ModelIo, defaultMaxBatchSize: number, fail: Fail): boolean {
  const all = [...io.inputs, ...io.outputs];
  const fixedFirst = all.find((info) => info.shape.length === 0 || info.shape[0] !== -1);
  const canBatch = all.length > 0 && fixedFirst === undefined;

  // Checked here as well as in validateModelConfig: below, a negative value would read as "unset" and be replaced.
  if (config.maxBatchSize < 0) fail(`max_batch_size: expected >= 0, got ${config.maxBatchSize}`);
  if (config.maxBatchSize > 0) {
    if (!canBatch) {
      const culprit = fixedFirst === undefined ? 'it has no inputs or outputs' : `'${fixedFirst.name}' has shape [${fixedFirst.shape.join(', ')}]`;
      fail(
        `max_batch_size: expected 0, got ${config.maxBatchSize}; the ONNX model cannot batch because ` +
          `every input and output needs a dynamic first dimension and ${culprit}`,
      );
    }
    return true;
  }
  // proto3 cannot tell "max_batch_size: 0" from unset. Dims written with the
  // full rank show the author means a non-batching model, so keep 0 then.
  if (!canBatch || writesFullRank(config, io) || defaultMaxBatchSize <= 0) return false;

  config.maxBatchSize = defaultMaxBatchSize;
  if (defaultMaxBatchSize > 1 && config.schedulingChoice.case === undefined) {
    config.schedulingChoice = { case: 'dynamicBatching', value: create(ModelDynamicBatchingSchema) };
  }
  return true;
}

function writesFullRank(config: ModelConfig, io: ModelIo): boolean {
  const shapes = new Map([...io.inputs, ...io.outputs].map((info) => [info.name, info.shape]));
  return [...config.input, ...config.output].some(
    (tensor) =>
      tensor.reshape === undefined &&
      tensor.dims.length > 0 &&
      tensor.dims.length === (shapes.get(tensor.name)?.length ?? -1),
  );
}

function completeTensors<T extends ModelInput | ModelOutput>(
  kind: 'input' | 'output',
  declared: T[],
  model: readonly TensorInfo[],
  batching: boolean,
  fail: Fail,
  make: (info: TensorInfo) => T,
): T[] {
  const byName = new Map(declared.map((tensor) => [tensor.name, tensor]));
  // Declared tensors keep their order; the model's other tensors follow in model order.
  const result = [...declared];
  for (const info of model) {
    if (!byName.has(info.name)) {
      const tensor = make(info);
      result.push(tensor);
      byName.set(info.name, tensor);
    }
  }
  const infos = new Map(model.map((info) => [info.name, info]));
  for (const tensor of result) {
    const info = infos.get(tensor.name)!;
    if (tensor.dataType === DataType.TYPE_INVALID) tensor.dataType = info.dataType;
    const modelDims = batching ? info.shape.slice(1) : [...info.shape];
    if (tensor.dims.length === 0 && tensor.reshape === undefined) {
      if (modelDims.length === 0 && batching) {
        // A batch of scalars: Triton's idiom is dims [1] seen by the model as [].
        tensor.dims = [1n];
        tensor.reshape = create(ModelTensorReshapeSchema, { shape: [] });
      } else {
        // Without batching a scalar keeps dims [] (its whole shape), so
        // metadata shows shape [] and V2 clients send [].
        tensor.dims = modelDims.map(BigInt);
      }
      continue;
    }
    // The model sees reshape when there is one, so that is what must fit.
    const seen = (tensor.reshape?.shape ?? tensor.dims).map(Number);
    if (!dimsFit(modelDims, seen)) {
      const field = tensor.reshape === undefined ? 'dims' : 'reshape.shape';
      const scalarHint = modelDims.length > 0
        ? ''
        : batching
          ? '; for a batch of scalars write dims: [1] with reshape: { shape: [] }'
          : '; for a scalar write dims: [] or dims: [1] with reshape: { shape: [] }';
      fail(
        `${kind} '${tensor.name}': ${field}: expected [${modelDims.join(', ')}] ` +
          `(the ONNX model's shape${batching ? ' without the batch dimension' : ''}), got [${seen.join(', ')}]${scalarHint}`,
      );
    }
  }
  return result;
}

/** Same rank, and every dimension the model fixes is written with that value. */
function dimsFit(modelDims: readonly number[], configDims: readonly number[]): boolean {
  return (
    modelDims.length === configDims.length &&
    modelDims.every((dim, i) => dim === -1 || dim === configDims[i])
  );
}
