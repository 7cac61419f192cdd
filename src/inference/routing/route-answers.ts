/**
 * The parts of a routed answer that no model produced: the response
 * parameters every routed answer carries (`hotpath_arm`, and
 * `hotpath_degraded: true` for a fallback's), the default outputs a route
 * answers with while an arm's breaker is open, and the numbers of an answer's
 * outputs for the shadow comparison.
 */
import { create } from '@bufbuild/protobuf';
import {
  InferParameterSchema,
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../generated/grpc_service_pb.js';
import { invalidArgument } from '../../common/serving-error.js';
import { echo } from '../../common/echo.js';
import type { ModelVersion } from '../../repository/model-version.js';
import { encodeBytesTensor } from '../../tensor/bytes-codec.js';
import { prepareInference } from '../../tensor/infer-request.js';
import { copyToTypedArray, isWireDatatype, typedArrayBytes, wireTypeInfo, type WireDatatype } from '../../tensor/wire-types.js';
import { fallbackOutputShape, type FallbackOutput } from '../../routing/routes-config.js';
import type { ModelSignature } from '../../routing/route-compatibility.js';
import type { NumericValues } from '../../routing/shadow-compare.js';
import { floatToHalf, halfToFloat } from '../../tensor/float16.js';

/** The response parameter naming the arm that answered. */
export const ARM_PARAMETER = 'hotpath_arm';
/** The response parameter set (true) on an answer from a route's fallback. */
export const DEGRADED_PARAMETER = 'hotpath_degraded';

/**
 * The route's answer made from an arm's `response`: its name, and the arm
 * (and degraded) parameters. A copy: the arm's answer may be shared (the
 * response cache's waiters, the shadow comparison), and answers are values.
 * The tensors are shared with it, never written.
 */
export function markRouteAnswer(response: ModelInferResponse, route: string, arm: string, degraded: boolean): ModelInferResponse {
  const parameters = { ...response.parameters };
  parameters[ARM_PARAMETER] = create(InferParameterSchema, { parameterChoice: { case: 'stringParam', value: arm } });
  if (degraded) parameters[DEGRADED_PARAMETER] = create(InferParameterSchema, { parameterChoice: { case: 'boolParam', value: true } });
  return create(ModelInferResponseSchema, { ...response, modelName: route, parameters });
}

/**
 * The answer made of a route's default outputs, for `request`: each
 * requested output (all route outputs when none is named) filled with its
 * configured value, in the route output's shape with the request's batch
 * size. With the stable arm's version at hand the request is first checked
 * as that model would check it (INVALID_ARGUMENT otherwise), so a malformed
 * request is not answered 200 because a breaker happens to be open.
 * model_version is '' (no model scored it).
 */
export function defaultOutputsAnswer(
  request: ModelInferRequest,
  signature: ModelSignature,
  defaults: readonly FallbackOutput[],
  stable: ModelVersion | undefined,
): ModelInferResponse {
  let batchSize: number;
  let names: string[];
  if (stable !== undefined) {
    const prepared = prepareInference(request, stable.signature);
    batchSize = prepared.batchSize;
    names = prepared.outputs.map((spec) => spec.name);
  } else {
    batchSize = requestBatchSize(request, signature);
    names = request.outputs.length === 0 ? signature.outputs.map((o) => o.name) : request.outputs.map((o) => o.name);
  }
  const byName = new Map(defaults.map((d) => [d.name, d]));
  const response = create(ModelInferResponseSchema, { modelName: request.modelName, modelVersion: '', id: request.id });
  for (const name of names) {
    const output = signature.outputs.find((o) => o.name === name);
    const value = byName.get(name);
    if (output === undefined || value === undefined) {
      throw invalidArgument(`unknown output ${echo(name)} requested from route ${echo(request.modelName)}; expected one of: ${signature.outputs.map((o) => `'${o.name}'`).join(', ')}`);
    }
    const shape = fallbackOutputShape(output.shape, batchSize);
    const count = shape.reduce((product, dim) => product * dim, 1);
    response.outputs.push({
      $typeName: 'inference.ModelInferResponse.InferOutputTensor',
      name,
      datatype: value.datatype,
      shape: shape.map((dim) => BigInt(dim)),
      parameters: {},
    });
    response.rawOutputContents.push(filled(value.datatype, value.value, count));
  }
  return response;
}

/** The rows of a request to a batching route (first dimension dynamic), else 1. */
function requestBatchSize(request: ModelInferRequest, signature: ModelSignature): number {
  for (const input of request.inputs) {
    const spec = signature.inputs.find((s) => s.name === input.name);
    if (spec !== undefined && spec.shape[0] === -1 && input.shape.length === spec.shape.length) {
      const rows = Number(input.shape[0]);
      if (Number.isSafeInteger(rows) && rows > 0) return rows;
    }
  }
  return 1;
}

/** `count` elements of `value`, in the wire layout of `datatype`. */
function filled(datatype: WireDatatype, value: number | boolean | string, count: number): Uint8Array {
  switch (datatype) {
    case 'BYTES':
      return encodeBytesTensor(new Array<string>(count).fill(String(value)));
    case 'BOOL':
      return new Uint8Array(count).fill(value === true || value === 1 ? 1 : 0);
    case 'FP16':
      return typedArrayBytes(new Uint16Array(count).fill(floatToHalf(Number(value))));
    case 'INT64':
      return typedArrayBytes(new BigInt64Array(count).fill(BigInt(value as number)));
    case 'UINT64':
      return typedArrayBytes(new BigUint64Array(count).fill(BigInt(value as number)));
    default: {
      // The other numeric types hold plain numbers (FP32, INT32, UINT8...).
      const array = new (wireTypeInfo(datatype).array!)(count) as Float64Array;
      return typedArrayBytes(array.fill(Number(value)));
    }
  }
}

/**
 * An answer's numeric outputs by name, for compareOutputs: FP16 decoded from
 * its bits, BOOL as 0/1; BYTES outputs left out (not comparable as numbers).
 */
export function numericOutputs(response: ModelInferResponse): Map<string, NumericValues> {
  const values = new Map<string, NumericValues>();
  response.outputs.forEach((output, i) => {
    const bytes = response.rawOutputContents[i];
    if (bytes === undefined || !isWireDatatype(output.datatype) || output.datatype === 'BYTES') return;
    const array = copyToTypedArray(output.datatype, bytes);
    values.set(output.name, output.datatype === 'FP16' ? Float32Array.from(array as Uint16Array, halfToFloat) : array);
  });
  return values;
}

