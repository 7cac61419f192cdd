/**
 * Conversions between the three names every tensor datatype has in hotpath:
 *
 * - the Triton config enum (`DataType.TYPE_FP32`), used in config.pbtxt and the
 *   ModelConfig RPC;
 * - the KServe V2 wire string (`"FP32"`), used in ModelInfer and ModelMetadata;
 * - the onnxruntime-node tensor type (`'float32'`), used to build and read
 *   `Tensor`s and reported by an `InferenceSession`'s metadata.
 *
 * The names come from the one datatype table in tensor/wire-types.ts, so they
 * cannot drift apart. Every lookup returns
 * `undefined` for a value with no counterpart (TYPE_INVALID, or BF16, which
 * onnxruntime-node cannot hold) rather than throwing: callers turn that into
 * an error that names the tensor.
 */
import { DataType } from '../generated/model_config_pb.js';
import { WIRE_DATATYPES, wireTypeInfo } from '../tensor/wire-types.js';

interface DataTypeNames {
  readonly wire: string;
  /** Undefined where onnxruntime-node has no tensor type (BF16). */
  readonly ort: string | undefined;
  /** Bytes per element; undefined for BYTES, whose elements vary in length. */
  readonly size: number | undefined;
}

// Derived from the wire-type table, plus BF16, which Triton configs may name but
// onnxruntime-node cannot hold.
const TABLE: ReadonlyMap<DataType, DataTypeNames> = new Map<DataType, DataTypeNames>([
  ...WIRE_DATATYPES.map((wire): [DataType, DataTypeNames] => {
    const info = wireTypeInfo(wire);
    return [info.config, { wire, ort: info.ort, size: info.size === 0 ? undefined : info.size }];
  }),
  [DataType.TYPE_BF16, { wire: 'BF16', ort: undefined, size: 2 }],
]);

const BY_WIRE: ReadonlyMap<string, DataType> = new Map(
  [...TABLE].map(([dataType, names]) => [names.wire, dataType]),
);

const BY_ORT: ReadonlyMap<string, DataType> = new Map(
  [...TABLE].flatMap(([dataType, names]) =>
    names.ort === undefined ? [] : [[names.ort, dataType] as const],
  ),
);

/** `TYPE_FP32` → `"FP32"`, `TYPE_STRING` → `"BYTES"`; undefined for TYPE_INVALID. */
export function dataTypeToWire(dataType: DataType): string | undefined {
  return TABLE.get(dataType)?.wire;
}

/** `"FP32"` → `TYPE_FP32`; undefined for a string that is not a KServe datatype. */
export function wireToDataType(wire: string): DataType | undefined {
  return BY_WIRE.get(wire);
}

/** `'float32'` → `TYPE_FP32`; undefined for ORT types Triton has no enum for. */
export function ortTypeToDataType(ortType: string): DataType | undefined {
  return BY_ORT.get(ortType);
}

/** `TYPE_FP32` → `'float32'`; undefined for TYPE_INVALID and TYPE_BF16. */
export function dataTypeToOrtType(dataType: DataType): string | undefined {
  return TABLE.get(dataType)?.ort;
}

/** Fixed element size in bytes; undefined for TYPE_STRING (BYTES) and TYPE_INVALID. */
export function bytesPerElement(dataType: DataType): number | undefined {
  return TABLE.get(dataType)?.size;
}

/** The config spelling (`"TYPE_FP32"`) for messages; falls back to the number. */
export function dataTypeName(dataType: DataType): string {
  return DataType[dataType] ?? String(dataType);
}
