/**
 * The KServe V2 REST inference body and Triton's binary tensor data
 * extension, to and from the protocol messages the request path takes
 * (ModelInferRequest / ModelInferResponse), so an HTTP inference runs exactly
 * the code a gRPC one runs.
 *
 * Request: a JSON object, optionally followed by binary tensor data. The
 * `Inference-Header-Content-Length` header says where the JSON ends; each
 * input carries either `data` (flat or nested JSON arrays, row-major) or
 * `parameters.binary_data_size`, its bytes' share of what follows the JSON,
 * in input order. Every input becomes one `raw_input_contents` entry: JSON
 * data is packed little-endian here, binary data is passed on as a view of
 * the body (the request path copies it once, as it copies gRPC's raw bytes).
 *
 * Response: outputs are JSON `data` (flat arrays) unless binary is asked for,
 * per output (`parameters.binary_data`) or for every output not named
 * (`parameters.binary_data_output`); binary outputs are appended after the
 * JSON in output order, each with its `binary_data_size`.
 *
 * As Triton encodes them: BOOL is true/false in JSON and one byte in binary;
 * BYTES are UTF-8 strings in JSON and 4-byte little-endian length-prefixed
 * elements in binary; FP16 travels in binary only (Triton refuses it in JSON
 * either way, and so does this codec, naming the tensor).
 *
 * Checks here are those of the JSON format itself (types, element counts,
 * binary sizes that do not add up); whether a tensor fits the model is the
 * request path's check, the same as for gRPC. Failures are 'invalid'
 * ServingErrors naming the field. Pure; main thread.
 */
import { create } from '@bufbuild/protobuf';
import {
  InferParameterSchema,
  ModelInferRequestSchema,
  type InferParameter,
  type ModelInferRequest,
  type ModelInferRequest_InferInputTensor,
  type ModelInferRequest_InferRequestedOutputTensor,
  type ModelInferResponse,
} from '../../generated/grpc_service_pb.js';
import { internal, invalidArgument } from '../../common/serving-error.js';
import { echo } from '../../common/echo.js';
import { isObject, kindOf, parseJson, show, type JsonObject } from './json-body.js';
import { BytesFormatError, decodeBytesTensor, encodeBytesTensor } from '../../tensor/bytes-codec.js';
import { elementCount, formatShape } from '../../tensor/shape.js';
import {
  isWireDatatype,
  typedArrayBytes,
  WIRE_DATATYPES,
  wireTypeInfo,
  type NumericArray,
  type WireDatatype,
} from '../../tensor/wire-types.js';

/** Transport parameters of the extension; they steer the codec and never reach the request path. */
const BINARY_DATA_SIZE = 'binary_data_size';
const BINARY_DATA = 'binary_data';
const BINARY_DATA_OUTPUT = 'binary_data_output';
const SHARED_MEMORY_PARAMETERS = ['shared_memory_region', 'shared_memory_offset', 'shared_memory_byte_size'];

/** Which outputs are answered in binary. */
export interface OutputEncoding {
  /** For outputs the request does not name: `binary_data_output`, default false (JSON). */
  readonly binaryByDefault: boolean;
  /** Each named output's `binary_data`, where given. */
  readonly binary: ReadonlyMap<string, boolean>;
}

export interface DecodedInferRequest {
  readonly request: ModelInferRequest;
  readonly outputs: OutputEncoding;
}

export interface EncodedInferResponse {
  /** The JSON part; its length is the response's Inference-Header-Content-Length when `binary` is not empty. */
  readonly json: Buffer;
  /** Binary outputs' bytes, in output order, to follow the JSON. */
  readonly binary: readonly Uint8Array[];
}

/**
 * Decodes an inference body for `modelName` / `modelVersion` (from the URL).
 * `headerLength` is the Inference-Header-Content-Length; undefined when the
 * whole body is JSON. `parsed`: the JSON part already parsed (off the event
 * loop, json-parser.ts); undefined: it is parsed here.
 */
export function decodeInferRequest(
  modelName: string,
  modelVersion: string,
  body: Uint8Array,
  headerLength: number | undefined,
  parsed?: unknown,
): DecodedInferRequest {
  const jsonLength = headerLength ?? body.byteLength;
  if (jsonLength > body.byteLength) {
    throw invalidArgument(`Inference-Header-Content-Length is ${jsonLength}, but the body has only ${body.byteLength} bytes`);
  }
  const root = parsed !== undefined ? parsed : parseJson(body.subarray(0, jsonLength));
  if (!isObject(root)) throw invalidArgument(`the request body must be a JSON object with 'inputs'; got ${kindOf(root)}`);
  if (root['id'] !== undefined && typeof root['id'] !== 'string') {
    throw invalidArgument(`'id' must be a string; got ${kindOf(root['id'])}`);
  }
  const parameters = objectField(root, 'parameters', 'request');
  const binaryByDefault = booleanParameter(parameters, BINARY_DATA_OUTPUT, 'request');
  if (!Array.isArray(root['inputs'])) {
    throw invalidArgument(`'inputs' must be an array of input tensors; got ${kindOf(root['inputs'])}`);
  }
  const binary = new BinaryCursor(body, jsonLength, headerLength !== undefined);
  const inputs = root['inputs'].map((input, index) => decodeInput(input, index, binary));
  binary.expectConsumed();
  const outputs = root['outputs'] === undefined ? [] : root['outputs'];
  if (!Array.isArray(outputs)) throw invalidArgument(`'outputs' must be an array of requested outputs; got ${kindOf(outputs)}`);
  const requested = outputs.map((output, index) => decodeOutput(output, index));
  return {
    request: create(ModelInferRequestSchema, {
      modelName,
      modelVersion,
      id: (root['id'] as string | undefined) ?? '',
      parameters: protocolParameters(parameters, [BINARY_DATA_OUTPUT], 'request'),
      inputs: inputs.map((input) => input.tensor),
      rawInputContents: inputs.map((input) => input.bytes),
      outputs: requested.map((output) => output.tensor),
    }),
    outputs: {
      binaryByDefault: binaryByDefault ?? false,
      binary: new Map(requested.flatMap((output) => (output.binary === undefined ? [] : [[output.tensor.name, output.binary] as const]))),
    },
  };
}

/** Encodes a response; throws 'invalid' for an FP16 output asked for as JSON, as Triton does. */
export function encodeInferResponse(response: ModelInferResponse, encoding: OutputEncoding): EncodedInferResponse {
  const fields: string[] = [];
  if (response.id !== '') fields.push(`"id":${JSON.stringify(response.id)}`);
  fields.push(`"model_name":${JSON.stringify(response.modelName)}`, `"model_version":${JSON.stringify(response.modelVersion)}`);
  if (Object.keys(response.parameters).length > 0) fields.push(`"parameters":${JSON.stringify(jsonParameters(response.parameters))}`);
  const binary: Uint8Array[] = [];
  const outputs = response.outputs.map((output, index) => {
    const bytes = response.rawOutputContents[index];
    if (bytes === undefined) throw internal(`output '${output.name}' has no raw_output_contents entry`);
    const shape = output.shape.map(Number);
    const parameters = jsonParameters(output.parameters);
    let data = '';
    if (encoding.binary.get(output.name) ?? encoding.binaryByDefault) {
      parameters[BINARY_DATA_SIZE] = bytes.byteLength;
      binary.push(bytes);
    } else {
      data = `,"data":[${jsonDataText(output.name, output.datatype, shape, bytes)}]`;
    }
    const parameterText = Object.keys(parameters).length > 0 ? `,"parameters":${JSON.stringify(parameters)}` : '';
    return `{"name":${JSON.stringify(output.name)},"datatype":${JSON.stringify(output.datatype)},"shape":${JSON.stringify(shape)}${parameterText}${data}}`;
  });
  fields.push(`"outputs":[${outputs.join(',')}]`);
  return { json: Buffer.from(`{${fields.join(',')}}`), binary };
}

// ---------------------------------------------------------------------------
// Request decoding

interface DecodedInput {
  readonly tensor: ModelInferRequest_InferInputTensor;
  readonly bytes: Uint8Array;
}

function decodeInput(input: unknown, index: number, binary: BinaryCursor): DecodedInput {
  if (!isObject(input)) throw invalidArgument(`inputs[${index}] must be an object with name, datatype, shape and data; got ${kindOf(input)}`);
  if (typeof input['name'] !== 'string') throw invalidArgument(`inputs[${index}]: 'name' must be a string; got ${kindOf(input['name'])}`);
  const name = input['name'];
  const what = `input ${echo(name)}`;
  if (typeof input['datatype'] !== 'string') throw invalidArgument(`${what}: 'datatype' must be a string; got ${kindOf(input['datatype'])}`);
  const datatype = input['datatype'];
  const shape = decodeShape(input['shape'], what);
  const parameters = objectField(input, 'parameters', what);
  refuseSharedMemory(parameters, what);
  const binarySize = parameters[BINARY_DATA_SIZE];
  const hasData = input['data'] !== undefined;
  if (hasData && binarySize !== undefined) {
    throw invalidArgument(`${what}: send either 'data' or parameters.${BINARY_DATA_SIZE}, not both`);
  }
  if (!hasData && binarySize === undefined) {
    throw invalidArgument(`${what}: has neither 'data' nor parameters.${BINARY_DATA_SIZE}; expected one of them`);
  }
  let bytes: Uint8Array;
  if (binarySize !== undefined) {
    if (typeof binarySize !== 'number' || !Number.isSafeInteger(binarySize) || binarySize < 0) {
      throw invalidArgument(`${what}: parameters.${BINARY_DATA_SIZE} must be a non-negative integer; got ${show(binarySize)}`);
    }
    bytes = binary.take(binarySize, what);
  } else {
    bytes = jsonDataBytes(what, datatype, shape, input['data']);
  }
  return {
    tensor: {
      $typeName: 'inference.ModelInferRequest.InferInputTensor',
      name,
      datatype,
      shape: shape.map((dim) => BigInt(dim)),
      parameters: protocolParameters(parameters, [BINARY_DATA_SIZE], what),
    },
    bytes,
  };
}

function decodeOutput(output: unknown, index: number): { tensor: ModelInferRequest_InferRequestedOutputTensor; binary: boolean | undefined } {
  if (!isObject(output)) throw invalidArgument(`outputs[${index}] must be an object with a name; got ${kindOf(output)}`);
  if (typeof output['name'] !== 'string') throw invalidArgument(`outputs[${index}]: 'name' must be a string; got ${kindOf(output['name'])}`);
  const what = `output ${echo(output['name'])}`;
  const parameters = objectField(output, 'parameters', what);
  refuseSharedMemory(parameters, what);
  return {
    tensor: {
      $typeName: 'inference.ModelInferRequest.InferRequestedOutputTensor',
      name: output['name'],
      parameters: protocolParameters(parameters, [BINARY_DATA], what),
    },
    binary: booleanParameter(parameters, BINARY_DATA, what),
  };
}

function decodeShape(shape: unknown, what: string): number[] {
  if (!Array.isArray(shape) || !shape.every((dim) => typeof dim === 'number' && Number.isSafeInteger(dim) && dim >= 0)) {
    throw invalidArgument(`${what}: 'shape' must be an array of non-negative integers; got ${show(shape)}`);
  }
  return shape as number[];
}

/**
 * The binary data after the JSON part, handed out to the inputs that ask for
 * it, in order; every byte must be claimed exactly once.
 */
class BinaryCursor {
  private offset: number;

  constructor(
    private readonly body: Uint8Array,
    private readonly start: number,
    private readonly headerGiven: boolean,
  ) {
    this.offset = start;
  }

  take(size: number, what: string): Uint8Array {
    if (size > 0 && !this.headerGiven) {
      throw invalidArgument(
        `${what} has parameters.${BINARY_DATA_SIZE} ${size}, but the request has no Inference-Header-Content-Length header ` +
          'saying where the JSON ends and the binary data begins',
      );
    }
    const left = this.body.byteLength - this.offset;
    if (size > left) {
      throw invalidArgument(
        `${what}: parameters.${BINARY_DATA_SIZE} is ${size} bytes, but only ${left} bytes of binary data are left ` +
          `(the body has ${this.body.byteLength - this.start} bytes after the ${this.start}-byte JSON header)`,
      );
    }
    const bytes = this.body.subarray(this.offset, this.offset + size);
    this.offset += size;
    return bytes;
  }

  expectConsumed(): void {
    const left = this.body.byteLength - this.offset;
    if (left > 0) {
      throw invalidArgument(
        `${left} bytes of binary data follow the JSON header that no input claims: the inputs' ${BINARY_DATA_SIZE} ` +
          `values add up to ${this.offset - this.start} bytes, the body has ${this.body.byteLength - this.start}`,
      );
    }
  }
}

/** Inclusive ranges of the integer datatypes up to 32 bits. */
const INTEGER_RANGES: Partial<Record<WireDatatype, readonly [number, number]>> = {
  INT8: [-(2 ** 7), 2 ** 7 - 1],
  INT16: [-(2 ** 15), 2 ** 15 - 1],
  INT32: [-(2 ** 31), 2 ** 31 - 1],
  UINT8: [0, 2 ** 8 - 1],
  UINT16: [0, 2 ** 16 - 1],
  UINT32: [0, 2 ** 32 - 1],
};

/** Ranges of the 64-bit integers, with exclusive upper ends (2^63 - 1 and 2^64 - 1 are not doubles). */
const INT64_RANGES: Partial<Record<WireDatatype, readonly [number, number, string]>> = {
  INT64: [-(2 ** 63), 2 ** 63, '-9223372036854775808..9223372036854775807'],
  UINT64: [0, 2 ** 64, '0..18446744073709551615'],
};

/** JSON `data` packed as the datatype's little-endian wire bytes (BYTES: length-prefixed UTF-8). */
export function jsonDataBytes(what: string, datatype: string, shape: readonly number[], data: unknown): Uint8Array {
  if (!isWireDatatype(datatype)) {
    throw invalidArgument(`${what}: unsupported datatype ${echo(datatype)}; expected one of ${WIRE_DATATYPES.join(', ')}`);
  }
  if (datatype === 'FP16') {
    throw invalidArgument(`${what}: FP16 data cannot be sent as JSON; send it in binary (parameters.${BINARY_DATA_SIZE}), as Triton requires`);
  }
  if (!Array.isArray(data)) throw invalidArgument(`${what}: 'data' must be an array (flat or nested); got ${kindOf(data)}`);
  const count = elementCount(shape);
  const elements = flatten(data, count);
  if (elements.length !== count) {
    const got = elements.length > count ? `more than ${count}` : String(elements.length);
    throw invalidArgument(`${what}: shape ${formatShape(shape)} holds ${count} elements, but 'data' has ${got}`);
  }
  if (datatype === 'BYTES') {
    elements.forEach((element, index) => {
      if (typeof element !== 'string') throw badElement(what, index, element, 'a string');
    });
    return encodeBytesTensor(elements as string[]);
  }
  const array = new (wireTypeInfo(datatype).array!)(count);
  elements.forEach(elementWriter(what, datatype, array));
  return typedArrayBytes(array);
}

/** Checks one JSON element against the datatype and stores it at its index. */
function elementWriter(what: string, datatype: WireDatatype, array: NumericArray): (element: unknown, index: number) => void {
  if (datatype === 'BOOL') {
    const out = array as Uint8Array;
    return (element, index) => {
      if (typeof element !== 'boolean') throw badElement(what, index, element, 'true or false');
      out[index] = element ? 1 : 0;
    };
  }
  const wide = INT64_RANGES[datatype];
  if (wide !== undefined) {
    const out = array as BigInt64Array | BigUint64Array;
    const [low, highExclusive, shown] = wide;
    return (element, index) => {
      if (typeof element !== 'number' || !Number.isInteger(element) || element < low || element >= highExclusive) {
        throw badElement(what, index, element, `an integer in ${datatype}'s range ${shown}`);
      }
      out[index] = BigInt(element);
    };
  }
  const out = array as Exclude<NumericArray, BigInt64Array | BigUint64Array>;
  const range = INTEGER_RANGES[datatype];
  if (range === undefined) {
    return (element, index) => {
      if (typeof element !== 'number') throw badElement(what, index, element, `a ${datatype} number`);
      out[index] = element;
    };
  }
  const [low, high] = range;
  return (element, index) => {
    if (typeof element !== 'number' || !Number.isInteger(element) || element < low || element > high) {
      throw badElement(what, index, element, `an integer in ${datatype}'s range ${low}..${high}`);
    }
    out[index] = element;
  };
}

/** Nested arrays' leaves in row-major order; stops once more than `expected` are found. Iterative: depth is the client's. */
function flatten(data: readonly unknown[], expected: number): unknown[] {
  const leaves: unknown[] = [];
  const stack: { array: readonly unknown[]; next: number }[] = [{ array: data, next: 0 }];
  while (stack.length > 0 && leaves.length <= expected) {
    const top = stack[stack.length - 1]!;
    if (top.next === top.array.length) {
      stack.pop();
      continue;
    }
    const element = top.array[top.next++];
    if (Array.isArray(element)) stack.push({ array: element, next: 0 });
    else leaves.push(element);
  }
  return leaves;
}

function badElement(what: string, index: number, element: unknown, expected: string) {
  return invalidArgument(`${what}: element ${index} of 'data' is ${show(element)}; expected ${expected}`);
}

function refuseSharedMemory(parameters: JsonObject, what: string): void {
  const used = SHARED_MEMORY_PARAMETERS.find((key) => parameters[key] !== undefined);
  if (used !== undefined) {
    throw invalidArgument(`${what}: parameters.${used}: shared memory is not supported; send the tensor as 'data' or binary data`);
  }
}

/** Request parameters as protocol InferParameters, without the extension's own (`consumed`). */
function protocolParameters(parameters: JsonObject, consumed: readonly string[], what: string): Record<string, InferParameter> {
  const out: Record<string, InferParameter> = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (consumed.includes(key)) continue;
    out[key] = create(InferParameterSchema, { parameterChoice: parameterChoice(value, `${what} parameter ${echo(key)}`) });
  }
  return out;
}

function parameterChoice(value: unknown, what: string): InferParameter['parameterChoice'] {
  switch (typeof value) {
    case 'boolean':
      return { case: 'boolParam', value };
    case 'string':
      return { case: 'stringParam', value };
    case 'number':
      return Number.isSafeInteger(value) ? { case: 'int64Param', value: BigInt(value) } : { case: 'doubleParam', value };
    default:
      throw invalidArgument(`${what} must be a string, a number or a boolean; got ${kindOf(value)}`);
  }
}

function booleanParameter(parameters: JsonObject, key: string, what: string): boolean | undefined {
  const value = parameters[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw invalidArgument(`${what} parameter '${key}' must be true or false; got ${show(value)}`);
  return value;
}

function objectField(object: JsonObject, key: string, what: string): JsonObject {
  const value = object[key];
  if (value === undefined) return {};
  if (!isObject(value)) throw invalidArgument(`${what}: '${key}' must be a JSON object; got ${kindOf(value)}`);
  return value;
}

// ---------------------------------------------------------------------------
// Response encoding

/** An output's bytes as the text inside a JSON `data` array. */
function jsonDataText(name: string, datatype: string, shape: readonly number[], bytes: Uint8Array): string {
  const what = `output ${echo(name)}`;
  if (datatype === 'FP16') {
    throw invalidArgument(
      `${what}: FP16 data cannot be returned as JSON; request it in binary (parameters.${BINARY_DATA}: true), as Triton requires`,
    );
  }
  if (!isWireDatatype(datatype)) throw internal(`${what} has datatype ${datatype}, which has no JSON form`);
  const count = elementCount(shape);
  if (datatype === 'BYTES') {
    try {
      return decodeBytesTensor(bytes, count).map((element) => JSON.stringify(element)).join(',');
    } catch (err) {
      if (err instanceof BytesFormatError) throw internal(`${what}: malformed BYTES output: ${err.message}`);
      throw err;
    }
  }
  const info = wireTypeInfo(datatype);
  if (bytes.byteLength !== count * info.size) {
    throw internal(`${what}: ${bytes.byteLength} bytes do not hold shape ${formatShape(shape)} of ${datatype}`);
  }
  if (datatype === 'BOOL') return Array.from(bytes, (byte) => (byte !== 0 ? 'true' : 'false')).join(',');
  const values = alignedView(info.array!, info.size, bytes);
  return Array.from(values as ArrayLike<number | bigint>, jsonNumber).join(',');
}

function alignedView(
  array: NonNullable<ReturnType<typeof wireTypeInfo>['array']>,
  size: number,
  bytes: Uint8Array,
): NumericArray {
  const source = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  return new array(source.buffer, source.byteOffset, source.byteLength / size);
}

/** A number as JSON: exact for 64-bit integers; NaN and infinities, which JSON cannot hold, as null. */
function jsonNumber(value: number | bigint): string {
  if (typeof value === 'bigint') return value.toString();
  return Number.isFinite(value) ? String(value) : 'null';
}

function jsonParameters(parameters: Record<string, InferParameter>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, parameter] of Object.entries(parameters)) {
    const choice = parameter.parameterChoice;
    if (choice.case === undefined) continue;
    out[key] = typeof choice.value === 'bigint' ? Number(choice.value) : choice.value;
  }
  return out;
}
