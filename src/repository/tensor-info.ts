/**
 * The model's own inputs and outputs (as a worker's session or the ONNX file
 * declares them) in the form config auto-completion takes.
 */
import { DataType } from '../generated/model_config_pb.js';
import type { ModelIoDescription } from '../workers/worker-protocol.js';
import type { TensorInfo } from './config-autocomplete.js';
import { ortTypeToDataType } from './datatypes.js';

export function toTensorInfo(io: Pick<ModelIoDescription, 'inputs' | 'outputs'>): { inputs: TensorInfo[]; outputs: TensorInfo[] } {
  const convert = (t: ModelIoDescription['inputs'][number]): TensorInfo => ({
    name: t.name,
    // A type outside Triton's set (e.g. a sequence or map output) fails validation by name.
    dataType: ortTypeToDataType(t.type) ?? DataType.TYPE_INVALID,
    shape: [...t.shape],
  });
  return { inputs: io.inputs.map(convert), outputs: io.outputs.map(convert) };
}
