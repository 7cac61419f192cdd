// A very small ONNX graph builder on top of the generated protobuf-es types
// (src/generated/onnx/onnx_pb.ts). It knows just enough to write the sample models:
// typed graph inputs/outputs, float/integer/raw initializers, nodes with attributes,
// and the ModelProto envelope. Nothing here reads models; ONNX Runtime does that.
//
// Serialisation is deterministic: the same builder calls produce the same bytes,
// because nothing time- or host-dependent goes into the model and protobuf-es writes
// fields in a fixed order.

import { create, toBinary } from '@bufbuild/protobuf';
import {
  AttributeProto_AttributeType,
  AttributeProtoSchema,
  GraphProtoSchema,
  ModelProtoSchema,
  NodeProtoSchema,
  OperatorSetIdProtoSchema,
  StringStringEntryProtoSchema,
  TensorProto_DataType,
  TensorProtoSchema,
  TensorShapeProto_DimensionSchema,
  TensorShapeProtoSchema,
  TypeProto_TensorSchema,
  TypeProtoSchema,
  ValueInfoProtoSchema,
  type AttributeProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from '../../src/generated/onnx/onnx_pb.js';

/** Default operator set: ai.onnx 17 (ORT 1.30 supports well beyond it). */
export const ONNX_OPSET = { domain: '', version: 17 } as const;
/**
 * ai.onnx.ml 3: the TreeEnsembleRegressor version that LightGBM/onnxmltools exports
 * target; it accepts the plain float-list attributes we write.
 */
export const ONNX_ML_OPSET = { domain: 'ai.onnx.ml', version: 3 } as const;
/** IR version 8 is the one that goes with opsets 15 to 18. */
const IR_VERSION = 8n;
/** Fixed producer fields: no version or date, so regenerating never changes bytes. */
const PRODUCER_NAME = 'hotpath-models';
const PRODUCER_VERSION = '1';

/**
 * One dimension of a declared shape:
 * - a number >= 0 is a fixed size;
 * - a string is a named symbolic dimension (dim_param, e.g. "batch");
 * - -1 is an unnamed unknown dimension (neither dim_value nor dim_param set).
 */
export type Dim = number | string;

/** A graph input or output of tensor type. */
export function tensorValueInfo(name: string, elemType: TensorProto_DataType, dims: readonly Dim[]): ValueInfoProto {
  const dim = dims.map((d) => {
    if (typeof d === 'string') return create(TensorShapeProto_DimensionSchema, { value: { case: 'dimParam', value: d } });
    if (d === -1) return create(TensorShapeProto_DimensionSchema);
    if (!Number.isInteger(d) || d < 0) throw new RangeError(`invalid dimension ${d} for ${name}`);
    return create(TensorShapeProto_DimensionSchema, { value: { case: 'dimValue', value: BigInt(d) } });
  });
  const tensorType = create(TypeProto_TensorSchema, {
    elemType,
    shape: create(TensorShapeProtoSchema, { dim }),
  });
  return create(ValueInfoProtoSchema, {
    name,
    type: create(TypeProtoSchema, { value: { case: 'tensorType', value: tensorType } }),
  });
}

/**
 * A FLOAT initializer stored as raw_data. raw_data is specified as little-endian, so
 * the bytes are written through a DataView rather than by aliasing the array (which
 * would follow the host's byte order).
 */
export function floatInitializer(name: string, dims: readonly number[], values: Float32Array): TensorProto {
  const count = dims.reduce((a, b) => a * b, 1);
  if (count !== values.length) throw new RangeError(`${name}: ${values.length} values for shape [${dims.join(', ')}]`);
  const raw = new Uint8Array(values.length * 4);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i]!, true);
  return create(TensorProtoSchema, {
    name,
    dims: dims.map((d) => BigInt(d)),
    dataType: TensorProto_DataType.FLOAT,
    rawData: raw,
  });
}

/**
 * An initializer of any element type from its little-endian bytes (raw_data), e.g.
 * FLOAT16 bit patterns. `raw` must hold exactly count * element size bytes; the
 * typed helpers below check that, this one trusts the caller.
 */
export function rawInitializer(name: string, dims: readonly number[], dataType: TensorProto_DataType, raw: Uint8Array): TensorProto {
  return create(TensorProtoSchema, { name, dims: dims.map((d) => BigInt(d)), dataType, rawData: raw });
}

function checkCount(name: string, dims: readonly number[], length: number): void {
  const count = dims.reduce((a, b) => a * b, 1);
  if (count !== length) throw new RangeError(`${name}: ${length} values for shape [${dims.join(', ')}]`);
}

/**
 * An INT64 initializer: Reshape shapes, ReduceSum/Squeeze/Unsqueeze axes, Gather
 * indices. Numbers must be safe integers.
 */
export function int64Initializer(name: string, dims: readonly number[], values: ArrayLike<number | bigint>): TensorProto {
  checkCount(name, dims, values.length);
  const raw = new Uint8Array(values.length * 8);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new RangeError(`${name}: ${v} is not a safe integer`);
    view.setBigInt64(i * 8, BigInt(v), true);
  }
  return rawInitializer(name, dims, TensorProto_DataType.INT64, raw);
}

/** An INT32 initializer. */
export function int32Initializer(name: string, dims: readonly number[], values: ArrayLike<number>): TensorProto {
  checkCount(name, dims, values.length);
  const raw = new Uint8Array(values.length * 4);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) throw new RangeError(`${name}: ${v} is not an int32`);
    view.setInt32(i * 4, v, true);
  }
  return rawInitializer(name, dims, TensorProto_DataType.INT32, raw);
}

/** A DOUBLE initializer. */
export function doubleInitializer(name: string, dims: readonly number[], values: ArrayLike<number>): TensorProto {
  checkCount(name, dims, values.length);
  const raw = new Uint8Array(values.length * 8);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat64(i * 8, values[i]!, true);
  return rawInitializer(name, dims, TensorProto_DataType.DOUBLE, raw);
}

const utf8 = new TextEncoder();

// Attribute constructors. `type` must always be set: readers use it, not field
// presence, to decide which value field holds the attribute.

export function attrFloat(name: string, f: number): AttributeProto {
  return create(AttributeProtoSchema, { name, type: AttributeProto_AttributeType.FLOAT, f });
}

export function attrInt(name: string, i: number): AttributeProto {
  return create(AttributeProtoSchema, { name, type: AttributeProto_AttributeType.INT, i: BigInt(i) });
}

export function attrString(name: string, s: string): AttributeProto {
  return create(AttributeProtoSchema, { name, type: AttributeProto_AttributeType.STRING, s: utf8.encode(s) });
}

export function attrFloats(name: string, floats: ArrayLike<number>): AttributeProto {
  return create(AttributeProtoSchema, { name, type: AttributeProto_AttributeType.FLOATS, floats: Array.from(floats) });
}

export function attrInts(name: string, ints: ArrayLike<number>): AttributeProto {
  return create(AttributeProtoSchema, {
    name,
    type: AttributeProto_AttributeType.INTS,
    ints: Array.from(ints, (v) => BigInt(v)),
  });
}

export function attrStrings(name: string, strings: readonly string[]): AttributeProto {
  return create(AttributeProtoSchema, {
    name,
    type: AttributeProto_AttributeType.STRINGS,
    strings: strings.map((s) => utf8.encode(s)),
  });
}

export interface NodeOptions {
  /** Node name; defaults to `<op_type>_<first output>`, which is unique per graph here. */
  name?: string;
  /** Operator-set domain; empty means ai.onnx. */
  domain?: string;
  attributes?: AttributeProto[];
}

export function node(opType: string, inputs: readonly string[], outputs: readonly string[], opts: NodeOptions = {}): NodeProto {
  return create(NodeProtoSchema, {
    opType,
    input: [...inputs],
    output: [...outputs],
    name: opts.name ?? `${opType}_${outputs[0] ?? ''}`,
    ...(opts.domain !== undefined && opts.domain !== '' ? { domain: opts.domain } : {}),
    attribute: opts.attributes ?? [],
  });
}

export interface GraphSpec {
  name: string;
  /** Human-readable description; lands in ModelProto.doc_string. */
  doc: string;
  inputs: ValueInfoProto[];
  outputs: ValueInfoProto[];
  /** Nodes in topological order. */
  nodes: NodeProto[];
  initializers?: TensorProto[];
  /** Operator sets to import; defaults to [ONNX_OPSET]. */
  opsets?: ReadonlyArray<{ domain: string; version: number }>;
  /** Extra ModelProto.metadata_props entries, written in the given order. */
  metadata?: ReadonlyArray<readonly [string, string]>;
}

/** Assemble and serialise a ModelProto. */
export function serializeModel(spec: GraphSpec): Uint8Array {
  const graph = create(GraphProtoSchema, {
    name: spec.name,
    node: spec.nodes,
    initializer: spec.initializers ?? [],
    input: spec.inputs,
    output: spec.outputs,
  });
  const model = create(ModelProtoSchema, {
    irVersion: IR_VERSION,
    opsetImport: (spec.opsets ?? [ONNX_OPSET]).map((o) =>
      create(OperatorSetIdProtoSchema, { domain: o.domain, version: BigInt(o.version) }),
    ),
    producerName: PRODUCER_NAME,
    producerVersion: PRODUCER_VERSION,
    modelVersion: 1n,
    docString: spec.doc,
    graph,
    metadataProps: (spec.metadata ?? []).map(([key, value]) => create(StringStringEntryProtoSchema, { key, value })),
  });
  return toBinary(ModelProtoSchema, model);
}
