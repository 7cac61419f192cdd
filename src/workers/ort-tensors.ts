/**
 * Conversions between the thread-crossing TensorPayload and onnxruntime
 * tensors. Worker-side only: importing this loads onnxruntime.
 */
import * as ort from 'onnxruntime-node';
import { decodeBytesTensor, encodeBytesTensor } from '../tensor/bytes-codec.js';
import { elementCount } from '../tensor/shape.js';
import type { NumericArray, OrtTensorType } from '../tensor/wire-types.js';
import { wireTypeInfo, ortTypeToWire } from '../tensor/wire-types.js';
import type { ArenaTensorPayload, TensorPayload } from './worker-protocol.js';

/** Wraps a payload without copying its data (BYTES are decoded to strings). */
export function toOrtTensor(input: TensorPayload): ort.Tensor {
  const dims = [...input.dims];
  if (input.type === 'string') {
    // Decoded here, off the gRPC thread; the main thread already validated the framing.
    const strings = decodeBytesTensor(input.data as Uint8Array, elementCount(dims));
    return new ort.Tensor('string', strings, dims);
  }
  return new ort.Tensor(input.type as Exclude<OrtTensorType, 'string'>, input.data as never, dims);
}

/** A tensor over (a prefix of) an arena block's mapped memory, without copying it. */
export function arenaTensor(input: ArenaTensorPayload, memory: ArrayBuffer): ort.Tensor {
  const wire = ortTypeToWire(input.type);
  const array = wire === undefined ? undefined : wireTypeInfo(wire).array;
  if (array === undefined) throw new Error(`input '${input.name}': ${input.type} cannot live in arena memory`);
  const data = new array(memory, 0, input.byteLength / array.BYTES_PER_ELEMENT);
  return new ort.Tensor(input.type, data as never, [...input.dims]);
}

export function fromOrtTensor(name: string, value: ort.OnnxValue | undefined): TensorPayload {
  if (value === undefined) throw new Error(`model produced no output named '${name}'`);
  const tensor = value as ort.Tensor;
  const type = tensor.type as OrtTensorType;
  if (type === 'string') {
    return { name, type, dims: [...tensor.dims], data: encodeBytesTensor(tensor.data as string[]) };
  }
  const data = tensor.data as NumericArray;
  // The returned tensor owns a fresh buffer, but it may be a view; transfer only what is ours.
  const owned = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength
    ? data
    : (data.slice() as NumericArray);
  return { name, type, dims: [...tensor.dims], data: owned };
}
