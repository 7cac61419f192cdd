/**
 * Builds a ModelInferResponse: outputs in the requested order, raw bytes in
 * `raw_output_contents`, `id` and version echoed. From a worker's output
 * tensors (`buildInferResponse`), or from one request's rows of an executed
 * batch (`batchRowsResponse`), which it copies straight into the message.
 *
 * The messages are written as object literals, every field given (the
 * generated type makes a missing one a compile error), rather than through
 * protobuf-es's `create`, which walks the schema on every call; the encoder
 * reads either the same way. Pure; any thread.
 */
import type { ModelInferRequest, ModelInferResponse } from '../generated/grpc_service_pb.js';
import { elementCount, resolveReshape } from '../tensor/shape.js';
import { typedArrayBytes, type NumericArray } from '../tensor/wire-types.js';
import type { TensorPayload } from '../workers/worker-protocol.js';
import type { TensorSpec } from '../tensor/model-signature.js';
import type { RequestRows } from '../batching/version-batcher.js';
import { internal } from '../common/serving-error.js';

/** A response without outputs yet: the request's model name and id, the version that answered. */
function responseTo(request: ModelInferRequest, version: string): ModelInferResponse {
  return {
    $typeName: 'inference.ModelInferResponse',
    modelName: request.modelName,
    modelVersion: version,
    id: request.id,
    parameters: {},
    outputs: [],
    rawOutputContents: [],
  };
}

export function buildInferResponse(
  request: ModelInferRequest,
  version: string,
  outputs: readonly TensorSpec[],
  produced: readonly TensorPayload[],
  batched: boolean,
): ModelInferResponse {
  const response = responseTo(request, version);
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

/**
 * One request's answer from its rows of an executed batch (`rows`), before
 * `rows.done()`: each requested output's rows are copied out, since the
 * batch's blocks are reused once every request of it is done. `batched`:
 * the version batches (max_batch_size > 0), so shapes lead with the rows.
 */
export function batchRowsResponse(
  request: ModelInferRequest,
  version: string,
  outputs: readonly TensorSpec[],
  rows: RequestRows,
  batched: boolean,
): ModelInferResponse {
  const response = responseTo(request, version);
  const batch = rows.result;
  for (const spec of outputs) {
    const output = batch.outputs.get(spec.name);
    if (output === undefined) throw new Error(`model produced no output named '${spec.name}'`);
    let bytes: Uint8Array;
    let shape: bigint[];
    if (rows.whole) {
      bytes = output.copy(0, output.byteLength);
      shape = bigintDims(externalDims(spec, output.dims, batched));
    } else {
      const rowBytes = batch.rows === 0 ? 0 : output.byteLength / batch.rows;
      // The server's own inconsistency, not the client's: INTERNAL, before the copy refuses a fractional offset.
      if (!Number.isInteger(rowBytes)) throw internal(`output '${spec.name}': ${output.byteLength} bytes do not split into ${batch.rows} rows`);
      bytes = output.copy(rows.rowOffset * rowBytes, rows.rows * rowBytes);
      shape = spec.reshape === undefined ? rowsShape(rows.rows, output.dims) : bigintDims(externalDims(spec, [rows.rows, ...output.dims.slice(1)], batched));
    }
    response.outputs.push({
      $typeName: 'inference.ModelInferResponse.InferOutputTensor',
      name: spec.name,
      datatype: spec.datatype,
      shape,
      parameters: {},
    });
    response.rawOutputContents.push(bytes);
  }
  return response;
}

/** `[rows, ...batchDims.slice(1)]` as the message's int64 dims, in one array. */
function rowsShape(rows: number, batchDims: readonly number[]): bigint[] {
  const shape = new Array<bigint>(batchDims.length);
  shape[0] = bigintOf(rows);
  for (let i = 1; i < batchDims.length; i += 1) shape[i] = bigintOf(batchDims[i]!);
  return shape;
}

/**
 * The BigInts of the small dims nearly every shape is made of, made once:
 * `BigInt(n)` allocates a new one on each call, and a BigInt is an immutable
 * value, so one per number can be shared by every message.
 */
const SMALL_BIGINTS: readonly bigint[] = Array.from({ length: 1025 }, (_, n) => BigInt(n));

function bigintOf(n: number): bigint {
  return SMALL_BIGINTS[n] ?? BigInt(n);
}

/** The tensor called `name` (a model has a handful of outputs: a scan, no Map per response). */
function producedNamed(produced: readonly TensorPayload[], name: string): TensorPayload | undefined {
  for (const tensor of produced) if (tensor.name === name) return tensor;
  return undefined;
}

function bigintDims(dims: readonly number[]): bigint[] {
  const out = new Array<bigint>(dims.length);
  for (let i = 0; i < dims.length; i += 1) out[i] = bigintOf(dims[i]!);
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
