/**
 * The one infer request `hotpath perf` sends, built from the model's
 * metadata: every input, with the batch size prepended where the model
 * batches, variable dims taken from `--shape` (or the data file), and random,
 * zero or the file's data (input-data-file.ts). Encoded once, both as a gRPC
 * ModelInfer frame and as an HTTP/REST body in the binary tensor extension
 * (a JSON header naming each input's `binary_data_size`, then the raw bytes;
 * outputs asked for as binary too, so neither side spends time on JSON
 * numbers); the load generator sends those bytes as they are
 * (perf_analyzer also reuses one request's data).
 *
 * Pure apart from Math.random; safe in any thread.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { ModelInferRequestSchema } from '../generated/grpc_service_pb.js';
import type { ModelMetadata } from '../client/client.js';
import { UsageError } from '../common/flag-values.js';
import { isWireDatatype, wireTypeInfo } from '../tensor/wire-types.js';
import { modelPath } from './control-client.js';
import { grpcFrame } from './grpc-frames.js';
import { fileTensorBytes, type InputDataFile } from './input-data-file.js';

/** random, zero, or a perf_analyzer data file's one entry. */
export type InputData = 'random' | 'zero' | { readonly file: string; readonly tensors: InputDataFile };

export interface RequestSpec {
  readonly model: string;
  /** '' for the version policy's choice. */
  readonly version: string;
  /** Rows per request; only for a model that batches (max_batch_size > 0). */
  readonly batchSize: number;
  /** The model's max_batch_size (ModelConfig): 0 means the metadata's shape is the whole shape. */
  readonly maxBatchSize: number;
  /** `--shape NAME:DIMS`: an input's dims without the batch dimension. */
  readonly shapes: ReadonlyMap<string, readonly number[]>;
  readonly data: InputData;
}

export interface RequestBody {
  /** One length-prefixed gRPC message. */
  readonly frame: Buffer;
  /** The same request for the HTTP infer route: JSON header then the inputs' bytes. */
  readonly http: { readonly path: string; readonly body: Buffer; readonly jsonLength: number };
  /** Each input's shape as sent, for the report. */
  readonly shapes: Readonly<Record<string, readonly number[]>>;
}

/** Throws UsageError naming the input when a shape cannot be decided or a datatype cannot be generated. */
export function buildRequestBody(metadata: ModelMetadata, spec: RequestSpec): RequestBody {
  const batching = spec.maxBatchSize > 0;
  if (batching && spec.batchSize > spec.maxBatchSize) {
    throw new UsageError(`-b ${spec.batchSize}: model '${spec.model}' takes at most max_batch_size ${spec.maxBatchSize} rows a request`);
  }
  if (!batching && spec.batchSize !== 1) {
    throw new UsageError(`-b ${spec.batchSize}: model '${spec.model}' does not batch (max_batch_size 0); expected -b 1`);
  }
  for (const name of spec.shapes.keys()) {
    if (!metadata.inputs.some((input) => input.name === name)) {
      throw new UsageError(`--shape ${name}: model '${spec.model}' has no input '${name}' (inputs: ${metadata.inputs.map((i) => i.name).join(', ')})`);
    }
  }
  const file = typeof spec.data === 'object' ? spec.data : undefined;
  if (file !== undefined) {
    for (const name of file.tensors.keys()) {
      if (!metadata.inputs.some((input) => input.name === name)) {
        throw new UsageError(`--input-data ${file.file}: field 'data[0].${name}': model '${spec.model}' has no input '${name}' (inputs: ${metadata.inputs.map((i) => i.name).join(', ')})`);
      }
    }
  }
  const shapes: Record<string, number[]> = {};
  const inputs = metadata.inputs.map((input) => {
    // The metadata's shape includes the batch dimension (-1) where the model batches.
    const dims = batching ? input.shape.slice(1) : input.shape;
    const fromFile = file?.tensors.get(input.name);
    if (file !== undefined && fromFile === undefined) {
      throw new UsageError(`--input-data ${file.file}: field 'data[0]' has no '${input.name}' (the model's inputs: ${metadata.inputs.map((i) => i.name).join(', ')})`);
    }
    const given = spec.shapes.get(input.name) ?? (fromFile?.kind === 'values' ? fromFile.shape : undefined);
    if (given !== undefined && given.length !== dims.length) {
      throw new UsageError(`--shape ${input.name}:${given.join(',')}: expected ${dims.length} dims (the model's [${dims.join(', ')}]${batching ? ', without the batch dimension' : ''})`);
    }
    const concrete = dims.map((dim, i) => {
      if (given !== undefined) {
        if (dim !== -1 && given[i] !== dim) {
          throw new UsageError(`--shape ${input.name}: dim ${i} is fixed at ${dim} by the model, got ${given[i]}`);
        }
        return given[i]!;
      }
      if (dim === -1) {
        throw new UsageError(`input '${input.name}' has a variable dim (shape [${dims.join(', ')}]): give it with --shape ${input.name}:DIMS`);
      }
      return dim;
    });
    const shape = batching ? [spec.batchSize, ...concrete] : concrete;
    shapes[input.name] = shape;
    const bytes = fromFile === undefined || file === undefined
      ? inputBytes(input.name, input.datatype, shape, spec.data === 'zero' ? 'zero' : 'random')
      : repeated(fileTensorBytes(fromFile, input.datatype, concrete.reduce((n, d) => n * d, 1), `--input-data ${file.file}: field 'data[0].${input.name}'`), batching ? spec.batchSize : 1);
    return { name: input.name, datatype: input.datatype, shape, bytes };
  });
  const request = create(ModelInferRequestSchema, {
    modelName: spec.model,
    modelVersion: spec.version,
    inputs: inputs.map(({ name, datatype, shape }) => ({ name, datatype, shape: shape.map(BigInt) })),
    rawInputContents: inputs.map(({ bytes }) => bytes),
  });
  const header = Buffer.from(JSON.stringify({
    inputs: inputs.map(({ name, datatype, shape, bytes }) => ({ name, datatype, shape, parameters: { binary_data_size: bytes.byteLength } })),
    parameters: { binary_data_output: true },
  }));
  const path = `${modelPath(spec.model, spec.version)}/infer`;
  return {
    frame: grpcFrame(toBinary(ModelInferRequestSchema, request)),
    http: { path, body: Buffer.concat([header, ...inputs.map(({ bytes }) => bytes)]), jsonLength: header.length },
    shapes,
  };
}

/** A batch of `rows` copies of one element's bytes (perf_analyzer's -b with file data). */
function repeated(element: Buffer, rows: number): Buffer {
  return rows === 1 ? element : Buffer.concat(Array.from({ length: rows }, () => element));
}

/**
 * Little-endian element bytes. Random values are small on purpose: floats in
 * [0, 1) and integers 0 or 1, so an integer input that indexes an embedding
 * table stays in range; BYTES elements are the 4-byte length-prefixed "perf".
 */
function inputBytes(name: string, datatype: string, shape: readonly number[], data: 'random' | 'zero'): Uint8Array {
  if (!isWireDatatype(datatype)) throw new UsageError(`input '${name}': datatype '${datatype}' cannot be generated`);
  const count = shape.reduce((product, dim) => product * dim, 1);
  if (datatype === 'BYTES') {
    const element = Buffer.from([4, 0, 0, 0, 0x70, 0x65, 0x72, 0x66]);
    return Buffer.concat(Array.from({ length: count }, () => element));
  }
  const info = wireTypeInfo(datatype);
  const bytes = new Uint8Array(count * info.size);
  if (data === 'zero') return bytes;
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < count; i += 1) {
    const offset = i * info.size;
    switch (datatype) {
      case 'FP32': view.setFloat32(offset, Math.random(), true); break;
      case 'FP64': view.setFloat64(offset, Math.random(), true); break;
      // Half precision in [0, 1): a random mantissa under exponent 14 (0.5..1) or zero.
      case 'FP16': view.setUint16(offset, Math.random() < 0.5 ? 0 : 0x3800 | Math.floor(Math.random() * 1024), true); break;
      default: bytes[offset] = Math.random() < 0.5 ? 0 : 1; // integers and BOOL: 0 or 1, little-endian
    }
  }
  return bytes;
}
