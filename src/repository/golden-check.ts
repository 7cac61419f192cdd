/**
 * Golden checks: known inputs with expected outputs, shipped next to a model in
 * `DIR/<model>/golden/*.json` and run after warm-up. A model exported with its
 * features reordered scores without any error; only a comparison against
 * known answers catches it, so a mismatch keeps the version from turning READY
 * and its reason says exactly which value differed.
 *
 * One JSON file per case:
 *
 *   {
 *     "inputs":  { "features": [[0.1, 0.2, ...], [0.3, 0.4, ...]] },
 *     "outputs": { "score": [[0.731], [0.269]] },
 *     "tolerance": 1e-4
 *   }
 *
 * A tensor is a nested array in its full client shape (batch dimension
 * included), or `{"shape": [2, 32], "data": [...flat row-major...]}`, or
 * `{"shape": [2, 32], "base64": "..."}` with raw little-endian bytes (needed
 * for FP16; BYTES elements length-prefixed, as on the wire). Datatypes come
 * from the model's config. Numbers match when |got - expected| <= tolerance
 * (default 1e-5); BYTES, BOOL and integers compare exactly unless a tolerance
 * covers the difference. Outputs not listed are not checked.
 *
 * Pure functions apart from `loadGoldenCases`; main thread.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { ModelInferRequestSchema, type ModelInferRequest } from '../generated/grpc_service_pb.js';
import type { ModelSignature } from '../tensor/model-signature.js';
import { decodeBytesTensor, encodeBytesTensor } from '../tensor/bytes-codec.js';
import { elementCount, formatShape } from '../tensor/shape.js';
import { typedArrayBytes, wireTypeInfo, type NumericArray, type WireDatatype } from '../tensor/wire-types.js';
import { prepareInference } from '../tensor/infer-request.js';
import { epochMs, inlineOutputs, type InferResult, type InferTask, type TensorPayload } from '../workers/worker-protocol.js';
import { halfToFloat } from '../tensor/float16.js';

export const GOLDEN_FOLDER = 'golden';
export const DEFAULT_GOLDEN_TOLERANCE = 1e-5;

type Scalar = number | bigint | boolean | string;

export interface GoldenTensor {
  readonly shape: readonly number[];
  /** Flat row-major values; undefined when given as base64. */
  readonly values?: readonly Scalar[];
  readonly raw?: Uint8Array;
}

export interface GoldenCase {
  /** `golden/<file>.json`, as quoted in failure reasons. */
  readonly file: string;
  readonly inputs: ReadonlyMap<string, GoldenTensor>;
  readonly outputs: ReadonlyMap<string, GoldenTensor>;
  readonly tolerance: number;
}

/** A golden case that fails, or cannot be run: the message is the model's state reason. */
export class GoldenCheckError extends Error {
  override readonly name = 'GoldenCheckError';
  constructor(detail: string) {
    super(`golden check failed: ${detail}`);
  }
}

/** Every `golden/*.json` of a model, sorted by name; none when the folder is absent. */
export async function loadGoldenCases(modelDir: string): Promise<GoldenCase[]> {
  const folder = path.join(modelDir, GOLDEN_FOLDER);
  let names: string[];
  try {
    names = (await readdir(folder)).filter((name) => name.endsWith('.json')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const cases: GoldenCase[] = [];
  for (const name of names) {
    const file = `${GOLDEN_FOLDER}/${name}`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readFile(path.join(folder, name), 'utf8'));
    } catch (err) {
      throw new GoldenCheckError(`${file}: not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    cases.push(parseGoldenCase(file, parsed));
  }
  return cases;
}

export function parseGoldenCase(file: string, json: unknown): GoldenCase {
  const fail = (why: string): never => {
    throw new GoldenCheckError(`${file}: ${why}`);
  };
  if (!isObject(json)) return fail('expected an object with "inputs" and "outputs"');
  const tolerance = json['tolerance'] ?? DEFAULT_GOLDEN_TOLERANCE;
  if (typeof tolerance !== 'number' || !(tolerance >= 0)) return fail(`"tolerance": expected a number >= 0, got ${JSON.stringify(tolerance)}`);
  const tensors = (key: 'inputs' | 'outputs'): Map<string, GoldenTensor> => {
    const section = json[key];
    if (!isObject(section) || Object.keys(section).length === 0) return fail(`"${key}": expected an object of named tensors`);
    return new Map(Object.entries(section).map(([name, value]) => [name, parseTensor(`${key}.${name}`, value, fail)]));
  };
  return { file, inputs: tensors('inputs'), outputs: tensors('outputs'), tolerance };
}

/** The case's inputs as a ModelInferRequest, so they pass the same validation as a client's. */
export function goldenRequest(golden: GoldenCase, signature: ModelSignature): ModelInferRequest {
  const request = create(ModelInferRequestSchema, { modelName: signature.name, id: golden.file });
  for (const [name, tensor] of golden.inputs) {
    const spec = signature.inputsByName.get(name);
    if (spec === undefined) {
      throw new GoldenCheckError(`${golden.file}: unknown input '${name}'; expected inputs: ${signature.inputs.map((s) => s.name).join(', ')}`);
    }
    request.inputs.push({
      $typeName: 'inference.ModelInferRequest.InferInputTensor',
      name,
      datatype: spec.datatype,
      shape: tensor.shape.map(BigInt),
      parameters: {},
    });
    request.rawInputContents.push(tensor.raw ?? encodeValues(golden.file, name, spec.datatype, tensor.values ?? []));
  }
  return request;
}

/**
 * Compares produced outputs with the case's expectations. Returns undefined
 * when they match, else the first difference, e.g.
 * `output 'score' row 3 expected 0.731 got 0.269 (tol 1e-4) in golden/a.json`.
 */
export function compareGolden(
  golden: GoldenCase,
  signature: ModelSignature,
  produced: readonly TensorPayload[],
): string | undefined {
  const byName = new Map(produced.map((tensor) => [tensor.name, tensor]));
  const where = `in ${golden.file}`;
  for (const [name, expected] of golden.outputs) {
    const spec = signature.outputsByName.get(name);
    const tensor = byName.get(name);
    if (spec === undefined || tensor === undefined) {
      return `output '${name}' is not an output of the model (expected one of: ${signature.outputs.map((s) => s.name).join(', ')}) ${where}`;
    }
    const want = expected.raw !== undefined ? decodeValues(spec.datatype, expected.raw, elementCount(expected.shape)) : (expected.values ?? []);
    const got = payloadValues(spec.datatype, tensor);
    if (got.length !== want.length) {
      return `output '${name}' has ${got.length} elements (shape ${formatShape(tensor.dims)}), expected ${want.length} (shape ${formatShape(expected.shape)}) ${where}`;
    }
    const rows = signature.maxBatchSize > 0 ? (tensor.dims[0] ?? 1) : 1;
    const perRow = rows > 0 ? got.length / rows : got.length;
    for (let i = 0; i < got.length; i++) {
      if (matches(want[i] as Scalar, got[i] as Scalar, golden.tolerance)) continue;
      const row = Math.floor(i / perRow);
      const element = perRow > 1 ? ` element ${i % perRow}` : '';
      return `output '${name}' row ${row}${element} expected ${show(want[i] as Scalar)} got ${show(got[i] as Scalar)} ` +
        `(tol ${golden.tolerance.toExponential()}) ${where}`;
    }
  }
  return undefined;
}

function parseTensor(what: string, value: unknown, fail: (why: string) => never): GoldenTensor {
  if (Array.isArray(value)) {
    const shape: number[] = [];
    for (let level: unknown = value; Array.isArray(level); level = level[0]) shape.push(level.length);
    const values = (value as unknown[]).flat(Infinity) as unknown[];
    if (values.length !== elementCount(shape)) fail(`${what}: ragged nested array (shape ${formatShape(shape)} but ${values.length} values)`);
    return { shape, values: values.map((v) => scalar(what, v, fail)) };
  }
  if (!isObject(value) || !Array.isArray(value['shape']) || !value['shape'].every((d) => Number.isInteger(d) && d >= 0)) {
    return fail(`${what}: expected a nested array, or {"shape": [...], "data": [...]} / {"shape": [...], "base64": "..."}`);
  }
  const shape = value['shape'] as number[];
  if (typeof value['base64'] === 'string') return { shape, raw: new Uint8Array(Buffer.from(value['base64'], 'base64')) };
  if (!Array.isArray(value['data'])) return fail(`${what}: "data" must be an array of values (or give "base64")`);
  const values = (value['data'] as unknown[]).flat(Infinity) as unknown[];
  if (values.length !== elementCount(shape)) fail(`${what}: shape ${formatShape(shape)} needs ${elementCount(shape)} values, got ${values.length}`);
  return { shape, values: values.map((v) => scalar(what, v, fail)) };
}

function scalar(what: string, value: unknown, fail: (why: string) => never): Scalar {
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') return value;
  return fail(`${what}: values must be numbers, booleans or strings, got ${JSON.stringify(value)}`);
}

function encodeValues(file: string, name: string, datatype: WireDatatype, values: readonly Scalar[]): Uint8Array {
  if (datatype === 'BYTES') return encodeBytesTensor(values.map(String));
  if (datatype === 'FP16') throw new GoldenCheckError(`${file}: input '${name}' is FP16: give it as {"shape", "base64"}`);
  const info = wireTypeInfo(datatype);
  const array = new info.array!(values.length);
  values.forEach((value, i) => {
    (array as unknown as Scalar[])[i] = datatype === 'INT64' || datatype === 'UINT64'
      ? BigInt(value as number)
      : typeof value === 'boolean' ? Number(value) : Number(value);
  });
  return typedArrayBytes(array);
}

function decodeValues(datatype: WireDatatype, raw: Uint8Array, count: number): Scalar[] {
  if (datatype === 'BYTES') return decodeBytesTensor(raw, count);
  const info = wireTypeInfo(datatype);
  const copy = new Uint8Array(raw);
  return numericValues(datatype, new info.array!(copy.buffer, 0, copy.byteLength / info.size));
}

function payloadValues(datatype: WireDatatype, tensor: TensorPayload): Scalar[] {
  if (datatype === 'BYTES') return decodeBytesTensor(tensor.data as Uint8Array, elementCount(tensor.dims));
  return numericValues(datatype, tensor.data as NumericArray);
}

function numericValues(datatype: WireDatatype, array: NumericArray): Scalar[] {
  const values = Array.from(array as ArrayLike<number | bigint>);
  if (datatype === 'FP16') return values.map((bits) => halfToFloat(Number(bits)));
  if (datatype === 'BOOL') return values.map((v) => v !== 0);
  return values;
}

function matches(expected: Scalar, got: Scalar, tolerance: number): boolean {
  if (typeof expected === 'string' || typeof got === 'string') return String(expected) === String(got);
  const e = Number(expected);
  const g = Number(got);
  if (Number.isNaN(e) || Number.isNaN(g)) return Number.isNaN(e) && Number.isNaN(g);
  return e === g || Math.abs(e - g) <= tolerance;
}

function show(value: Scalar): string {
  if (typeof value === 'number' && !Number.isInteger(value)) return String(Number(value.toPrecision(6)));
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Runs every case on a version still LOADING (through `run`, its pool) and
 * throws a GoldenCheckError at the first case that fails or differs.
 */
export async function runGoldenChecks(
  cases: readonly GoldenCase[],
  signature: ModelSignature,
  run: (task: InferTask, transfer: ArrayBuffer[]) => Promise<InferResult>,
): Promise<void> {
  for (const golden of cases) {
    let prepared: ReturnType<typeof prepareInference>;
    try {
      prepared = prepareInference(goldenRequest(golden, signature), signature);
    } catch (err) {
      if (err instanceof GoldenCheckError) throw err;
      throw new GoldenCheckError(`${golden.file}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const task: InferTask = {
      kind: 'infer',
      inputs: prepared.inputs,
      outputNames: prepared.outputs.map((spec) => spec.name),
      queuedAtMs: epochMs(),
    };
    let result: InferResult;
    try {
      result = await run(task, prepared.transfer);
    } catch (err) {
      throw new GoldenCheckError(`${golden.file}: inference failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    const mismatch = compareGolden(golden, signature, inlineOutputs(result.outputs));
    if (mismatch !== undefined) throw new GoldenCheckError(mismatch);
  }
}
