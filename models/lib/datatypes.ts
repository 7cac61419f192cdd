// The tensor datatypes the sample models use, named the way the KServe V2 protocol
// names them ("FP32", "BYTES", ...), with the matching ONNX element type and the
// Triton model-config enum name used in config.pbtxt.
//
// Note the one irregular pair: protocol BYTES is ONNX STRING and config TYPE_STRING.

import { DataType } from '../../src/generated/model_config_pb.js';
import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import { WIRE_DATATYPES, wireTypeInfo, type WireDatatype } from '../../src/tensor/wire-types.js';

export type TritonDatatype = WireDatatype;

export interface DatatypeInfo {
  /** ONNX TensorProto element type. */
  readonly onnx: TensorProto_DataType;
  /** Triton model-config `data_type` enum name. */
  readonly config: string;
}

// The ONNX element type is the one thing the server's datatype table does not know.
const ONNX_ELEMENT_TYPES: Readonly<Record<TritonDatatype, TensorProto_DataType>> = {
  BOOL: TensorProto_DataType.BOOL,
  UINT8: TensorProto_DataType.UINT8,
  INT8: TensorProto_DataType.INT8,
  UINT16: TensorProto_DataType.UINT16,
  INT16: TensorProto_DataType.INT16,
  INT32: TensorProto_DataType.INT32,
  INT64: TensorProto_DataType.INT64,
  UINT32: TensorProto_DataType.UINT32,
  UINT64: TensorProto_DataType.UINT64,
  FP16: TensorProto_DataType.FLOAT16,
  FP32: TensorProto_DataType.FLOAT,
  FP64: TensorProto_DataType.DOUBLE,
  BYTES: TensorProto_DataType.STRING,
};

export const DATATYPES: Readonly<Record<TritonDatatype, DatatypeInfo>> = Object.fromEntries(
  WIRE_DATATYPES.map((dt) => [dt, { onnx: ONNX_ELEMENT_TYPES[dt], config: DataType[wireTypeInfo(dt).config] as string }]),
) as Record<TritonDatatype, DatatypeInfo>;

/** All datatypes, in a fixed order (handy for test matrices). */
export const TRITON_DATATYPES: readonly TritonDatatype[] = WIRE_DATATYPES;
