/**
 * The request-facing view of a model version, derived once at load time from
 * its completed ModelConfig: what a ModelInfer request must look like and what
 * the model returns. The request path consults only this, never the config.
 *
 * It lives with the tensor types, below the repository (which derives it) and
 * the request path (which validates against it). Pure; safe in any thread.
 */
import { DataType, type ModelConfig, type ModelInput, type ModelOutput } from '../generated/model_config_pb.js';
import { WIRE_DATATYPES, wireToOrtType, wireTypeInfo, type OrtTensorType, type WireDatatype } from './wire-types.js';

export interface TensorSpec {
  readonly name: string;
  readonly datatype: WireDatatype;
  readonly ortType: OrtTensorType;
  /** Dims per the config, batch dimension excluded; -1 = variable. */
  readonly dims: readonly number[];
  /** The shape the model itself sees (config `reshape`), batch excluded; undefined = same as dims. */
  readonly reshape: readonly number[] | undefined;
}

export interface ModelSignature {
  readonly name: string;
  readonly maxBatchSize: number;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly inputsByName: ReadonlyMap<string, TensorSpec>;
  /** Each input's place in `inputs` (the model's order, which a batch's inputs follow). */
  readonly inputIndex: ReadonlyMap<string, number>;
  readonly outputsByName: ReadonlyMap<string, TensorSpec>;
}

export function signatureFromConfig(config: ModelConfig): ModelSignature {
  const inputs = config.input.map((input) => tensorSpec(config.name, input));
  const outputs = config.output.map((output) => tensorSpec(config.name, output));
  return {
    name: config.name,
    maxBatchSize: config.maxBatchSize,
    inputs,
    outputs,
    inputsByName: new Map(inputs.map((spec) => [spec.name, spec])),
    inputIndex: new Map(inputs.map((spec, i) => [spec.name, i])),
    outputsByName: new Map(outputs.map((spec) => [spec.name, spec])),
  };
}

/** The full shape clients see in metadata: a leading -1 batch dim when batching. */
export function externalShape(signature: ModelSignature, spec: TensorSpec): number[] {
  return signature.maxBatchSize > 0 ? [-1, ...spec.dims] : [...spec.dims];
}

function tensorSpec(model: string, tensor: ModelInput | ModelOutput): TensorSpec {
  const datatype = WIRE_DATATYPES.find((wire) => wireTypeInfo(wire).config === tensor.dataType);
  if (datatype === undefined) {
    const name = DataType[tensor.dataType] ?? String(tensor.dataType);
    throw new Error(`model '${model}' tensor '${tensor.name}': datatype ${name} is not supported by onnxruntime-node`);
  }
  return {
    name: tensor.name,
    datatype,
    ortType: wireToOrtType(datatype),
    dims: tensor.dims.map(Number),
    reshape: tensor.reshape ? tensor.reshape.shape.map(Number) : undefined,
  };
}
