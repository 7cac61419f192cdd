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
import type { InputPayload, TensorPayload } from './tensor-payload.js';
import { externalShape, type ModelSignature, type TensorSpec } from './model-signature.js';
import { invalidArgument } from '../common/serving-error.js';
import { echo, echoField } from '../common/echo.js';

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
  /** The request's scheduling parameters, checked on every path (used where a batcher queues it). */
  readonly scheduling: SchedulingParameters;
}

/** Request parameters hotpath itself interprets; others are accepted and ignored, as in Triton. */
export const FAULT_PARAMETER = 'hotpath_fault';

/** A request's scheduling parameters, checked and in the batcher's units. */
export interface SchedulingParameters {
  /** The priority level; 0 = the model's default level. */
  readonly priority: number;
  /** µs the request may wait in the queue; 0 = the model's default. */
  readonly timeoutUs: number;
}

// Triton's priority is a uint64, but any value above the model's
// priority_levels (at most 2^32-1 here) means the default level, exactly as 0 does.
const MAX_PRIORITY_LEVEL = 0xffff_ffff;

/**
 * Checks and reads Triton's scheduling parameters, whichever way the model is
 * scheduled (a model without dynamic batching checks them all the same, as
 * Triton does, and then has no use for them):
 *   - `priority`: uint64 (uint64_param, or int64_param >= 0); 0 = the default level;
 *   - `timeout`: µs in the queue, uint64 (the same two forms); may only lower
 *     the model's default when the queue policy allows overrides;
 *   - `sequence_id`: int64_param, uint64_param or string_param; `sequence_start`
 *     and `sequence_end`: bool_param. hotpath has no sequence batcher, so they
 *     change nothing here; they are checked as Triton checks them, so a
 *     malformed one fails the same way on both servers.
 * Absent: 0. A wrong type or a negative value is INVALID_ARGUMENT naming the
 * parameter, the expected form and what was sent.
 */
export function schedulingParameters(parameters: Record<string, InferParameter>): SchedulingParameters {
  // Most requests carry no parameter at all: nothing to check, the defaults.
  if (isEmpty(parameters)) return DEFAULT_SCHEDULING;
  checkChoice(parameters, 'sequence_id', ['int64Param', 'uint64Param', 'stringParam'], 'an int64_param, uint64_param or string_param');
  checkChoice(parameters, 'sequence_start', ['boolParam'], 'a bool_param');
  checkChoice(parameters, 'sequence_end', ['boolParam'], 'a bool_param');
  const priority = unsignedParameter(parameters, 'priority');
  const timeoutUs = unsignedParameter(parameters, 'timeout');
  return {
    priority: priority > BigInt(MAX_PRIORITY_LEVEL) ? 0 : Number(priority),
    // Beyond 2^53 µs (285 years) a timeout is as good as none; the batcher caps it anyway.
    timeoutUs: timeoutUs > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(timeoutUs),
  };
}

const NONE_MISSING: readonly TensorSpec[] = Object.freeze([]);

const DEFAULT_SCHEDULING: SchedulingParameters = Object.freeze({ priority: 0, timeoutUs: 0 });

function isEmpty(record: Record<string, unknown>): boolean {
  for (const _ in record) return false;
  return true;
}

type ParameterCase = NonNullable<InferParameter['parameterChoice']['case']>;

function unsignedParameter(parameters: Record<string, InferParameter>, key: string): bigint {
  const choice = parameters[key]?.parameterChoice;
  if (choice === undefined || choice.case === undefined) return 0n;
  if ((choice.case === 'uint64Param' || choice.case === 'int64Param') && choice.value >= 0n) return choice.value;
  throw invalidArgument(
    `parameter '${key}': expected an unsigned integer (uint64_param or int64_param >= 0), got ${describeParameter(choice)}`,
  );
}

function checkChoice(parameters: Record<string, InferParameter>, key: string, allowed: readonly ParameterCase[], expected: string): void {
  const choice = parameters[key]?.parameterChoice;
  if (choice === undefined || choice.case === undefined || allowed.includes(choice.case)) return;
  throw invalidArgument(`parameter '${key}': expected ${expected}, got ${describeParameter(choice)}`);
}

/** `string_param 'abc'`, `int64_param -3`: the field sent and its value, bounded. */
function describeParameter(choice: InferParameter['parameterChoice']): string {
  const field = snake(choice.case ?? 'unset');
  return choice.case === 'stringParam' ? `${field} ${echo(choice.value)}` : `${field} ${String(choice.value)}`;
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

/**
 * A numeric request validated for a version's batcher: the same checks, in
 * the same order and with the same messages, as prepareInference, and only
 * what the batcher takes, with nothing copied.
 */
export interface BatchedInference {
  /** Rows in this request (1 for models without batching). */
  readonly batchSize: number;
  /**
   * Each input's bytes, in the model's input order (`signature.inputs`),
   * whatever order the request listed them in: views of the request's own
   * bytes (raw inputs) or of the array its typed contents were read into.
   */
  readonly inputs: Uint8Array[];
  /** Each input's shape as the model sees it (`reshape` applied), rows first when batching; model order. */
  readonly dims: (readonly number[])[];
  /** Outputs to return, in response order. */
  readonly outputs: readonly TensorSpec[];
  readonly scheduling: SchedulingParameters;
}

/** prepareInference for a version whose numeric requests go through its batcher (see BatchedInference). */
export function prepareBatchedInference(request: ModelInferRequest, signature: ModelSignature): BatchedInference {
  const scheduling = schedulingParameters(request.parameters);
  const useRaw = checkRawCount(request);
  const count = request.inputs.length;
  const seen = count > 1 ? new Set<string>() : undefined;
  let batchSize: number | undefined;
  // Sized for the model's inputs: a request with more is refused (unknown or repeated input) before it could overflow.
  const inputs = new Array<Uint8Array>(signature.inputs.length);
  const dims = new Array<readonly number[]>(signature.inputs.length);
  for (let index = 0; index < count; index += 1) {
    const payload = checkedInput(request, index, signature, useRaw, seen, batchSize, false);
    if (signature.maxBatchSize > 0) batchSize = payload.dims[0];
    const at = signature.inputIndex.get(payload.name)!;
    const data = payload.data;
    inputs[at] = data instanceof Uint8Array ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    dims[at] = payload.dims;
  }
  checkNoneMissing(request, signature, seen);
  return { batchSize: batchSize ?? 1, inputs, dims, outputs: requestedOutputs(request, signature), scheduling };
}

function prepareInto(
  request: ModelInferRequest,
  signature: ModelSignature,
  allocate: InputAllocator | undefined,
  blocks: InputBlock[],
  copy: boolean,
): PreparedInference {
  const scheduling = schedulingParameters(request.parameters);
  const useRaw = checkRawCount(request);
  // Duplicates are looked for only among several inputs (a model's usual one cannot repeat).
  const seen = request.inputs.length > 1 ? new Set<string>() : undefined;
  let batchSize: number | undefined;
  const inputs: InputPayload[] = [];
  const transfer: ArrayBuffer[] = [];

  for (let index = 0; index < request.inputs.length; index += 1) {
    // With an arena, raw bytes are copied once, straight into the block (see intoArena).
    // `copy` false: raw inputs stay views of the request (the caller copies them once).
    const payload = checkedInput(request, index, signature, useRaw, seen, batchSize, copy && allocate === undefined);
    if (signature.maxBatchSize > 0) batchSize = payload.dims[0];
    if (allocate !== undefined && payload.type !== 'string' && payload.data.byteLength > 0) {
      inputs.push(intoArena(payload, allocate, blocks));
    } else {
      inputs.push(payload);
      if (payload.data.byteLength > 0) transfer.push(payload.data.buffer as ArrayBuffer);
    }
  }
  checkNoneMissing(request, signature, seen);
  return { batchSize: batchSize ?? 1, inputs, transfer, blocks, outputs: requestedOutputs(request, signature), scheduling };
}

/** Whether the inputs' bytes are in raw_input_contents; refuses a count of entries that does not match the inputs. */
function checkRawCount(request: ModelInferRequest): boolean {
  const useRaw = request.rawInputContents.length > 0;
  if (useRaw && request.rawInputContents.length !== request.inputs.length) {
    throw invalidArgument(
      `raw_input_contents has ${request.rawInputContents.length} entries but the request has ${request.inputs.length} inputs; expected one entry per input`,
    );
  }
  return useRaw;
}

/**
 * The request's input `index`, checked against the signature in the order
 * its errors are reported (name, repetition, datatype, shape, batch size
 * against `batchSize`, the earlier inputs' rows, then its contents), as the
 * payload the model takes: dims with `reshape` applied, rows first when
 * batching. `seen` collects the names (several inputs only). `ownCopy`
 * false: raw bytes stay a view of the request.
 */
function checkedInput(
  request: ModelInferRequest,
  index: number,
  signature: ModelSignature,
  useRaw: boolean,
  seen: Set<string> | undefined,
  batchSize: number | undefined,
  ownCopy: boolean,
): TensorPayload {
  const input = request.inputs[index]!;
  const spec = signature.inputsByName.get(input.name);
  if (spec === undefined) {
    throw invalidArgument(
      `unknown input ${echo(input.name)} for model '${signature.name}'; expected inputs: ${listNames(signature.inputs)}`,
    );
  }
  if (seen !== undefined) {
    if (seen.has(input.name)) throw invalidArgument(`input ${echo(input.name)} is given more than once`);
    seen.add(input.name);
  }
  if (input.datatype !== spec.datatype) {
    throw invalidArgument(`input '${spec.name}': expected datatype ${spec.datatype}, got ${echoField(input.datatype) || '(empty)'}`);
  }
  const shape = checkedShape(input, spec, signature);
  if (signature.maxBatchSize > 0) {
    const rows = shape[0] as number;
    if (batchSize !== undefined && rows !== batchSize) {
      throw invalidArgument(`input '${spec.name}': batch size ${rows} differs from the other inputs' batch size ${batchSize}`);
    }
  }
  const rawBytes = useRaw ? request.rawInputContents[index] : undefined;
  return inputPayload(input, spec, shape, signature.maxBatchSize > 0, rawBytes, ownCopy);
}

/** Refuses a request that leaves out one of the model's inputs (`seen`: the names given, when there were several). */
function checkNoneMissing(request: ModelInferRequest, signature: ModelSignature, seen: Set<string> | undefined): void {
  const only = request.inputs.length === 1 ? request.inputs[0]!.name : undefined;
  const missing = seen !== undefined
    ? signature.inputs.filter((spec) => !seen.has(spec.name))
    : signature.inputs.length === 1 && signature.inputs[0]!.name === only
      ? NONE_MISSING
      : signature.inputs.filter((spec) => spec.name !== only);
  if (missing.length > 0) {
    throw invalidArgument(
      `missing input${missing.length > 1 ? 's' : ''} ${missing.map((s) => `'${s.name}'`).join(', ')} for model '${signature.name}'; expected inputs: ${listNames(signature.inputs)}`,
    );
  }
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
  const shape = requestShape(spec.name, input.shape);
  const configShape = expectedShapeOf(signature, spec);
  // A scalar the config writes Triton's way (dims [1], reshape { shape: [] }):
  // a Triton client sends the dims, a V2 client the scalar itself; both mean one element.
  const scalarShape = isScalarReshape(spec) ? (signature.maxBatchSize > 0 ? [-1] : []) : undefined;
  const expected = scalarShape !== undefined && shape.length === scalarShape.length ? scalarShape : configShape;
  if (shape.length !== expected.length) {
    throw invalidArgument(
      `input '${spec.name}': expected rank ${expected.length} with shape ${formatShape(expected)}, got rank ${shape.length} with shape ${formatShape(shape)}`,
    );
  }
  if (signature.maxBatchSize > 0) {
    const rows = shape[0] as number;
    if (rows < 1 || rows > signature.maxBatchSize) {
      throw invalidArgument(
        `input '${spec.name}': batch size ${rows} is outside 1..${signature.maxBatchSize} (max_batch_size of model '${signature.name}')`,
      );
    }
  }
  if (!shapeMatches(expected, shape)) {
    throw invalidArgument(`input '${spec.name}': expected shape ${formatShape(expected)}, got ${formatShape(shape)}`);
  }
  if (elementCount(shape) > Number.MAX_SAFE_INTEGER) {
    throw invalidArgument(`input '${spec.name}': shape ${formatShape(shape)} is too large (more than ${Number.MAX_SAFE_INTEGER} elements)`);
  }
  return shape;
}

// externalShape per tensor spec, made once: a spec belongs to one loaded
// signature, and both forms are kept in case a spec object is shared between
// a batching and a non-batching signature (tests, golden checks). Never mutated.
const expectedShapes = new WeakMap<TensorSpec, { batched?: readonly number[]; unbatched?: readonly number[] }>();

function expectedShapeOf(signature: ModelSignature, spec: TensorSpec): readonly number[] {
  let entry = expectedShapes.get(spec);
  if (entry === undefined) {
    entry = {};
    expectedShapes.set(spec, entry);
  }
  if (signature.maxBatchSize > 0) return (entry.batched ??= Object.freeze(externalShape(signature, spec)));
  return (entry.unbatched ??= Object.freeze(externalShape(signature, spec)));
}

/**
 * The request's int64 dims as numbers. A dim beyond 2^53-1 cannot be an exact
 * number, and no request could carry that many elements: it is too large
 * (not negative, as its conversion might suggest).
 */
function requestShape(name: string, dims: readonly bigint[]): number[] {
  return dims.map((dim, i) => {
    if (dim < 0n) throw invalidArgument(`input '${name}': shape dimension ${i} is ${dim}; expected a non-negative integer`);
    if (dim > MAX_SAFE_DIM) {
      throw invalidArgument(`input '${name}': shape dimension ${i} is ${dim}, too large (expected at most ${Number.MAX_SAFE_INTEGER})`);
    }
    return Number(dim);
  });
}

const MAX_SAFE_DIM = BigInt(Number.MAX_SAFE_INTEGER);

/** The model sees a scalar per row although the config dims are all 1s: Triton's way of writing a scalar. */
function isScalarReshape(spec: TensorSpec): boolean {
  return spec.reshape !== undefined && spec.reshape.length === 0 && spec.dims.every((dim) => dim === 1);
}

function inputPayload(
  input: ModelInferRequest_InferInputTensor,
  spec: TensorSpec,
  shape: number[],
  batched: boolean,
  rawBytes: Uint8Array | undefined,
  ownCopy: boolean,
): TensorPayload {
  const count = elementCount(shape);
  const dims = modelDims(spec, shape, batched, count);
  const contents = input.contents;
  const hasTyped = contents !== undefined && typedContentCount(contents) > 0;
  if (rawBytes !== undefined && hasTyped) {
    throw invalidArgument(`input '${input.name}': both raw_input_contents and typed contents are given; send only one`);
  }
  if (rawBytes !== undefined) return rawPayload(input.name, spec, dims, count, rawBytes, ownCopy);
  return typedPayload(input.name, spec, dims, count, contents);
}

/** The shape handed to the model, applying the config's `reshape`. */
function modelDims(spec: TensorSpec, shape: number[], batched: boolean, count: number): number[] {
  if (spec.reshape === undefined) return shape;
  const rows = batched ? (shape[0] as number) : 1;
  const target = resolveReshape(spec.reshape, rows === 0 ? 0 : count / rows);
  if (target === undefined) {
    throw invalidArgument(`input '${spec.name}': shape ${formatShape(shape)} cannot be reshaped to ${formatShape(spec.reshape)}`);
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

function requestedOutputs(request: ModelInferRequest, signature: ModelSignature): readonly TensorSpec[] {
  // All of them, in the signature's order: the signature's own (read-only) list.
  if (request.outputs.length === 0) return signature.outputs;
  const seen = new Set<string>();
  return request.outputs.map((output) => {
    const spec = signature.outputsByName.get(output.name);
    if (spec === undefined) {
      throw invalidArgument(
        `unknown output ${echo(output.name)} requested from model '${signature.name}'; expected one of: ${listNames(signature.outputs)}`,
      );
    }
    if (seen.has(output.name)) throw invalidArgument(`output '${spec.name}' is requested more than once`);
    seen.add(output.name);
    if (output.parameters['classification'] !== undefined) {
      throw invalidArgument(`output '${spec.name}': the 'classification' parameter is not supported`);
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
