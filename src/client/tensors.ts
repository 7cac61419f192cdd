/**
 * Tensors between JS values and the wire.
 *
 * Requests carry every input in `raw_input_contents`, as tritonclient does:
 * fixed-size datatypes as their little-endian element bytes (a typed array's
 * own memory; every platform Node supports is little-endian), BYTES as
 * elements each preceded by a 4-byte little-endian length.
 *
 * Responses are read from `raw_output_contents`, or from the typed `contents`
 * fields when a server sent those instead. Every output is copied into memory
 * of its own: the caller may keep it, and a Float64Array gets the alignment a
 * view into the received message could not promise.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type {
  InferTensorContents,
  ModelInferRequest_InferInputTensorSchema,
  ModelInferResponse,
} from '../generated/grpc_service_pb.js';
import { isWireDatatype, wireTypeInfo, type NumericArray, type WireDatatype } from '../tensor/wire-types.js';
import { fromWireParameters, toWireParameters, type Parameters } from './parameters.js';

export type Datatype = WireDatatype;
export type { NumericArray };

/** BYTES elements: text (sent as UTF-8) or raw bytes. */
export type BytesData = readonly string[] | readonly Uint8Array[];

/** What a tensor's `data` may be. Plain number, bigint and boolean arrays need no typed array first. */
export type TensorData = NumericArray | BytesData | readonly number[] | readonly bigint[] | readonly boolean[];

/**
 * An input with its shape (required for anything that is not 1-D) and, where
 * the data does not say it, its datatype: FP16 (a Uint16Array of IEEE half
 * bits), BOOL given as a Uint8Array, and plain number arrays.
 */
export interface Tensor {
  readonly datatype?: Datatype;
  /** Row-major dimensions; default: 1-D, `[data.length]`. */
  readonly shape?: readonly number[];
  readonly data: TensorData;
  readonly parameters?: Parameters;
}

/**
 * A typed array alone is a 1-D tensor of the array's datatype (Float32Array:
 * FP32, BigInt64Array: INT64, Uint8Array: UINT8, ...); `string[]` and
 * `Uint8Array[]` are 1-D BYTES. Anything else, or another shape: a `Tensor`.
 */
export type InferInput = NumericArray | BytesData | Tensor;

/** An output as the response carried it. `data` is a typed array of the datatype, or `Uint8Array[]` for BYTES. */
export interface OutputTensor<T extends OutputData = OutputData> {
  readonly name: string;
  readonly datatype: string;
  readonly shape: number[];
  readonly data: T;
  readonly parameters: Parameters;
}

/**
 * FP32: Float32Array, FP64: Float64Array, INT64: BigInt64Array, UINT64:
 * BigUint64Array, FP16: Uint16Array (half bits), BOOL: Uint8Array (0/1),
 * BYTES: one Uint8Array per element; a datatype this client does not know: its raw bytes.
 */
export type OutputData = NumericArray | Uint8Array[];

type InputTensorInit = MessageInitShape<typeof ModelInferRequest_InferInputTensorSchema>;

export interface EncodedInputs {
  readonly tensors: InputTensorInit[];
  readonly raw: Uint8Array[];
}

const utf8 = new TextEncoder();
const LENGTH_PREFIX_BYTES = 4;

export function encodeInputs(inputs: Readonly<Record<string, InferInput>>): EncodedInputs {
  const tensors: InputTensorInit[] = [];
  const raw: Uint8Array[] = [];
  for (const [name, input] of Object.entries(inputs)) {
    const tensor = asTensor(input);
    const datatype = tensor.datatype ?? inferDatatype(name, tensor.data);
    const { bytes, count } = encodeData(name, datatype, tensor.data);
    const shape = tensor.shape ?? [count];
    checkShape(name, shape, count);
    tensors.push({
      name,
      datatype,
      shape: shape.map((dim) => BigInt(dim)),
      parameters: toWireParameters(tensor.parameters),
    });
    raw.push(bytes);
  }
  return { tensors, raw };
}

function asTensor(input: InferInput): Tensor {
  if (ArrayBuffer.isView(input) || Array.isArray(input)) return { data: input as TensorData };
  return input as Tensor;
}

function inferDatatype(name: string, data: TensorData): Datatype {
  if (ArrayBuffer.isView(data)) {
    // instanceof, not the constructor: a Node Buffer is a Uint8Array too.
    for (const [Array_, datatype] of TYPED_ARRAY_DATATYPES) if (data instanceof Array_) return datatype;
    throw new TypeError(`input '${name}': ${data.constructor.name} has no datatype; give one`);
  }
  const first = (data as readonly unknown[])[0];
  if (typeof first === 'string' || first instanceof Uint8Array) return 'BYTES';
  if (typeof first === 'boolean') return 'BOOL';
  if (typeof first === 'bigint') return 'INT64';
  throw new TypeError(
    `input '${name}': cannot tell the datatype of ${first === undefined ? 'an empty array' : 'a plain number array'}; ` +
      'give {datatype, shape, data}',
  );
}

// Uint16Array defaults to UINT16 and Uint8Array to UINT8: FP16 and BOOL must be named.
const TYPED_ARRAY_DATATYPES: ReadonlyArray<readonly [abstract new (...args: never[]) => unknown, Datatype]> = [
  [Float32Array, 'FP32'],
  [Float64Array, 'FP64'],
  [Int8Array, 'INT8'],
  [Int16Array, 'INT16'],
  [Int32Array, 'INT32'],
  [BigInt64Array, 'INT64'],
  [Uint8Array, 'UINT8'],
  [Uint16Array, 'UINT16'],
  [Uint32Array, 'UINT32'],
  [BigUint64Array, 'UINT64'],
];

function encodeData(name: string, datatype: string, data: TensorData): { bytes: Uint8Array; count: number } {
  if (!isWireDatatype(datatype)) {
    throw new TypeError(`input '${name}': unknown datatype '${datatype}'`);
  }
  if (datatype === 'BYTES') return encodeBytes(name, data);
  const info = wireTypeInfo(datatype);
  const Array_ = info.array!;
  let array: NumericArray;
  if (ArrayBuffer.isView(data)) {
    if (!(data instanceof Array_)) {
      throw new TypeError(`input '${name}': ${datatype} data must be a ${Array_.name}, got a ${data.constructor.name}`);
    }
    array = data;
  } else {
    array = fromPlainArray(name, datatype, data as readonly unknown[]);
  }
  return { bytes: new Uint8Array(array.buffer, array.byteOffset, array.byteLength), count: array.length };
}

function fromPlainArray(name: string, datatype: Datatype, data: readonly unknown[]): NumericArray {
  if (datatype === 'FP16') {
    throw new TypeError(`input '${name}': FP16 data must be a Uint16Array of IEEE half-precision bits`);
  }
  const Array_ = wireTypeInfo(datatype).array!;
  const bigints = datatype === 'INT64' || datatype === 'UINT64';
  const out = new Array_(data.length);
  data.forEach((value, index) => {
    if (datatype === 'BOOL' && typeof value === 'boolean') {
      out[index] = value ? 1 : 0;
    } else if (bigints && (typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value)))) {
      out[index] = BigInt(value);
    } else if (!bigints && typeof value === 'number') {
      out[index] = value;
    } else {
      throw new TypeError(`input '${name}': element ${index} (${String(value)}) is not a ${datatype} value`);
    }
  });
  return out;
}

function encodeBytes(name: string, data: TensorData): { bytes: Uint8Array; count: number } {
  if (!Array.isArray(data)) {
    throw new TypeError(`input '${name}': BYTES data must be a string[] or Uint8Array[]`);
  }
  const elements = (data as readonly unknown[]).map((element, index) => {
    if (typeof element === 'string') return utf8.encode(element);
    if (element instanceof Uint8Array) return element;
    throw new TypeError(`input '${name}': BYTES element ${index} is neither a string nor a Uint8Array`);
  });
  const total = elements.reduce((sum, element) => sum + LENGTH_PREFIX_BYTES + element.byteLength, 0);
  const bytes = new Uint8Array(total);
  const view = new DataView(bytes.buffer);
  let offset = 0;
  for (const element of elements) {
    view.setUint32(offset, element.byteLength, true);
    bytes.set(element, offset + LENGTH_PREFIX_BYTES);
    offset += LENGTH_PREFIX_BYTES + element.byteLength;
  }
  return { bytes, count: elements.length };
}

function checkShape(name: string, shape: readonly number[], count: number): void {
  if (!shape.every((dim) => Number.isSafeInteger(dim) && dim >= 0)) {
    throw new TypeError(`input '${name}': shape [${shape.join(',')}] must be non-negative integers`);
  }
  const expected = shape.reduce((product, dim) => product * dim, 1);
  if (expected !== count) {
    throw new TypeError(`input '${name}': shape [${shape.join(',')}] has ${expected} elements, but the data has ${count}`);
  }
}

/** The response's outputs by name, each with its own copy of the data. */
export function decodeOutputs(response: ModelInferResponse): Record<string, OutputTensor> {
  const outputs: Record<string, OutputTensor> = {};
  const useRaw = response.rawOutputContents.length > 0;
  response.outputs.forEach((output, index) => {
    const shape = output.shape.map((dim) => Number(dim));
    const count = shape.reduce((product, dim) => product * dim, 1);
    const raw = useRaw ? response.rawOutputContents[index] : undefined;
    const data = raw !== undefined
      ? decodeRaw(output.name, output.datatype, raw, count)
      : decodeContents(output.name, output.datatype, output.contents);
    outputs[output.name] = {
      name: output.name,
      datatype: output.datatype,
      shape,
      data,
      parameters: fromWireParameters(output.parameters),
    };
  });
  return outputs;
}

function decodeRaw(name: string, datatype: string, raw: Uint8Array, count: number): OutputData {
  if (datatype === 'BYTES') return splitBytes(name, raw, count);
  if (!isWireDatatype(datatype)) return copyOf(raw);
  const info = wireTypeInfo(datatype);
  if (raw.byteLength !== count * info.size) {
    throw new Error(`output '${name}': ${raw.byteLength} bytes do not hold ${count} ${datatype} elements`);
  }
  return new info.array!(copyOf(raw).buffer, 0, count);
}

function splitBytes(name: string, raw: Uint8Array, count: number): Uint8Array[] {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const elements: Uint8Array[] = [];
  let offset = 0;
  while (offset < raw.byteLength) {
    if (offset + LENGTH_PREFIX_BYTES > raw.byteLength) break;
    const length = view.getUint32(offset, true);
    offset += LENGTH_PREFIX_BYTES;
    if (offset + length > raw.byteLength) break;
    elements.push(copyOf(raw.subarray(offset, offset + length)));
    offset += length;
  }
  if (offset !== raw.byteLength || elements.length !== count) {
    throw new Error(`output '${name}': malformed BYTES tensor (expected ${count} length-prefixed elements)`);
  }
  return elements;
}

function decodeContents(name: string, datatype: string, contents: InferTensorContents | undefined): OutputData {
  const c = contents;
  switch (datatype) {
    case 'BOOL': return Uint8Array.from(c?.boolContents ?? [], (v) => (v ? 1 : 0));
    case 'INT8': return Int8Array.from(c?.intContents ?? []);
    case 'INT16': return Int16Array.from(c?.intContents ?? []);
    case 'INT32': return Int32Array.from(c?.intContents ?? []);
    case 'INT64': return BigInt64Array.from(c?.int64Contents ?? []);
    case 'UINT8': return Uint8Array.from(c?.uintContents ?? []);
    case 'UINT16': return Uint16Array.from(c?.uintContents ?? []);
    case 'UINT32': return Uint32Array.from(c?.uintContents ?? []);
    case 'UINT64': return BigUint64Array.from(c?.uint64Contents ?? []);
    case 'FP32': return Float32Array.from(c?.fp32Contents ?? []);
    case 'FP64': return Float64Array.from(c?.fp64Contents ?? []);
    case 'BYTES': return (c?.bytesContents ?? []).map(copyOf);
    default:
      throw new Error(`output '${name}': ${datatype} came without raw_output_contents`);
  }
}

/**
 * A copy in a buffer of its own. Not `slice()`: received bytes may be Node
 * Buffers, whose `slice()` is a view into grpc-js's receive buffer.
 */
function copyOf(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.byteLength);
  out.set(bytes);
  return out;
}

const utf8Decoder = new TextDecoder('utf-8');

/** BYTES elements as text (UTF-8). */
export function bytesToStrings(elements: readonly Uint8Array[]): string[] {
  return elements.map((element) => utf8Decoder.decode(element));
}
