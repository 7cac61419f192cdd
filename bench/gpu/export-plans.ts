// Exports the sample models as executor plan files for the GPU node, which
// has no Node: `npm run bench:gpu-plans [-- --out DIR] [MODEL ...]`
// (compiled to dist/bench/gpu/export-plans.js).
//
// For each model (default: ctr_mlp, ctr_deep, ranker_mlp, those that exist):
// reads models/<name>/config.pbtxt (max_batch_size) and
// models/<name>/1/model.onnx (or, when the file is missing, the bytes
// models/generate.ts would write), runs planFromOnnx exactly as the server
// does, and writes
//   <out>/<name>.plan    the plan (native/executor/plan_io.h, format 1)
//   <out>/<name>.sample  max_batch_size rows of inputs seeded by the model's
//                        name (FNV-1a), the same whatever else is exported: FLOAT uniform
//                        in [-1, 1), Gather ids uniform in [-n, n) for a
//                        table of n rows (plan.indexBounds), other ints in [0, 16)
// bench/native/executor_check reads them (bench/gpu/check.sh passes --plans).
// The default <out> is bench/gpu/plans/, which git ignores (ranker_mlp alone
// is ~6 MB): a device run carries it (bench/gpu/README.md).
//
// The byte layout mirrors native/executor/plan_io.cc; plan_io_test pins the
// exact bytes of a small plan, and executor_check reads these files back.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { SAMPLE_MODELS } from '../../models/lib/sample-models.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { planFromOnnx, type OnnxPlan } from '../../src/executor/onnx-plan.js';
import type { ExecutorPlan, PlanAttribute } from '../../src/native/executor-binding-types.js';
import { parseModelConfigText } from '../../src/repository/model-config.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const DEFAULT_MODELS = ['ctr_mlp', 'ctr_deep', 'ranker_mlp'];
const PLAN_MAGIC = 'HPPLAN1\0';
const SAMPLE_MAGIC = 'HPSAMP1\0';

// ONNX TensorProto.DataType numbers the sample writer fills.
const FLOAT = 1;
const INT32 = 6;
const INT64 = 7;
const DOUBLE = 11;

// Attribute type codes in the file (plan_io.cc AttributeCode).
const ATTRIBUTE_CODES: Readonly<Record<PlanAttribute['type'], number>> = { int: 0, float: 1, ints: 2, floats: 3, string: 4 };

/** A growing little-endian byte buffer. */
class ByteWriter {
  #buffer = new Uint8Array(1 << 16);
  #view = new DataView(this.#buffer.buffer);
  #length = 0;

  #reserve(bytes: number): number {
    const at = this.#length;
    if (at + bytes > this.#buffer.length) {
      let size = this.#buffer.length;
      while (size < at + bytes) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.#buffer.subarray(0, at));
      this.#buffer = grown;
      this.#view = new DataView(grown.buffer);
    }
    this.#length += bytes;
    return at;
  }

  // Every setter reserves before it reads #view: reserving may replace the buffer.
  bytes(data: Uint8Array): void {
    const at = this.#reserve(data.length);
    this.#buffer.set(data, at);
  }
  u8(v: number): void {
    const at = this.#reserve(1);
    this.#view.setUint8(at, v);
  }
  u32(v: number): void {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`${v} does not fit a u32 field`);
    const at = this.#reserve(4);
    this.#view.setUint32(at, v, true);
  }
  i32(v: number): void {
    const at = this.#reserve(4);
    this.#view.setInt32(at, v, true);
  }
  i64(v: number): void {
    const at = this.#reserve(8);
    this.#view.setBigInt64(at, BigInt(v), true);
  }
  u64(v: number): void {
    const at = this.#reserve(8);
    this.#view.setBigUint64(at, BigInt(v), true);
  }
  f32(v: number): void {
    const at = this.#reserve(4);
    this.#view.setFloat32(at, v, true);
  }
  string(s: string): void {
    const utf8 = new TextEncoder().encode(s);
    this.u32(utf8.length);
    this.bytes(utf8);
  }
  i32s(values: readonly number[]): void {
    this.u32(values.length);
    for (const v of values) this.i32(v);
  }
  i64s(values: readonly number[]): void {
    this.u32(values.length);
    for (const v of values) this.i64(v);
  }
  blob(data: Uint8Array | undefined): void {
    this.u64(data?.length ?? 0);
    if (data !== undefined) this.bytes(data);
  }
  magic(text: string): void {
    this.bytes(new TextEncoder().encode(text));
  }
  take(): Uint8Array {
    return this.#buffer.slice(0, this.#length);
  }
}

/** The plan in plan_io's format 1. Attributes go in name order, as std::map writes them. */
export function encodePlan(plan: ExecutorPlan): Uint8Array {
  const w = new ByteWriter();
  w.magic(PLAN_MAGIC);
  w.string(plan.modelName);
  w.i64(plan.opset);
  w.u32(plan.maxBatchSize);
  w.u32(plan.tensors.length);
  for (const t of plan.tensors) {
    w.string(t.name);
    w.i32(t.dtype);
    w.u8(t.initializer ? 1 : 0);
    w.i64s(t.dims);
    w.blob(t.initializer ? t.data : undefined);
  }
  w.u32(plan.nodes.length);
  for (const n of plan.nodes) {
    w.string(n.name);
    w.string(n.opType);
    w.i32s(n.inputs);
    w.i32s(n.outputs);
    const attributes = [...n.attributes].sort((a, b) => compareUtf8(a.name, b.name));
    w.u32(attributes.length);
    for (const a of attributes) {
      w.string(a.name);
      w.u8(ATTRIBUTE_CODES[a.type]);
      switch (a.type) {
        case 'int': w.i64(a.value); break;
        case 'float': w.f32(a.value); break;
        case 'ints': w.i64s(a.value); break;
        case 'floats':
          w.u32(a.value.length);
          for (const f of a.value) w.f32(f);
          break;
        case 'string': w.string(a.value); break;
      }
    }
  }
  w.i32s(plan.inputs);
  w.i32s(plan.outputs);
  return w.take();
}

/** std::map<std::string> order: bytewise. */
function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export interface SampleTensor {
  readonly name: string;
  readonly dtype: number;
  readonly dims: readonly number[];
  readonly data: Uint8Array;
}

export function encodeSamples(rows: number, tensors: readonly SampleTensor[]): Uint8Array {
  const w = new ByteWriter();
  w.magic(SAMPLE_MAGIC);
  w.u32(rows);
  w.u32(tensors.length);
  for (const t of tensors) {
    w.string(t.name);
    w.i32(t.dtype);
    w.i64s(t.dims);
    w.blob(t.data);
  }
  return w.take();
}

/** Seeded inputs for every graph input of `plan`, `rows` rows (1 when the model does not batch). */
export function sampleInputs(plan: OnnxPlan, seed: number): { rows: number; tensors: SampleTensor[] } {
  const rows = plan.maxBatchSize > 0 ? plan.maxBatchSize : 1;
  const rng = new SeededRandom(seed);
  const tensors = plan.inputs.map((index): SampleTensor => {
    const t = plan.tensors[index]!;
    const dims = t.dims.map((d, i) => (i === 0 && plan.maxBatchSize > 0 ? rows : d));
    const count = dims.reduce((a, b) => a * b, 1);
    const bound = plan.indexBounds.find((b) => b.input === t.name)?.axisLength;
    const int = (): number => (bound !== undefined ? rng.int(2 * bound) - bound : rng.int(16));
    let data: Uint8Array;
    switch (t.dtype) {
      // Typed arrays are little-endian on every host Node runs on here (x86-64, arm64).
      case FLOAT: data = new Uint8Array(rng.uniformArray(count, -1, 1).buffer); break;
      case DOUBLE: data = new Uint8Array(Float64Array.from({ length: count }, () => rng.uniform(-1, 1)).buffer); break;
      case INT32: data = new Uint8Array(Int32Array.from({ length: count }, int).buffer); break;
      case INT64: data = new Uint8Array(BigInt64Array.from({ length: count }, () => BigInt(int())).buffer); break;
      default: throw new Error(`input '${t.name}' has dtype ${t.dtype}, which the sample writer does not fill`);
    }
    return { name: t.name, dtype: t.dtype, dims, data };
  });
  return { rows, tensors };
}

/** The model file, or the bytes models/generate.ts would write when it is missing. */
function modelBytes(modelsDir: string, name: string): { bytes: Uint8Array; source: string } {
  const file = path.join(modelsDir, name, '1', 'model.onnx');
  if (existsSync(file)) return { bytes: readFileSync(file), source: path.relative(ROOT, file) };
  const sample = SAMPLE_MODELS.find((m) => m.name === name);
  if (sample === undefined) throw new Error(`${file} does not exist and '${name}' is not a sample model`);
  return { bytes: sample.model(), source: 'generated (models/lib/sample-models.ts)' };
}

/** FNV-1a of the name: a sample seed that does not depend on which models are exported. */
function nameSeed(name: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(name, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

function writeAtomically(file: string, bytes: Uint8Array): void {
  writeFileSync(`${file}.tmp`, bytes);
  renameSync(`${file}.tmp`, file);
}

export interface ExportedPlan {
  readonly name: string;
  readonly planFile: string;
  readonly sampleFile: string;
  readonly bytes: number;
  readonly source: string;
}

export function exportPlan(modelsDir: string, outDir: string, name: string): ExportedPlan {
  const configFile = path.join(modelsDir, name, 'config.pbtxt');
  const { config } = parseModelConfigText(readFileSync(configFile, 'utf8'), configFile);
  const { bytes, source } = modelBytes(modelsDir, name);
  const plan = planFromOnnx(bytes, { modelName: `${name}:1`, maxBatchSize: config.maxBatchSize });
  const encoded = encodePlan(plan);
  const { rows, tensors } = sampleInputs(plan, nameSeed(name));
  const planFile = path.join(outDir, `${name}.plan`);
  const sampleFile = path.join(outDir, `${name}.sample`);
  writeAtomically(planFile, encoded);
  writeAtomically(sampleFile, encodeSamples(rows, tensors));
  return { name, planFile, sampleFile, bytes: encoded.length, source };
}

function main(argv: readonly string[]): number {
  let outDir = path.join(ROOT, 'bench', 'gpu', 'plans');
  let modelsDir = path.join(ROOT, 'models');
  const names: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (arg === '--out' || arg === '--models') {
      const value = argv[i + 1];
      if (value === undefined) throw new Error(`${arg} needs a directory`);
      if (arg === '--out') outDir = path.resolve(value);
      else modelsDir = path.resolve(value);
      i += 1;
    } else if (arg.startsWith('-')) {
      throw new Error(`unknown option ${arg}; usage: export-plans [--out DIR] [--models DIR] [MODEL ...]`);
    } else {
      names.push(arg);
    }
  }
  const selected = names.length > 0 ? names : DEFAULT_MODELS.filter((n) => existsSync(path.join(modelsDir, n, 'config.pbtxt')));
  mkdirSync(outDir, { recursive: true });
  for (const name of selected) {
    const done = exportPlan(modelsDir, outDir, name);
    console.log(`${name}: ${path.relative(process.cwd(), done.planFile)} (${done.bytes} bytes, from ${done.source}), ${path.relative(process.cwd(), done.sampleFile)}`);
  }
  return 0;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    console.error(`export-plans: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
