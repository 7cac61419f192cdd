/**
 * Turns a worker's output tensors into a ModelInferResponse: outputs in the
 * requested order, raw bytes in `raw_output_contents`, `id` and version echoed.
 */
import { create } from '@bufbuild/protobuf';
import {
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../generated/grpc_service_pb.js';
import { elementCount, resolveReshape } from '../tensor/shape.js';
import { typedArrayBytes, type NumericArray } from '../tensor/wire-types.js';
import type { TensorPayload } from '../workers/worker-protocol.js';
import type { TensorSpec } from '../tensor/model-signature.js';
import { internal } from '../common/serving-error.js';

export function buildInferResponse(
  request: ModelInferRequest,
  version: string,
  outputs: readonly TensorSpec[],
  produced: readonly TensorPayload[],
  batched: boolean,
): ModelInferResponse {
  const response = create(ModelInferResponseSchema, {
    modelName: request.modelName,
    modelVersion: version,
    id: request.id,
  });
  for (const spec of outputs) {
    const tensor = producedNamed(produced, spec.name);
    if (tensor === undefined) throw internal(`model did not produce output '${spec.name}'`);
    response.outputs.push({
      $typeName: 'inference.ModelInferResponse.InferOutputTensor',
      name: spec.name,
      datatype: spec.datatype,
      shape: bigintDims(externalDims(spec, tensor.dims, batched)),
      parameters: {},
    });
    response.rawOutputContents.push(
      tensor.type === 'string' ? (tensor.data as Uint8Array) : typedArrayBytes(tensor.data as NumericArray),
    );
  }
  return response;
}

/** The tensor called `name` (a model has a handful of outputs: a scan, no Map per response). */
function producedNamed(produced: readonly TensorPayload[], name: string): TensorPayload | undefined {
  for (const tensor of produced) if (tensor.name === name) return tensor;
  return undefined;
}

function bigintDims(dims: readonly number[]): bigint[] {
  const out = new Array<bigint>(dims.length);
  for (let i = 0; i < dims.length; i += 1) out[i] = BigInt(dims[i]!);
  return out;
}

/** The shape clients see: the config dims (undoing `reshape`), with the batch dim kept. */
function externalDims(spec: TensorSpec, modelDims: readonly number[], batched: boolean): readonly number[] {
  if (spec.reshape === undefined) return modelDims;
  const rows = batched ? (modelDims[0] ?? 1) : 1;
  const count = elementCount(modelDims);
  const perRow = rows === 0 ? 0 : count / rows;
  const dims = resolveReshape(spec.dims, perRow);
  if (dims === undefined) throw internal(`output '${spec.name}' of shape [${modelDims.join(',')}] does not fit config dims [${spec.dims.join(',')}]`);
  return batched ? [rows, ...dims] : dims;
}
