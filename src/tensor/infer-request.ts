/**
 * Validates a ModelInfer request against a model signature and turns it into
 * worker tensors. Runs on the gRPC thread, so it only checks framing and copies
 * each input once into an owned, aligned buffer that is then transferred (not
 * copied) to the worker.
 *
 * Every rejection is INVALID_ARGUMENT with a message naming the input or output
 * and the expected vs actual value.
 *
 * It sits with the tensor types, below the repository, so that golden checks
 * (repository/golden-check.ts) validate their cases exactly as requests are.
 */
import type {
  InferParameter,
  InferTensorContents,
  ModelInferRequest,
  ModelInferRequest_InferInputTensor,
} from '../generated/grpc_service_pb.js';
import { BytesFormatError, decodeBytesTensor, encodeBytesTensor, decodeBytesElements } from './bytes-codec.js';
import { elementCount, formatShape, resolveReshape, shapeMatches } from './shape.js';
import { copyToTypedArray, wireTypeInfo, type NumericArray, type WireDatatype } from './wire-types.js';
import type { InputPayload, TensorPayload } from '../workers/worker-protocol.js';
import type { ModelSignature, TensorSpec } from './model-signature.js';
import { invalidArgument } from '../common/serving-error.js';

/**
 * Where numeric inputs are copied to: an arena block charged to the model's
 * tenant (the worker maps it without a copy). Throws RESOURCE_EXHAUSTED when
 * the tenant is over its quota.
 */
export type InputAllocator = (bytes: number) => InputBlock;

export interface InputBlock {
  readonly id: number;
  view(): ArrayBuffer;
  release(): void;
}

export interface PreparedInference {
  /** Rows in this request (1 for models without batching). */
  readonly batchSize: number;
  readonly inputs: InputPayload[];
  readonly transfer: ArrayBuffer[];
  /** Arena blocks holding inputs: the caller releases them once the response is built. */
  readonly blocks: InputBlock[];
  /** Outputs to return, in response order. */
  readonly outputs: readonly TensorSpec[];
}

/** Request parameters hotpath itself interprets; others are accepted and ignored, as in Triton. */
export const FAULT_PARAMETER = 'hotpath_fault';

/**
 * Triton's scheduling parameters: `priority` (a priority level, 0 = the
 * model's default) and `timeout` (µs in the queue; may only lower the model's
 * default when the queue policy allows overrides). Absent: 0.
 */
export function schedulingParameters(parameters: Record<string, InferParameter>): { priority: number; timeoutUs: number } {
  return {
    priority: nonNegativeIntParameter(parameters, 'priority'),
    timeoutUs: nonNegativeIntParameter(parameters, 'timeout'),
  };
}

function nonNegativeIntParameter(parameters: Record<string, InferParameter>, key: string): number {
  const choice = parameters[key]?.parameterChoice;
  if (choice === undefined || choice.case === undefined) return 0;
  const value = choice.case === 'int64Param' || choice.case === 'uint64Param' ? Number(choice.value) : NaN;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw invalidArgument(`parameter '${key}': expected a non-negative integer (int64_param or uint64_param), got ${choice.case} ${String(choice.value)}`);
  }
  return value;
}

export function prepareInference(
  request: ModelInferRequest,
  signature: ModelSignature,
  allocate?: InputAllocator,
  options: { copy?: boolean } = {},
): PreparedInference {
  const blocks: InputBlock[] = [];
  try {
    return prepareInto(request, signature, allocate, blocks, options.copy ?? true);
  } catch (err) {
    for (const block of blocks) block.release();
    throw err;
  }
}

function prepareInto(
  request: ModelInferRequest,
  signature: ModelSignature,
  allocate: InputAllocator | undefined,
  blocks: InputBlock[],
  copy: boolean,
): PreparedInference {
  const useRaw = request.rawInputContents.length > 0;
  if (useRaw && request.rawInputContents.length !== request.inputs.length) {
    throw invalidArgument(
      `raw_input_contents has ${request.rawInputContents.length} entries but the request has ${request.inputs.length} inputs; expected one entry per input`,
    );
  }
  const seen = new Set<string>();
  let batchSize: number | undefined;
  const inputs: InputPayload[] = [];
  const transfer: ArrayBuffer[] = [];

  request.inputs.forEach((input, index) => {
    const spec = signature.inputsByName.get(input.name);
    if (spec === undefined) {
      throw invalidArgument(
        `unknown input '${input.name}' for model '${signature.name}'; expected inputs: ${listNames(signature.inputs)}`,
      );
    }
    if (seen.has(input.name)) throw invalidArgument(`input '${input.name}' is given more than once`);
    seen.add(input.name);
    if (input.datatype !== spec.datatype) {
      throw invalidArgument(`input '${input.name}': expected datatype ${spec.datatype}, got ${input.datatype || '(empty)'}`);
    }
    const shape = checkedShape(input, spec, signature);
    if (signature.maxBatchSize > 0) {
      const rows = shape[0] as number;
      if (batchSize !== undefined && rows !== batchSize) {
        throw invalidArgument(`input '${input.name}': batch size ${rows} differs from the other inputs' batch size ${batchSize}`);
      }
      batchSize = rows;
    }
    const rawBytes = useRaw ? request.rawInputContents[index] : undefined;
    // With an arena, raw bytes are copied once, straight into the block (see intoArena).
    // `copy` false: raw inputs stay views of the request (the batcher copies them once).
    const payload = inputPayload(input, spec, shape, rawBytes, copy && allocate === undefined);
    if (allocate !== undefined && payload.type !== 'string' && payload.data.byteLength > 0) {
      inputs.push(intoArena(payload, allocate, blocks));
    } else {
      inputs.push(payload);
      if (payload.data.byteLength > 0) transfer.push(payload.data.buffer as ArrayBuffer);
    }
  });

  const missing = signature.inputs.filter((spec) => !seen.has(spec.name));
  if (missing.length > 0) {
    throw invalidArgument(
      `missing input${missing.length > 1 ? 's' : ''} ${missing.map((s) => `'${s.name}'`).join(', ')} for model '${signature.name}'; expected inputs: ${listNames(signature.inputs)}`,
    );
  }
  return { batchSize: batchSize ?? 1, inputs, transfer, blocks, outputs: requestedOutputs(request, signature) };
}

/** Moves a validated input into an arena block (the request's one copy into shared memory). */
function intoArena(payload: TensorPayload, allocate: InputAllocator, blocks: InputBlock[]): InputPayload {
  const bytes = payload.data.byteLength;
  const block = allocate(bytes);
  blocks.push(block);
  new Uint8Array(block.view(), 0, bytes).set(
    new Uint8Array(payload.data.buffer, payload.data.byteOffset, bytes),
  );
  return {
    name: payload.name,
    type: payload.type as Exclude<TensorPayload['type'], 'string'>,
    dims: payload.dims,
    arenaBlock: block.id,
    byteLength: bytes,
  };
}

/** Reads a request-level parameter as a string, if present. */
export function stringParameter(parameters: Record<string, InferParameter>, key: string): string | undefined {
  const value = parameters[key]?.parameterChoice;
  if (value === undefined || value.case === undefined) return undefined;
  return String(value.value);
}

function checkedShape(input: ModelInferRequest_InferInputTensor, spec: TensorSpec, signature: ModelSignature): number[] {
  const shape = input.shape.map((dim) => Number(dim));
  const bad = shape.findIndex((dim) => !Number.isSafeInteger(dim) || dim < 0);
  if (bad >= 0) {
    throw invalidArgument(`input '${input.name}': shape dimension ${bad} is ${String(input.shape[bad])}; expected a non-negative integer`);
  }
  const expected = signature.maxBatchSize > 0 ? [-1, ...spec.dims] : [...spec.dims];
  if (shape.length !== expected.length) {
    throw invalidArgument(
      `input '${input.name}': expected rank ${expected.length} with shape ${formatShape(expected)}, got rank ${shape.length} with shape ${formatShape(shape)}`,
    );
  }
  if (signature.maxBatchSize > 0) {
    const rows = shape[0] as number;
    if (rows < 1 || rows > signature.maxBatchSize) {
      throw invalidArgument(
        `input '${input.name}': batch size ${rows} is outside 1..${signature.maxBatchSize} (max_batch_size of model '${signature.name}')`,
      );
    }
  }
  if (!shapeMatches(expected, shape)) {
    throw invalidArgument(`input '${input.name}': expected shape ${formatShape(expected)}, got ${formatShape(shape)}`);
  }
  return shape;
}

function inputPayload(
  input: ModelInferRequest_InferInputTensor,
  spec: TensorSpec,
  shape: number[],
  rawBytes: Uint8Array | undefined,
  ownCopy: boolean,
): TensorPayload {
  const count = elementCount(shape);
  const dims = modelDims(input.name, spec, shape, count);
  const contents = input.contents;
  const hasTyped = contents !== undefined && typedContentCount(contents) > 0;
  if (rawBytes !== undefined && hasTyped) {
    throw invalidArgument(`input '${input.name}': both raw_input_contents and typed contents are given; send only one`);
  }
  if (rawBytes !== undefined) return rawPayload(input.name, spec, dims, count, rawBytes, ownCopy);
  return typedPayload(input.name, spec, dims, count, contents);
}

/** The shape handed to the model, applying the config's `reshape`. */
function modelDims(name: string, spec: TensorSpec, shape: number[], count: number): number[] {
  if (spec.reshape === undefined) return shape;
  const batched = shape.length > spec.dims.length;
  const rows = batched ? (shape[0] as number) : 1;
  const target = resolveReshape(spec.reshape, rows === 0 ? 0 : count / rows);
  if (target === undefined) {
    throw invalidArgument(`input '${name}': shape ${formatShape(shape)} cannot be reshaped to ${formatShape(spec.reshape)}`);
  }
  return batched ? [rows, ...target] : target;
}

/** `ownCopy` false: the payload may view the request's bytes (the caller copies them). */
function rawPayload(
  name: string,
  spec: TensorSpec,
  dims: number[],
  count: number,
  bytes: Uint8Array,
  ownCopy: boolean,
): TensorPayload {
  if (spec.datatype === 'BYTES') {
    try {
      // Validate framing and UTF-8 here so a bad request never reaches a worker.
      decodeBytesTensor(bytes, count);
    } catch (err) {
      if (err instanceof BytesFormatError) throw invalidArgument(`input '${name}': malformed BYTES: ${err.message}`);
      throw err;
    }
    // An owned copy: `bytes` is a view into the request buffer (a Buffer, whose
    // slice() would not copy), and the copy's buffer is transferred to the worker.
    return { name, type: 'string', dims, data: new Uint8Array(bytes) };
  }
  const expectedBytes = count * wireTypeInfo(spec.datatype).size;
  if (bytes.byteLength !== expectedBytes) {
    throw invalidArgument(
      `input '${name}': expected ${expectedBytes} bytes (${count} elements of ${spec.datatype} for shape ${formatShape(dims)}), got ${bytes.byteLength} bytes`,
    );
  }
  return { name, type: spec.ortType, dims, data: ownCopy ? copyToTypedArray(spec.datatype, bytes) : bytes };
}

function typedPayload(
  name: string,
  spec: TensorSpec,
  dims: number[],
  count: number,
  contents: InferTensorContents | undefined,
): TensorPayload {
  const field = TYPED_FIELD[spec.datatype];
  if (field === undefined) {
    throw invalidArgument(`input '${name}': ${spec.datatype} has no typed contents field; send it in raw_input_contents`);
  }
  const values = (contents?.[field] ?? []) as readonly unknown[];
  if (values.length !== count) {
    throw invalidArgument(
      `input '${name}': expected ${count} elements in contents.${snake(field)} for shape ${formatShape(dims)}, got ${values.length}`,
    );
  }
  if (spec.datatype === 'BYTES') {
    let strings: string[];
    try {
      strings = decodeBytesElements(values as Uint8Array[]);
    } catch (err) {
      if (err instanceof BytesFormatError) throw invalidArgument(`input '${name}': malformed BYTES: ${err.message}`);
      throw err;
    }
    return { name, type: 'string', dims, data: encodeBytesTensor(strings) };
  }
  return { name, type: spec.ortType, dims, data: typedValuesToArray(name, spec.datatype, values) };
}

type TypedField = Exclude<keyof InferTensorContents, '$typeName' | '$unknown'>;

// Which InferTensorContents field carries each datatype (KServe V2 gRPC spec).
// FP16 has none: it can only travel as raw bytes.
const TYPED_FIELD: Readonly<Record<WireDatatype, TypedField | undefined>> = {
  BOOL: 'boolContents',
  UINT8: 'uintContents',
  UINT16: 'uintContents',
  UINT32: 'uintContents',
  UINT64: 'uint64Contents',
  INT8: 'intContents',
  INT16: 'intContents',
  INT32: 'intContents',
  INT64: 'int64Contents',
  FP16: undefined,
  FP32: 'fp32Contents',
  FP64: 'fp64Contents',
  BYTES: 'bytesContents',
};

const INT_RANGES: Partial<Record<WireDatatype, readonly [number, number]>> = {
  UINT8: [0, 0xff],
  UINT16: [0, 0xffff],
  INT8: [-0x80, 0x7f],
  INT16: [-0x8000, 0x7fff],
};

function typedValuesToArray(name: string, datatype: WireDatatype, values: readonly unknown[]): NumericArray {
  const info = wireTypeInfo(datatype);
  if (info.array === undefined) throw new Error(`${datatype} has no typed array`);
  const array = new info.array(values.length);
  const range = INT_RANGES[datatype];
  values.forEach((value, i) => {
    if (range !== undefined && ((value as number) < range[0] || (value as number) > range[1])) {
      throw invalidArgument(`input '${name}': element ${i} is ${String(value)}, outside the ${datatype} range ${range[0]}..${range[1]}`);
    }
    (array as unknown as unknown[])[i] = datatype === 'BOOL' ? (value ? 1 : 0) : value;
  });
  return array;
}

function requestedOutputs(request: ModelInferRequest, signature: ModelSignature): TensorSpec[] {
  if (request.outputs.length === 0) return [...signature.outputs];
  const seen = new Set<string>();
  return request.outputs.map((output) => {
    const spec = signature.outputsByName.get(output.name);
    if (spec === undefined) {
      throw invalidArgument(
        `unknown output '${output.name}' requested from model '${signature.name}'; expected one of: ${listNames(signature.outputs)}`,
      );
    }
    if (seen.has(output.name)) throw invalidArgument(`output '${output.name}' is requested more than once`);
    seen.add(output.name);
    if (output.parameters['classification'] !== undefined) {
      throw invalidArgument(`output '${output.name}': the 'classification' parameter is not supported`);
    }
    return spec;
  });
}

function typedContentCount(contents: InferTensorContents): number {
  return contents.boolContents.length + contents.intContents.length + contents.int64Contents.length +
    contents.uintContents.length + contents.uint64Contents.length + contents.fp32Contents.length +
    contents.fp64Contents.length + contents.bytesContents.length;
}

function listNames(specs: readonly TensorSpec[]): string {
  return specs.map((spec) => `'${spec.name}' (${spec.datatype} ${formatShape(spec.dims)})`).join(', ');
}

function snake(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
