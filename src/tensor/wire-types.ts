/**
 * The KServe V2 wire datatypes hotpath accepts, and how each one is laid out in
 * `raw_input_contents` / `raw_output_contents` (little-endian, densely packed,
 * row-major), in onnxruntime-node tensors and in config.pbtxt.
 *
 * This is the one datatype table: the request path consults it per tensor, so
 * it is keyed by the wire string the client sends; the config-enum lookups in
 * repository/datatypes.ts are derived from it.
 */
import { DataType } from '../generated/model_config_pb.js';

/** Every datatype onnxruntime-node can feed or fetch. BF16 is absent on purpose. */
export type WireDatatype =
  | 'BOOL' | 'UINT8' | 'INT8' | 'UINT16' | 'INT16' | 'INT32' | 'INT64'
  | 'UINT32' | 'UINT64' | 'FP16' | 'FP32' | 'FP64' | 'BYTES';

/** The tensor type names onnxruntime-node's `Tensor` constructor takes. */
export type OrtTensorType =
  | 'bool' | 'uint8' | 'int8' | 'uint16' | 'int16' | 'int32' | 'int64'
  | 'uint32' | 'uint64' | 'float16' | 'float32' | 'float64' | 'string';

/** The typed array used to hold a fixed-size datatype's elements. */
export type NumericArray =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Int32Array | BigInt64Array
  | Uint32Array | BigUint64Array | Float32Array | Float64Array;

interface TypedArrayCtor {
  readonly BYTES_PER_ELEMENT: number;
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): NumericArray;
  new (length: number): NumericArray;
}

interface WireTypeInfo {
  readonly ort: OrtTensorType;
  /** The config.pbtxt enum (Triton calls BYTES `TYPE_STRING` there). */
  readonly config: DataType;
  /** Bytes per element on the wire; 0 for BYTES, whose elements are length-prefixed. */
  readonly size: number;
  /** Undefined for BYTES, which onnxruntime-node holds as a JS string array. */
  readonly array: TypedArrayCtor | undefined;
}

// FP16 travels as raw IEEE half bits; onnxruntime-node takes those as Uint16Array.
// BOOL is one byte per element on the wire and in onnxruntime (Uint8Array).
const WIRE_TYPES: Readonly<Record<WireDatatype, WireTypeInfo>> = {
  BOOL: { ort: 'bool', config: DataType.TYPE_BOOL, size: 1, array: Uint8Array },
  UINT8: { ort: 'uint8', config: DataType.TYPE_UINT8, size: 1, array: Uint8Array },
  INT8: { ort: 'int8', config: DataType.TYPE_INT8, size: 1, array: Int8Array },
  UINT16: { ort: 'uint16', config: DataType.TYPE_UINT16, size: 2, array: Uint16Array },
  INT16: { ort: 'int16', config: DataType.TYPE_INT16, size: 2, array: Int16Array },
  INT32: { ort: 'int32', config: DataType.TYPE_INT32, size: 4, array: Int32Array },
  INT64: { ort: 'int64', config: DataType.TYPE_INT64, size: 8, array: BigInt64Array },
  UINT32: { ort: 'uint32', config: DataType.TYPE_UINT32, size: 4, array: Uint32Array },
  UINT64: { ort: 'uint64', config: DataType.TYPE_UINT64, size: 8, array: BigUint64Array },
  FP16: { ort: 'float16', config: DataType.TYPE_FP16, size: 2, array: Uint16Array },
  FP32: { ort: 'float32', config: DataType.TYPE_FP32, size: 4, array: Float32Array },
  FP64: { ort: 'float64', config: DataType.TYPE_FP64, size: 8, array: Float64Array },
  BYTES: { ort: 'string', config: DataType.TYPE_STRING, size: 0, array: undefined },
};

export function isWireDatatype(value: string): value is WireDatatype {
  return Object.prototype.hasOwnProperty.call(WIRE_TYPES, value);
}

/** Every wire datatype, in the protocol's order (handy for test matrices). */
export const WIRE_DATATYPES: readonly WireDatatype[] = Object.keys(WIRE_TYPES) as WireDatatype[];

export function wireTypeInfo(datatype: WireDatatype): WireTypeInfo {
  return WIRE_TYPES[datatype];
}

export function wireToOrtType(datatype: WireDatatype): OrtTensorType {
  return WIRE_TYPES[datatype].ort;
}

export function ortTypeToWire(type: string): WireDatatype | undefined {
  for (const [wire, info] of Object.entries(WIRE_TYPES)) {
    if (info.ort === type) return wire as WireDatatype;
  }
  return undefined;
}

/**
 * Copies `bytes` into a fresh, correctly aligned buffer of `datatype`'s elements.
 *
 * The copy is deliberate: a protobuf bytes field is a view into the request
 * buffer at an arbitrary offset (a Float32Array needs 4-byte alignment), and the
 * fresh buffer is what gets transferred, without another copy, to the worker.
 * The caller has already checked that the byte length is a whole number of elements.
 */
export function copyToTypedArray(datatype: WireDatatype, bytes: Uint8Array): NumericArray {
  const info = WIRE_TYPES[datatype];
  if (info.array === undefined) throw new Error(`${datatype} has no fixed-size element type`);
  const owned = new Uint8Array(bytes.byteLength);
  owned.set(bytes);
  return new info.array(owned.buffer, 0, bytes.byteLength / info.size);
}

/** A little-endian byte view of a typed array, sharing its memory (no copy). */
export function typedArrayBytes(array: NumericArray): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}
