/**
 * Builds the warm-up plan of a model version from its completed config, on the
 * main thread, once per load; every worker then runs the same plan.
 *
 * - `model_warmup` entries are honoured as in Triton: `batch_size`, `count`
 *   (runs, at least 1) and per-input `zero_data`, `random_data` or
 *   `input_data_file` (raw row-major bytes of ONE sample, read from the model's
 *   `warmup/` folder; BYTES elements length-prefixed). With batch_size > 1 the
 *   sample is repeated batch_size times, as Triton does.
 * - Without `model_warmup`, the default warm-up runs zero data once at batch 1
 *   and once at max_batch_size (a model without batching: once, with every
 *   variable dimension set to 1). Switched off by `--no-default-warmup` or the
 *   config parameter `hotpath_default_warmup: "false"`.
 *
 * Tensors come out in the model's view (config `reshape` applied), exactly
 * like a validated request hands them to a worker.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ModelConfig, ModelWarmup_Input } from '../generated/model_config_pb.js';
import type { ModelSignature, TensorSpec } from '../tensor/model-signature.js';
import { BytesFormatError, decodeBytesTensor, encodeBytesTensor } from '../tensor/bytes-codec.js';
import { elementCount, formatShape, resolveReshape } from '../tensor/shape.js';
import { wireTypeInfo, type NumericArray } from '../tensor/wire-types.js';
import type { TensorPayload, WarmupSample } from '../workers/worker-protocol.js';

/** Config parameter that switches the default warm-up off for one model. */
export const DEFAULT_WARMUP_PARAMETER = 'hotpath_default_warmup';
/** Test-only config parameter (honoured with --enable-fault-injection): each worker sleeps before warming. */
export const WARMUP_DELAY_PARAMETER = 'hotpath_fault_warmup_delay_ms';
/** Folder inside the model directory that holds `input_data_file`s. */
export const WARMUP_FOLDER = 'warmup';

export interface WarmupOptions {
  /** The model directory (`DIR/<model>`), where `warmup/` lives. */
  readonly modelDir: string;
  /** False when the server runs with --no-default-warmup. */
  readonly defaultWarmup: boolean;
  /** Uniform [0, 1) source for random_data; injectable for tests. */
  readonly random?: () => number;
}

/** A warm-up that cannot be built: the message names the sample, the input and what is wrong. */
export class WarmupConfigError extends Error {
  override readonly name = 'WarmupConfigError';
}

export async function buildWarmupSamples(
  config: ModelConfig,
  signature: ModelSignature,
  options: WarmupOptions,
): Promise<WarmupSample[]> {
  const random = options.random ?? Math.random;
  if (config.modelWarmup.length > 0) {
    const samples: WarmupSample[] = [];
    for (const [index, entry] of config.modelWarmup.entries()) {
      const name = entry.name || `model_warmup[${index}]`;
      const batch = signature.maxBatchSize > 0 ? Math.max(1, entry.batchSize) : 1;
      const inputs: TensorPayload[] = [];
      for (const spec of signature.inputs) {
        const input = entry.inputs[spec.name];
        if (input === undefined) throw new WarmupConfigError(`warm-up sample '${name}': missing input '${spec.name}'`);
        const dims = input.dims.map(Number);
        const data = await sampleData(name, spec, input, elementCount(dims), options.modelDir, random);
        inputs.push(payload(name, spec, signature, dims, batch, data));
      }
      samples.push({ name, runs: Math.max(1, entry.count), inputs, required: true });
    }
    return samples;
  }
  if (!options.defaultWarmup || config.parameters[DEFAULT_WARMUP_PARAMETER]?.stringValue === 'false') return [];
  const batches = signature.maxBatchSize > 0 ? [...new Set([1, signature.maxBatchSize])] : [1];
  return batches.map((batch) => ({
    name: signature.maxBatchSize > 0 ? `default batch ${batch}` : 'default',
    runs: 1,
    required: false,
    inputs: signature.inputs.map((spec) => {
      const dims = spec.dims.map((dim) => (dim === -1 ? 1 : dim));
      return payload('default', spec, signature, dims, batch, zeroData(spec, elementCount(dims)));
    }),
  }));
}

/** The test-only per-worker delay, when the config asks for one and fault injection is on. */
export function warmupDelayMs(config: ModelConfig, faultInjection: boolean): number {
  const raw = config.parameters[WARMUP_DELAY_PARAMETER]?.stringValue;
  if (raw === undefined || !faultInjection) return 0;
  const value = Number(raw);
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/** One sample's data: a typed array of `count` elements, or BYTES wire bytes. */
type SampleData = NumericArray | { readonly bytes: Uint8Array };

function payload(
  sample: string,
  spec: TensorSpec,
  signature: ModelSignature,
  dims: readonly number[],
  batch: number,
  data: SampleData,
): TensorPayload {
  let modelDims = [...dims];
  if (spec.reshape !== undefined) {
    const target = resolveReshape(spec.reshape, elementCount(dims));
    if (target === undefined) {
      throw new WarmupConfigError(
        `warm-up sample '${sample}': input '${spec.name}': dims ${formatShape(dims)} cannot be reshaped to ${formatShape(spec.reshape)}`,
      );
    }
    modelDims = target;
  }
  const shape = signature.maxBatchSize > 0 ? [batch, ...modelDims] : modelDims;
  return { name: spec.name, type: spec.ortType, dims: shape, data: repeat(data, batch) };
}

/** The sample repeated `times` times (Triton duplicates the inputs to the batch size). */
function repeat(data: SampleData, times: number): NumericArray | Uint8Array {
  const one = 'bytes' in data ? data.bytes : data;
  if (times === 1) return one;
  const out = new (one.constructor as new (length: number) => NumericArray | Uint8Array)(one.length * times);
  for (let i = 0; i < times; i++) (out as Uint8Array).set(one as Uint8Array, i * one.length);
  return out;
}

async function sampleData(
  sample: string,
  spec: TensorSpec,
  input: ModelWarmup_Input,
  count: number,
  modelDir: string,
  random: () => number,
): Promise<SampleData> {
  switch (input.inputDataType.case) {
    case 'zeroData':
      return zeroData(spec, count);
    case 'randomData':
      return randomData(spec, count, random);
    case 'inputDataFile':
      return fileData(sample, spec, input.inputDataType.value, count, modelDir);
    default:
      throw new WarmupConfigError(
        `warm-up sample '${sample}': input '${spec.name}': expected one of zero_data, random_data or input_data_file`,
      );
  }
}

function zeroData(spec: TensorSpec, count: number): SampleData {
  if (spec.datatype === 'BYTES') return { bytes: encodeBytesTensor(new Array<string>(count).fill('')) };
  return new (typedArray(spec))(count);
}

function randomData(spec: TensorSpec, count: number, random: () => number): SampleData {
  if (spec.datatype === 'BYTES') {
    const word = () => Math.floor(random() * 0xffffff).toString(36);
    return { bytes: encodeBytesTensor(Array.from({ length: count }, word)) };
  }
  const array = new (typedArray(spec))(count);
  for (let i = 0; i < count; i++) {
    switch (spec.datatype) {
      case 'FP32':
      case 'FP64':
        (array as Float32Array)[i] = random();
        break;
      case 'FP16':
        // Half-precision bit patterns of values in [0, 1): exponent below 15.
        (array as Uint16Array)[i] = Math.floor(random() * 0x3c00);
        break;
      case 'BOOL':
        (array as Uint8Array)[i] = random() < 0.5 ? 0 : 1;
        break;
      case 'INT64':
      case 'UINT64':
        (array as BigInt64Array)[i] = BigInt(Math.floor(random() * 100));
        break;
      default:
        // Small non-negative integers fit every integer type (and are valid ids for embedding tables).
        (array as Int32Array)[i] = Math.floor(random() * 100);
    }
  }
  return array;
}

async function fileData(sample: string, spec: TensorSpec, file: string, count: number, modelDir: string): Promise<SampleData> {
  const folder = path.join(modelDir, WARMUP_FOLDER);
  const resolved = path.resolve(folder, file);
  const where = `warm-up sample '${sample}': input '${spec.name}': input_data_file '${file}'`;
  if (!resolved.startsWith(folder + path.sep)) throw new WarmupConfigError(`${where} must name a file inside ${WARMUP_FOLDER}/`);
  let bytes: Buffer;
  try {
    bytes = await readFile(resolved);
  } catch (err) {
    throw new WarmupConfigError(`${where}: cannot read ${resolved}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (spec.datatype === 'BYTES') {
    try {
      decodeBytesTensor(bytes, count);
    } catch (err) {
      if (err instanceof BytesFormatError) throw new WarmupConfigError(`${where}: malformed BYTES: ${err.message}`);
      throw err;
    }
    return { bytes: new Uint8Array(bytes) };
  }
  const size = wireTypeInfo(spec.datatype).size;
  if (bytes.byteLength !== count * size) {
    throw new WarmupConfigError(
      `${where}: expected ${count * size} bytes (${count} elements of ${spec.datatype}), got ${bytes.byteLength} bytes`,
    );
  }
  // An aligned, owned copy (a Buffer from readFile may sit at any offset of a shared pool).
  const owned = new Uint8Array(bytes.byteLength);
  owned.set(bytes);
  return new (typedArray(spec))(owned.buffer as never, 0, count);
}

function typedArray(spec: TensorSpec): {
  new (length: number): NumericArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): NumericArray;
} {
  const ctor = wireTypeInfo(spec.datatype).array;
  if (ctor === undefined) throw new Error(`${spec.datatype} has no fixed-size element type`);
  return ctor;
}
