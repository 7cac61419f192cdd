/**
 * ModelInferRequest from `infer()`'s arguments, and the result from a
 * ModelInferResponse: shared by unary calls and streams.
 */
import { create } from '@bufbuild/protobuf';
import {
  ModelInferRequestSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../generated/grpc_service_pb.js';
import { toWireParameters, fromWireParameters, type Parameters } from './parameters.js';
import { decodeOutputs, encodeInputs, type InferInput, type OutputData, type OutputTensor } from './tensors.js';

/** An output to return, by name, optionally with its parameters (e.g. `classification`). */
export type RequestedOutput = string | { readonly name: string; readonly parameters?: Parameters };

/** What one inference request carries besides its inputs. */
export interface InferRequestOptions {
  /** The outputs to return; default: all of them. */
  readonly outputs?: readonly RequestedOutput[];
  /** The model version; default: the version policy's choice (the latest ready one). */
  readonly version?: string | number;
  /** The request id, echoed in the response (and how stream responses are matched). */
  readonly id?: string;
  /** Request parameters, e.g. `{priority: 1, timeout: 5000}` (µs) for the dynamic batcher. */
  readonly parameters?: Parameters;
}

export interface InferResult {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly parameters: Parameters;
  /** Every returned output, by name. */
  readonly outputs: Record<string, OutputTensor>;
  /**
   * The named output; throws when the response has none of that name. The type
   * argument is a convenience cast, not checked: `datatype` says what `data` is.
   */
  output<T extends OutputData = OutputData>(name: string): OutputTensor<T>;
}

export function buildInferRequest(
  model: string,
  inputs: Readonly<Record<string, InferInput>>,
  options: InferRequestOptions,
): ModelInferRequest {
  if (typeof model !== 'string' || model === '') throw new TypeError('infer: a model name is required');
  const { tensors, raw } = encodeInputs(inputs);
  return create(ModelInferRequestSchema, {
    modelName: model,
    modelVersion: options.version === undefined ? '' : String(options.version),
    id: options.id ?? '',
    parameters: toWireParameters(options.parameters),
    inputs: tensors,
    outputs: (options.outputs ?? []).map((output) =>
      typeof output === 'string'
        ? { name: output }
        : { name: output.name, parameters: toWireParameters(output.parameters) },
    ),
    rawInputContents: raw,
  });
}

export function toInferResult(response: ModelInferResponse): InferResult {
  const outputs = decodeOutputs(response);
  return {
    modelName: response.modelName,
    modelVersion: response.modelVersion,
    id: response.id,
    parameters: fromWireParameters(response.parameters),
    outputs,
    output<T extends OutputData = OutputData>(name: string): OutputTensor<T> {
      const found = outputs[name];
      if (found === undefined) {
        throw new RangeError(`the response has no output '${name}' (it has: ${Object.keys(outputs).join(', ') || 'none'})`);
      }
      return found as OutputTensor<T>;
    },
  };
}
