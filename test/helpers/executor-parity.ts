// Runs one ONNX model two ways, the native executor's host kernels and
// onnxruntime-node, on the same inputs, and compares every output element
// within rtol/atol (|a - b| <= atol + rtol * |b|, b = onnxruntime). Used by
// the op-by-op and whole-model parity tests (test/unit/executor-*.test.ts).
//
// One Parity object holds one host arena for a test file; each model gets an
// owner under it, destroyed (with everything the executor charged) when the
// check ends, so a failing case never leaks into the next.
import * as ort from 'onnxruntime-node';

import { SeededRandom } from '../../models/lib/seeded-random.js';
import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import { planFromOnnx } from '../../src/executor/onnx-plan.js';
import { Arena, type Owner } from '../../src/native/arena.js';
import { Executor } from '../../src/native/executor.js';
import { useUint16ArrayForFloat16 } from '../../src/workers/ort-float16.js';

// float16 tensors travel as Uint16Array bit patterns, as in the inference workers.
useUint16ArrayForFloat16();

export type ElemType = 'float32' | 'float16' | 'float64' | 'int32' | 'int64';
export type TypedData = Float32Array | Uint16Array | Float64Array | Int32Array | BigInt64Array;

export const ONNX_ELEM: Readonly<Record<ElemType, TensorProto_DataType>> = {
  float32: TensorProto_DataType.FLOAT,
  float16: TensorProto_DataType.FLOAT16,
  float64: TensorProto_DataType.DOUBLE,
  int32: TensorProto_DataType.INT32,
  int64: TensorProto_DataType.INT64,
};

export interface Feed {
  readonly type: ElemType;
  readonly dims: readonly number[];
  readonly data: TypedData;
}

export interface Tolerance {
  readonly rtol: number;
  readonly atol: number;
}

export const TOLERANCE: Tolerance = { rtol: 1e-5, atol: 1e-6 };

// --- float16 -------------------------------------------------------------------

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE binary16 bits of `value`, rounded to nearest even (what ONNX Cast does). */
export function toHalfBits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1) === 1)) half += 1;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half += 1;
  return sign | half;
}

export function fromHalfBits(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

// --- data ----------------------------------------------------------------------

/** How a test input's values are drawn. */
export type Gen =
  | { readonly kind: 'normal' }
  /** Magnitude in [0.5, 2), either sign: safe divisors. */
  | { readonly kind: 'nonzero' }
  /** Integers in [low, high). */
  | { readonly kind: 'ints'; readonly low: number; readonly high: number };

export function makeFeed(type: ElemType, dims: readonly number[], rng: SeededRandom, gen: Gen = { kind: 'normal' }): Feed {
  const n = dims.reduce((a, b) => a * b, 1);
  const draw = (): number => {
    if (gen.kind === 'ints') return gen.low + rng.int(gen.high - gen.low);
    if (gen.kind === 'nonzero') return (rng.next() < 0.5 ? -1 : 1) * rng.uniform(0.5, 2);
    return rng.normal();
  };
  switch (type) {
    case 'float32':
      return { type, dims, data: Float32Array.from({ length: n }, draw) };
    case 'float64':
      return { type, dims, data: Float64Array.from({ length: n }, draw) };
    case 'float16':
      return { type, dims, data: Uint16Array.from({ length: n }, () => toHalfBits(draw())) };
    case 'int32':
      return { type, dims, data: Int32Array.from({ length: n }, draw) };
    case 'int64':
      return { type, dims, data: BigInt64Array.from({ length: n }, () => BigInt(draw())) };
  }
}

function bytesOf(data: TypedData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Element values as numbers (float16 decoded), for comparison. */
function numbersOf(type: ElemType, bytes: Uint8Array): number[] {
  const copy = bytes.slice();
  switch (type) {
    case 'float32':
      return Array.from(new Float32Array(copy.buffer));
    case 'float64':
      return Array.from(new Float64Array(copy.buffer));
    case 'float16':
      return Array.from(new Uint16Array(copy.buffer), fromHalfBits);
    case 'int32':
      return Array.from(new Int32Array(copy.buffer));
    case 'int64':
      return Array.from(new BigInt64Array(copy.buffer), Number);
  }
}

const ORT_TYPES: Readonly<Record<string, ElemType>> = {
  float32: 'float32', float16: 'float16', float64: 'float64', int32: 'int32', int64: 'int64',
};

/** Throws naming the first element outside |a - e| <= atol + rtol * |e|, and the worst one. */
export function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string, tol: Tolerance = TOLERANCE): void {
  if (actual.length !== expected.length) throw new Error(`${what}: ${actual.length} elements, onnxruntime has ${expected.length}`);
  let bad = -1;
  let worst = 0;
  let worstAt = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    const err = Math.abs(a - e);
    const ok = err <= tol.atol + tol.rtol * Math.abs(e) || (Number.isNaN(a) && Number.isNaN(e)) || a === e;
    if (!ok && bad < 0) bad = i;
    const excess = err - tol.rtol * Math.abs(e);
    if (excess > worst) {
      worst = excess;
      worstAt = i;
    }
  }
  if (bad >= 0) {
    throw new Error(
      `${what}: element ${bad} is ${actual[bad]}, onnxruntime says ${expected[bad]} ` +
        `(worst: element ${worstAt}, ${actual[worstAt]} vs ${expected[worstAt]}; rtol ${tol.rtol}, atol ${tol.atol})`,
    );
  }
}

// --- the harness -----------------------------------------------------------------

export interface ParityCheck {
  /** For messages and the plan's model name. */
  readonly name: string;
  readonly model: Uint8Array;
  /** 0: the model does not batch (fixed shapes, one run with rows = 1). */
  readonly maxBatchSize: number;
  readonly batches: readonly number[];
  /** The inputs for `rows` rows, by input name. */
  readonly feeds: (rows: number) => Readonly<Record<string, Feed>>;
  readonly tolerance?: Tolerance;
}

export interface ParityResult {
  /** Per batch size: the executor's outputs, by name (for further checks). */
  readonly runs: ReadonlyArray<{ rows: number; outputs: Readonly<Record<string, number[]>> }>;
}

let arenas = 0;

export class Parity {
  private constructor(readonly arena: Arena) {}

  /** One host arena, registered under a unique name, for a test file. */
  static open(label: string, capacityBytes = 512 * 1024 * 1024): Parity {
    arenas += 1;
    return new Parity(Arena.create(`parity-${label}-${process.pid}-${arenas}`, { backend: 'host', capacityBytes }));
  }

  close(): void {
    this.arena.close();
  }

  /** A model owner; destroy it with `this.arena.destroyOwner(owner)`. */
  owner(label: string): Owner {
    return this.arena.createOwner('model', label);
  }

  /** Executor on host kernels, charged to `owner` in this arena. Async so that every failure is a rejection. */
  async executor(model: Uint8Array, name: string, maxBatchSize: number, owner: Owner, instances = 1): Promise<Executor> {
    const plan = planFromOnnx(model, { modelName: `${name}:1`, maxBatchSize });
    return Executor.create(plan, { arena: this.arena.name, tenant: 'default', owner: owner.id, instances, device: 'host' });
  }

  /** Runs `check` on both runtimes at each batch size; throws on the first mismatch. */
  async check(check: ParityCheck): Promise<ParityResult> {
    const owner = this.owner(check.name);
    const session = await ort.InferenceSession.create(check.model);
    let executor: Executor | undefined;
    try {
      executor = await this.executor(check.model, check.name, check.maxBatchSize, owner);
      const runs: { rows: number; outputs: Record<string, number[]> }[] = [];
      for (const rows of check.maxBatchSize === 0 ? [1] : check.batches) {
        const feeds = check.feeds(rows);
        const ortFeeds = Object.fromEntries(
          Object.entries(feeds).map(([name, f]) => [name, new ort.Tensor(f.type, f.data as never, [...f.dims])]),
        );
        const expected = await session.run(ortFeeds);
        const inputs = executor.inputs.map((io) => {
          const feed = feeds[io.name];
          if (feed === undefined) throw new Error(`${check.name}: no feed for executor input '${io.name}'`);
          return bytesOf(feed.data);
        });
        const got = await executor.run(inputs, check.maxBatchSize === 0 ? 1 : rows);
        const outputs: Record<string, number[]> = {};
        for (const name of session.outputNames) {
          const want = expected[name]!;
          const out = got.outputs.find((o) => o.name === name);
          const what = `${check.name} rows=${rows} output '${name}'`;
          if (out === undefined) throw new Error(`${what}: missing from the executor's outputs`);
          if (JSON.stringify(out.dims.map(Number)) !== JSON.stringify(want.dims.map(Number))) {
            throw new Error(`${what}: executor shape [${out.dims.join(', ')}], onnxruntime [${want.dims.join(', ')}]`);
          }
          const type = ORT_TYPES[want.type];
          if (type === undefined) throw new Error(`${what}: unexpected onnxruntime type ${want.type}`);
          const values = numbersOf(type, out.bytes);
          const reference = numbersOf(type, bytesOf(want.data as TypedData));
          assertClose(values, reference, what, check.tolerance);
          outputs[name] = values;
        }
        runs.push({ rows, outputs });
      }
      return { runs };
    } finally {
      await executor?.close();
      await session.release();
      this.arena.destroyOwner(owner);
    }
  }
}
