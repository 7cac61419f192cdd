// ONNX -> executor plan: parses a model file (the generated protobuf-es types)
// and flattens it into the table form the native executor compiles
// (src/native/executor-binding-types.ts ExecutorPlan, native/executor/plan.h).
//
//   const plan = planFromOnnx(bytes, { modelName: 'ctr:1', maxBatchSize: 64 });
//   Executor.create(plan, {...});        // plan.indexBounds, plan.io for the server
//
// What happens here, and what does not:
//   - every value (graph input, initializer, node output) becomes one tensor
//     entry, named operands become indices; an empty name is an omitted
//     optional operand (-1);
//   - initializers (raw_data or the typed fields) become little-endian bytes,
//     `Constant` nodes become initializers, a graph input that is also an
//     initializer is an initializer (ONNX's "default value" form);
//   - graph input shapes: with maxBatchSize > 0 the first dimension becomes -1
//     (the batch); any other dynamic dimension is refused, naming the input;
//   - op support is NOT decided here: nodes are passed through (other domains
//     as `${domain}.${op}`) and the native compiler refuses what it cannot
//     run, by op and node name, so there is one list of supported ops.
//
// Errors: OnnxPlanError with a gRPC-style code, INVALID_ARGUMENT for a
// malformed file, FAILED_PRECONDITION for valid ONNX the executor cannot take
// (external data, string tensors, dynamic inner dimensions). The server then
// falls back to onnxruntime with the message as the reason.
//
// Pure and synchronous; safe in any worker.
import { fromBinary } from '@bufbuild/protobuf';

import {
  AttributeProto_AttributeType,
  ModelProtoSchema,
  TensorProto_DataLocation,
  TensorProto_DataType,
  type AttributeProto,
  type GraphProto,
  type ModelProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from '../generated/onnx/onnx_pb.js';
import type { ExecutorPlan, PlanAttribute, PlanNode, PlanTensor } from '../native/executor-binding-types.js';

export type OnnxPlanErrorCode = 'INVALID_ARGUMENT' | 'FAILED_PRECONDITION';

export class OnnxPlanError extends Error {
  override readonly name = 'OnnxPlanError';

  constructor(
    readonly code: OnnxPlanErrorCode,
    readonly model: string,
    readonly reason: string,
  ) {
    super(`model '${model}': ${reason}`);
  }
}

export interface OnnxPlanOptions {
  /** "name:version", for messages. */
  readonly modelName: string;
  /** The config's max_batch_size; > 0: the first dimension of every graph input is the batch. */
  readonly maxBatchSize: number;
}

/** A graph input or output as the model declares it (the shape of a worker's IoTensorDescription). */
export interface OnnxTensorDescription {
  readonly name: string;
  /** ONNX TensorProto.DataType number. */
  readonly elemType: number;
  /** onnxruntime-node's tensor type name ('float32', 'int64', ...); 'onnx-<n>' for one it lacks. */
  readonly type: string;
  /** Full shape, batch dimension included; -1 for symbolic or unknown dimensions. */
  readonly shape: readonly number[];
}

export interface OnnxModelIo {
  readonly inputs: readonly OnnxTensorDescription[];
  readonly outputs: readonly OnnxTensorDescription[];
}

/**
 * A graph input used directly as Gather indices into an initializer table:
 * valid ids are in [-axisLength, axisLength). With several such Gathers, the
 * smallest table decides.
 */
export interface IndexBound {
  readonly input: string;
  readonly axisLength: number;
}

export interface OnnxPlan extends ExecutorPlan {
  readonly indexBounds: readonly IndexBound[];
  readonly io: OnnxModelIo;
}

// Bytes per element of the types whose data can be laid out here (STRING has none).
const elementBytes: ReadonlyMap<number, number> = new Map([
  [TensorProto_DataType.FLOAT, 4],
  [TensorProto_DataType.UINT8, 1],
  [TensorProto_DataType.INT8, 1],
  [TensorProto_DataType.UINT16, 2],
  [TensorProto_DataType.INT16, 2],
  [TensorProto_DataType.INT32, 4],
  [TensorProto_DataType.INT64, 8],
  [TensorProto_DataType.BOOL, 1],
  [TensorProto_DataType.FLOAT16, 2],
  [TensorProto_DataType.DOUBLE, 8],
  [TensorProto_DataType.UINT32, 4],
  [TensorProto_DataType.UINT64, 8],
  [TensorProto_DataType.BFLOAT16, 2],
]);

const ortTypes: ReadonlyMap<number, string> = new Map([
  [TensorProto_DataType.FLOAT, 'float32'],
  [TensorProto_DataType.UINT8, 'uint8'],
  [TensorProto_DataType.INT8, 'int8'],
  [TensorProto_DataType.UINT16, 'uint16'],
  [TensorProto_DataType.INT16, 'int16'],
  [TensorProto_DataType.INT32, 'int32'],
  [TensorProto_DataType.INT64, 'int64'],
  [TensorProto_DataType.STRING, 'string'],
  [TensorProto_DataType.BOOL, 'bool'],
  [TensorProto_DataType.FLOAT16, 'float16'],
  [TensorProto_DataType.DOUBLE, 'float64'],
  [TensorProto_DataType.UINT32, 'uint32'],
  [TensorProto_DataType.UINT64, 'uint64'],
]);

function typeName(elemType: number): string {
  return TensorProto_DataType[elemType] ?? String(elemType);
}

/**
 * INT attributes are int64 in ONNX; the plan carries JS numbers. Beyond 2^53
 * only sentinels appear (INT64_MAX as "to the end"), so clamping keeps them
 * beyond any real size without losing meaning.
 */
function toSafeNumber(value: bigint): number {
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  if (value > max) return Number.MAX_SAFE_INTEGER;
  if (value < -max) return -Number.MAX_SAFE_INTEGER;
  return Number(value);
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Builds the plan one graph at a time; `fail` carries the model name into every error. */
class PlanBuilder {
  readonly tensors: PlanTensor[] = [];
  readonly nodes: PlanNode[] = [];
  readonly #index = new Map<string, number>();

  constructor(private readonly model: string) {}

  fail(code: OnnxPlanErrorCode, reason: string): never {
    throw new OnnxPlanError(code, this.model, reason);
  }

  has(name: string): boolean {
    return this.#index.has(name);
  }

  indexOf(name: string): number | undefined {
    return this.#index.get(name);
  }

  add(tensor: PlanTensor): number {
    if (this.#index.has(tensor.name)) this.fail('INVALID_ARGUMENT', `value '${tensor.name}' is defined twice`);
    this.#index.set(tensor.name, this.tensors.length);
    this.tensors.push(tensor);
    return this.tensors.length - 1;
  }

  /** The little-endian bytes of an initializer (or a Constant's value). */
  tensorData(tensor: TensorProto, what: string): { dims: number[]; data: Uint8Array } {
    if (tensor.dataLocation === TensorProto_DataLocation.EXTERNAL || tensor.externalData.length > 0) {
      const location = tensor.externalData.find((e) => e.key === 'location')?.value ?? '?';
      this.fail('FAILED_PRECONDITION', `${what} keeps its data in an external file ('${location}'); the native executor needs the weights inside the model file`);
    }
    const dims = tensor.dims.map((d) => {
      if (d < 0n || d > BigInt(2 ** 40)) this.fail('INVALID_ARGUMENT', `${what} has an invalid dimension ${d}`);
      return Number(d);
    });
    const count = dims.reduce((a, b) => a * b, 1);
    const size = elementBytes.get(tensor.dataType);
    if (size === undefined) {
      this.fail('FAILED_PRECONDITION', `${what} has element type ${typeName(tensor.dataType)}, which the native executor does not hold`);
    }
    const bytes = count * size;
    if (tensor.rawData.length > 0) {
      if (tensor.rawData.length !== bytes) {
        this.fail('INVALID_ARGUMENT', `${what}: raw_data holds ${tensor.rawData.length} bytes, expected ${bytes} (${count} x ${size})`);
      }
      return { dims, data: tensor.rawData };
    }
    const out = new Uint8Array(bytes);
    const view = new DataView(out.buffer);
    const check = (field: string, length: number): void => {
      if (length !== count) this.fail('INVALID_ARGUMENT', `${what}: ${field} holds ${length} values, expected ${count}`);
    };
    switch (tensor.dataType) {
      case TensorProto_DataType.FLOAT:
        check('float_data', tensor.floatData.length);
        tensor.floatData.forEach((v, i) => view.setFloat32(i * 4, v, true));
        break;
      case TensorProto_DataType.DOUBLE:
        check('double_data', tensor.doubleData.length);
        tensor.doubleData.forEach((v, i) => view.setFloat64(i * 8, v, true));
        break;
      case TensorProto_DataType.INT64:
        check('int64_data', tensor.int64Data.length);
        tensor.int64Data.forEach((v, i) => view.setBigInt64(i * 8, v, true));
        break;
      case TensorProto_DataType.UINT32:
      case TensorProto_DataType.UINT64:
        check('uint64_data', tensor.uint64Data.length);
        tensor.uint64Data.forEach((v, i) => (size === 8 ? view.setBigUint64(i * 8, v, true) : view.setUint32(i * 4, Number(v), true)));
        break;
      default:
        // int32_data carries INT32, INT16, INT8, UINT16, UINT8, BOOL and
        // FLOAT16/BFLOAT16 (as bit patterns), each widened to int32.
        check('int32_data', tensor.int32Data.length);
        tensor.int32Data.forEach((v, i) => {
          if (size === 4) view.setInt32(i * 4, v, true);
          else if (size === 2) view.setUint16(i * 2, v & 0xffff, true);
          else view.setUint8(i, v & 0xff);
        });
        break;
    }
    return { dims, data: out };
  }

  addInitializer(tensor: TensorProto, what: string): void {
    if (tensor.name === '') this.fail('INVALID_ARGUMENT', `${what} has no name`);
    const { dims, data } = this.tensorData(tensor, `initializer '${tensor.name}'`);
    this.add({ name: tensor.name, dtype: tensor.dataType, dims, initializer: true, data });
  }
}

function elemTypeOf(info: ValueInfoProto): number | undefined {
  return info.type?.value.case === 'tensorType' ? info.type.value.value.elemType : undefined;
}

/** Declared dims: a number >= 0, or -1 for symbolic/unknown; undefined without a shape. */
function declaredDims(info: ValueInfoProto): number[] | undefined {
  if (info.type?.value.case !== 'tensorType') return undefined;
  const shape = info.type.value.value.shape;
  if (shape === undefined) return undefined;
  return shape.dim.map((d) => (d.value.case === 'dimValue' && d.value.value >= 0n ? Number(d.value.value) : -1));
}

function describe(info: ValueInfoProto): OnnxTensorDescription {
  const elemType = elemTypeOf(info) ?? TensorProto_DataType.UNDEFINED;
  return {
    name: info.name,
    elemType,
    type: info.type?.value.case === 'tensorType' ? (ortTypes.get(elemType) ?? `onnx-${elemType}`) : 'non-tensor',
    shape: declaredDims(info) ?? [],
  };
}

function toAttribute(attribute: AttributeProto): PlanAttribute | undefined {
  const name = attribute.name;
  switch (attribute.type) {
    case AttributeProto_AttributeType.INT:
      return { name, type: 'int', value: toSafeNumber(attribute.i) };
    case AttributeProto_AttributeType.FLOAT:
      return { name, type: 'float', value: attribute.f };
    case AttributeProto_AttributeType.INTS:
      return { name, type: 'ints', value: attribute.ints.map(toSafeNumber) };
    case AttributeProto_AttributeType.FLOATS:
      return { name, type: 'floats', value: [...attribute.floats] };
    case AttributeProto_AttributeType.STRING:
      return { name, type: 'string', value: utf8.decode(attribute.s) };
    default:
      // Graphs, tensors and the rest belong to ops the executor does not run
      // (If, Loop, ...); it refuses those by op name, so nothing is lost.
      return undefined;
  }
}

function nodeLabel(node: NodeProto, index: number): string {
  return node.name !== '' ? `node '${node.name}'` : `node #${index} (${node.opType})`;
}

/** A `Constant` node's value as an initializer of the same name as its output. */
function constantToInitializer(builder: PlanBuilder, node: NodeProto, index: number): void {
  const label = nodeLabel(node, index);
  const output = node.output[0];
  if (node.output.length !== 1 || output === undefined || output === '') builder.fail('INVALID_ARGUMENT', `${label}: Constant must have exactly one output`);
  if (node.attribute.length !== 1) builder.fail('INVALID_ARGUMENT', `${label}: Constant must have exactly one value attribute`);
  const attribute = node.attribute[0]!;
  const scalarOrList = (dtype: number, values: readonly number[], scalar: boolean, size: number): void => {
    const data = new Uint8Array(values.length * size);
    const view = new DataView(data.buffer);
    values.forEach((v, i) => (dtype === TensorProto_DataType.FLOAT ? view.setFloat32(i * 4, v, true) : view.setBigInt64(i * 8, BigInt(v), true)));
    builder.add({ name: output, dtype, dims: scalar ? [] : [values.length], initializer: true, data });
  };
  switch (attribute.name) {
    case 'value': {
      if (attribute.t === undefined) builder.fail('INVALID_ARGUMENT', `${label}: Constant 'value' holds no tensor`);
      const { dims, data } = builder.tensorData(attribute.t, `${label} (Constant)`);
      builder.add({ name: output, dtype: attribute.t.dataType, dims, initializer: true, data });
      return;
    }
    case 'value_float':
      return scalarOrList(TensorProto_DataType.FLOAT, [attribute.f], true, 4);
    case 'value_floats':
      return scalarOrList(TensorProto_DataType.FLOAT, attribute.floats, false, 4);
    case 'value_int':
      return scalarOrList(TensorProto_DataType.INT64, [toSafeNumber(attribute.i)], true, 8);
    case 'value_ints':
      return scalarOrList(TensorProto_DataType.INT64, attribute.ints.map(toSafeNumber), false, 8);
    default:
      builder.fail('FAILED_PRECONDITION', `${label}: Constant '${attribute.name}' is not supported by the native executor`);
  }
}

function graphInputDims(builder: PlanBuilder, info: ValueInfoProto, maxBatchSize: number): number[] {
  const dims = declaredDims(info);
  if (dims === undefined) builder.fail('FAILED_PRECONDITION', `input '${info.name}' declares no shape; the native executor needs fixed dimensions`);
  if (maxBatchSize > 0) {
    if (dims.length === 0) builder.fail('FAILED_PRECONDITION', `input '${info.name}' is a scalar, but max_batch_size ${maxBatchSize} needs a first (batch) dimension`);
    if (dims[0] !== -1) {
      builder.fail('FAILED_PRECONDITION', `input '${info.name}': the first dimension must be dynamic (the batch) with max_batch_size ${maxBatchSize}, got ${dims[0]}`);
    }
  }
  dims.forEach((d, k) => {
    if (d === -1 && !(maxBatchSize > 0 && k === 0)) {
      builder.fail('FAILED_PRECONDITION', `input '${info.name}': dimension ${k} is dynamic; the native executor needs every dimension but the batch fixed (shape [${dims.join(', ')}])`);
    }
  });
  return dims;
}

function aiOnnxOpset(builder: PlanBuilder, opsets: readonly { domain: string; version: bigint }[]): number {
  const entry = opsets.find((o) => o.domain === '' || o.domain === 'ai.onnx');
  if (entry === undefined) builder.fail('INVALID_ARGUMENT', 'the model imports no ai.onnx opset');
  return Number(entry.version);
}

/** Gather(data = initializer, indices = graph input): the id range each such input must respect. */
function indexBoundsOf(graph: GraphProto, builder: PlanBuilder, inputNames: ReadonlySet<string>): IndexBound[] {
  const bounds = new Map<string, number>();
  for (const node of graph.node) {
    if (node.opType !== 'Gather' || (node.domain !== '' && node.domain !== 'ai.onnx')) continue;
    const [data, indices] = node.input;
    if (data === undefined || indices === undefined || !inputNames.has(indices)) continue;
    const table = builder.tensors[builder.indexOf(data) ?? -1];
    if (table === undefined || !table.initializer) continue;
    const axisAttribute = node.attribute.find((a) => a.name === 'axis');
    const rank = table.dims.length;
    const axis = axisAttribute === undefined ? 0 : Number(axisAttribute.i);
    const length = table.dims[axis < 0 ? axis + rank : axis];
    if (length === undefined) continue; // a bad axis: the compiler says so
    bounds.set(indices, Math.min(length, bounds.get(indices) ?? Infinity));
  }
  return [...bounds].map(([input, axisLength]) => ({ input, axisLength }));
}

/** Parses `bytes` (an ONNX ModelProto) into the executor's plan; throws OnnxPlanError. */
export function planFromOnnx(bytes: Uint8Array, options: OnnxPlanOptions): OnnxPlan {
  const { modelName, maxBatchSize } = options;
  // Annotated: `fail` narrows (returns never) only through an explicitly typed reference.
  const builder: PlanBuilder = new PlanBuilder(modelName);
  if (!Number.isSafeInteger(maxBatchSize) || maxBatchSize < 0) builder.fail('INVALID_ARGUMENT', `maxBatchSize must be an integer >= 0, got ${String(maxBatchSize)}`);
  let model: ModelProto;
  try {
    model = fromBinary(ModelProtoSchema, bytes);
  } catch (error) {
    builder.fail('INVALID_ARGUMENT', `not an ONNX model: ${(error as Error).message}`);
  }
  const graph = model.graph;
  if (graph === undefined) builder.fail('INVALID_ARGUMENT', 'the model has no graph');
  const opset = aiOnnxOpset(builder, model.opsetImport);

  for (const initializer of graph.initializer) builder.addInitializer(initializer, 'an initializer');
  const inputs: number[] = [];
  const inputNames = new Set<string>();
  const realInputs: ValueInfoProto[] = [];
  for (const info of graph.input) {
    if (builder.has(info.name)) continue; // an initializer with a default: not fed
    const elemType = elemTypeOf(info);
    if (elemType === undefined) builder.fail('FAILED_PRECONDITION', `input '${info.name}' is not a tensor`);
    inputs.push(builder.add({ name: info.name, dtype: elemType, dims: graphInputDims(builder, info, maxBatchSize), initializer: false }));
    inputNames.add(info.name);
    realInputs.push(info);
  }

  // Declared types of intermediate values and outputs, when the file has them.
  const declared = new Map<string, number>();
  for (const info of [...graph.valueInfo, ...graph.output]) {
    const elemType = elemTypeOf(info);
    if (elemType !== undefined) declared.set(info.name, elemType);
  }

  graph.node.forEach((node, index) => {
    const label = nodeLabel(node, index);
    const inDefault = node.domain === '' || node.domain === 'ai.onnx';
    if (inDefault && node.opType === 'Constant') {
      constantToInitializer(builder, node, index);
      return;
    }
    const operands = node.input.map((name) => {
      if (name === '') return -1;
      const found = builder.indexOf(name);
      if (found === undefined) builder.fail('INVALID_ARGUMENT', `${label} reads '${name}', which no input, initializer or earlier node defines`);
      return found;
    });
    // Trailing omitted outputs are dropped; one in the middle stays -1.
    let outputNames = [...node.output];
    while (outputNames.length > 0 && outputNames[outputNames.length - 1] === '') outputNames = outputNames.slice(0, -1);
    const results = outputNames.map((name) =>
      name === '' ? -1 : builder.add({ name, dtype: declared.get(name) ?? TensorProto_DataType.FLOAT, dims: [], initializer: false }),
    );
    const attributes = node.attribute.map(toAttribute).filter((a): a is PlanAttribute => a !== undefined);
    builder.nodes.push({
      name: node.name,
      opType: inDefault ? node.opType : `${node.domain}.${node.opType}`,
      inputs: operands,
      outputs: results,
      attributes,
    });
  });

  const outputs = graph.output.map((info) => {
    const found = builder.indexOf(info.name);
    if (found === undefined) builder.fail('INVALID_ARGUMENT', `output '${info.name}' is not produced by any node`);
    return found;
  });

  return {
    modelName,
    opset,
    maxBatchSize,
    tensors: builder.tensors,
    nodes: builder.nodes,
    inputs,
    outputs,
    indexBounds: indexBoundsOf(graph, builder, inputNames),
    io: { inputs: realInputs.map(describe), outputs: graph.output.map(describe) },
  };
}
