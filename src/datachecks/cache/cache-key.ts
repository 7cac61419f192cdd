/**
 * The key material of a request for the response cache: the model, the
 * resolved version, the inputs (names, datatypes, shapes, parameters and
 * bytes, typed contents or raw), the requested outputs with their parameters,
 * and the request's parameters except those that only schedule it (`priority`,
 * `timeout`). The request id is left out: a hit answers with the request's own
 * id. Parameters are sorted by key, so their order does not matter.
 *
 * The same tensor sent as typed contents and as raw bytes gives two keys (a
 * miss, never a wrong answer). Pure; safe in any thread.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { ModelInferRequestSchema, type InferParameter, type ModelInferRequest } from '../../generated/grpc_service_pb.js';

/** Request parameters that change when or how long a request waits, not its answer. */
export const SCHEDULING_PARAMETERS: ReadonlySet<string> = new Set(['priority', 'timeout']);

export function cacheKeyMaterial(request: ModelInferRequest, model: string, version: string): Uint8Array {
  const normalized = create(ModelInferRequestSchema, {
    modelName: model,
    modelVersion: version,
    parameters: sorted(request.parameters, SCHEDULING_PARAMETERS),
    inputs: request.inputs.map((input) => ({ ...input, parameters: sorted(input.parameters) })),
    outputs: request.outputs.map((output) => ({ ...output, parameters: sorted(output.parameters) })),
    rawInputContents: request.rawInputContents,
  });
  return toBinary(ModelInferRequestSchema, normalized);
}

function sorted(parameters: { [key: string]: InferParameter }, skip?: ReadonlySet<string>): { [key: string]: InferParameter } {
  const out: { [key: string]: InferParameter } = {};
  for (const key of Object.keys(parameters).sort()) {
    if (skip?.has(key) !== true) out[key] = parameters[key]!;
  }
  return out;
}
