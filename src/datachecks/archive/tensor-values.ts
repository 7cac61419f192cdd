/**
 * Archived tensors as values: decoded with the typed client's decoder
 * (client/tensors.ts), as numbers for comparison and as JSON for `archive cat`.
 * Pure.
 */
import { create } from '@bufbuild/protobuf';
import {
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../generated/grpc_service_pb.js';
import { decodeOutputs, type OutputTensor, type Tensor } from '../../client/tensors.js';
import { fromWireParameters, type Parameters } from '../../client/parameters.js';
import { halfToFloat } from '../../tensor/float16.js';

/** The request's inputs by name, decoded (each a copy). */
export function decodeInputs(request: ModelInferRequest): Record<string, OutputTensor> {
  // An input tensor has an output tensor's fields: decode it as one.
  const asResponse = create(ModelInferResponseSchema, {
    outputs: request.inputs.map(({ name, datatype, shape, contents }) => ({ name, datatype, shape, contents })),
    rawOutputContents: request.rawInputContents,
  });
  return decodeOutputs(asResponse);
}

/** The typed client's input form of a decoded tensor (its datatype always named). */
export function asClientInput(tensor: OutputTensor): Tensor {
  return { datatype: tensor.datatype as Tensor['datatype'], shape: tensor.shape, data: tensor.data } as Tensor;
}

export function decodeAnswer(response: ModelInferResponse): Record<string, OutputTensor> {
  return decodeOutputs(response);
}

/** A numeric tensor's elements as numbers (FP16 from its half bits); undefined for BYTES. */
export function numericValues(tensor: OutputTensor): ArrayLike<number> | undefined {
  const data = tensor.data;
  if (Array.isArray(data)) return undefined;
  if (tensor.datatype === 'FP16') return Float64Array.from(data as Uint16Array, halfToFloat);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Float64Array.from(data, (v) => Number(v));
  return data as ArrayLike<number>;
}

/** JSON-safe data: numbers (64-bit integers beyond 2^53 as strings), BYTES as UTF-8 text (or base64 when not text). */
export function jsonData(tensor: OutputTensor): unknown[] {
  const data = tensor.data;
  if (Array.isArray(data)) return (data as Uint8Array[]).map(bytesAsJson);
  if (tensor.datatype === 'FP16') return Array.from(data as Uint16Array, halfToFloat);
  if (tensor.datatype === 'BOOL') return Array.from(data as Uint8Array, (v) => v !== 0);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Array.from(data, safeNumber);
  return Array.from(data as ArrayLike<number>, (v) => (Number.isFinite(v) ? v : String(v)));
}

/** Request or answer parameters as JSON-safe values. */
export function jsonParameters(wire: ModelInferRequest['parameters']): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fromWireParameters(wire) as Parameters)) out[key] = typeof value === 'bigint' ? String(value) : value;
  return out;
}

/** Whether two BYTES tensors hold the same elements. */
export function sameBytes(a: readonly Uint8Array[], b: readonly Uint8Array[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((element, i) => Buffer.compare(element, b[i]!) === 0);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function bytesAsJson(element: Uint8Array): string | { base64: string } {
  try {
    return utf8.decode(element);
  } catch {
    return { base64: Buffer.from(element).toString('base64') };
  }
}

function safeNumber(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : String(value);
}

