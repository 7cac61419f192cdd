// The sample repository generator (models/lib/sample-models.ts): every model loads in
// ONNX Runtime, computes what its weights say it should (checked against a plain-JS
// reference built from the same seeded parameters), exposes the metadata config
// auto-complete relies on, and regenerates byte for byte.
//
// Models are generated into a temp directory; the checked-in models/ is not read.

import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useUint16ArrayForFloat16 } from '../../src/workers/ort-float16.js';
import { CTR_DEEP_CONCAT_WIDTH, CTR_DEEP_SHAPE, ctrDeepParams } from '../../models/lib/ctr-deep.js';
import type { DenseLayer } from '../../models/lib/mlp.js';
import {
  ctrMlpLayers,
  fraudGbdtEnsemble,
  rankerMlpLayers,
  SAMPLE_MODELS,
  TYPED_IDENTITY_TENSORS,
  writeSampleRepository,
} from '../../models/lib/sample-models.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import type { TreeEnsemble } from '../../models/lib/tree-ensemble.js';

// Same float16 representation as the inference workers use (see ort-float16.ts).
useUint16ArrayForFloat16();

const TOLERANCE = 1e-4;

let repo: string;

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), 'hotpath-sample-models-'));
  await writeSampleRepository(repo);
});

afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

const sessions = new Map<string, ort.InferenceSession>();
async function session(name: string): Promise<ort.InferenceSession> {
  let s = sessions.get(name);
  if (s === undefined) {
    s = await ort.InferenceSession.create(join(repo, name, '1', 'model.onnx'));
    sessions.set(name, s);
  }
  return s;
}
afterAll(async () => {
  for (const s of sessions.values()) await s.release();
});

/** Unit-variance test inputs from their own seed (independent of any model's stream). */
function randomFeatures(rows: number, cols: number, seed: number): Float32Array {
  return new SeededRandom(seed).normalArray(rows * cols);
}

async function runFloat(name: string, input: string, output: string, x: Float32Array, rows: number): Promise<Float32Array> {
  const s = await session(name);
  const result = await s.run({ [input]: new ort.Tensor('float32', x, [rows, x.length / rows]) });
  const y = result[output];
  expect(y?.dims).toEqual([rows, 1]);
  return y!.data as Float32Array;
}

// --- independent references -------------------------------------------------------

/** Dense forward pass in float64 over the float32 weights: y = act(W x + b) per layer. */
function mlpReference(layers: readonly DenseLayer[], x: ArrayLike<number>, rows: number): number[] {
  const out: number[] = [];
  const width = layers[0]!.inFeatures;
  for (let r = 0; r < rows; r++) {
    let h: number[] = Array.from({ length: width }, (_, i) => x[r * width + i]!);
    for (const layer of layers) {
      const next = new Array<number>(layer.outFeatures);
      for (let o = 0; o < layer.outFeatures; o++) {
        let acc = layer.bias[o]!;
        const row = o * layer.inFeatures;
        for (let i = 0; i < layer.inFeatures; i++) acc += layer.weight[row + i]! * h[i]!;
        if (layer.activation === 'relu') acc = Math.max(0, acc);
        else if (layer.activation === 'sigmoid') acc = 1 / (1 + Math.exp(-acc));
        next[o] = acc;
      }
      h = next;
    }
    out.push(h[0]!);
  }
  return out;
}

/**
 * ctr_deep in float64: embed each id, concatenate after the dense features, layer-norm
 * each row (population variance, as ONNX specifies), then the MLP.
 */
function ctrDeepReference(dense: Float32Array, ids: BigInt64Array, rows: number): number[] {
  const p = ctrDeepParams();
  const { denseFeatures: nd, categoricalFields: nf, embeddingDim: de, layerNormEpsilon } = CTR_DEEP_SHAPE;
  const w = CTR_DEEP_CONCAT_WIDTH;
  const normalized = new Array<number>(rows * w);
  for (let r = 0; r < rows; r++) {
    const x: number[] = Array.from(dense.subarray(r * nd, (r + 1) * nd));
    for (let f = 0; f < nf; f++) {
      const id = Number(ids[r * nf + f]!);
      x.push(...p.embedding.subarray(id * de, (id + 1) * de));
    }
    const mean = x.reduce((a, b) => a + b, 0) / w;
    const variance = x.reduce((a, b) => a + (b - mean) ** 2, 0) / w;
    const inv = 1 / Math.sqrt(variance + layerNormEpsilon);
    for (let i = 0; i < w; i++) normalized[r * w + i] = (x[i]! - mean) * inv * p.lnScale[i]! + p.lnBias[i]!;
  }
  return mlpReference(p.layers, normalized, rows);
}

function randomIds(rows: number, seed: number): BigInt64Array {
  const rng = new SeededRandom(seed);
  return BigInt64Array.from({ length: rows * CTR_DEEP_SHAPE.categoricalFields }, () => BigInt(rng.int(CTR_DEEP_SHAPE.vocabulary)));
}

async function runCtrDeep(dense: Float32Array, ids: BigInt64Array, rows: number): Promise<Float32Array> {
  const s = await session('ctr_deep');
  const result = await s.run({
    dense: new ort.Tensor('float32', dense, [rows, CTR_DEEP_SHAPE.denseFeatures]),
    categorical: new ort.Tensor('int64', ids, [rows, CTR_DEEP_SHAPE.categoricalFields]),
  });
  const y = result['probability'];
  expect(y?.dims).toEqual([rows, 1]);
  return y!.data as Float32Array;
}

/** Walk every tree from its root (BRANCH_LEQ: true branch when x <= threshold), sum leaves. */
function treeReference(ensemble: TreeEnsemble, x: Float32Array, rows: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < rows; r++) {
    const row = x.subarray(r * ensemble.nFeatures, (r + 1) * ensemble.nFeatures);
    let score = ensemble.baseValue;
    for (const tree of ensemble.trees) {
      let n = tree[0]!;
      while (n.kind === 'split') n = tree[row[n.featureId]! <= n.threshold ? n.trueId : n.falseId]!;
      score += n.value;
    }
    out.push(1 / (1 + Math.exp(-score)));
  }
  return out;
}

function expectClose(actual: ArrayLike<number>, expected: readonly number[]): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!));
  expect(worst).toBeLessThan(TOLERANCE);
}

function stddev(values: ArrayLike<number>): number {
  let mean = 0;
  for (let i = 0; i < values.length; i++) mean += values[i]!;
  mean /= values.length;
  let sq = 0;
  for (let i = 0; i < values.length; i++) sq += (values[i]! - mean) ** 2;
  return Math.sqrt(sq / values.length);
}

// --- the models ----------------------------------------------------------------------

describe('ctr_mlp', () => {
  it('matches a JS forward pass over the same weights', async () => {
    const rows = 64;
    const x = randomFeatures(rows, 32, 101);
    const y = await runFloat('ctr_mlp', 'features', 'score', x, rows);
    expectClose(y, mlpReference(ctrMlpLayers(), x, rows));
  });

  it('is not saturated: scores spread across (0, 1)', async () => {
    const y = await runFloat('ctr_mlp', 'features', 'score', randomFeatures(256, 32, 102), 256);
    expect(stddev(y)).toBeGreaterThan(0.05);
    expect(Math.min(...y)).toBeGreaterThan(0.001);
    expect(Math.max(...y)).toBeLessThan(0.999);
  });
});

describe('ctr_deep', () => {
  it('matches a JS forward pass (embedding, concat, layer norm, MLP) over the same weights', async () => {
    const rows = 32;
    const dense = randomFeatures(rows, CTR_DEEP_SHAPE.denseFeatures, 401);
    const ids = randomIds(rows, 402);
    // The extremes of the vocabulary are valid ids.
    ids[0] = 0n;
    ids[1] = BigInt(CTR_DEEP_SHAPE.vocabulary - 1);
    expectClose(await runCtrDeep(dense, ids, rows), ctrDeepReference(dense, ids, rows));
  });

  it('is not saturated: probabilities spread across (0, 1)', async () => {
    const y = await runCtrDeep(randomFeatures(256, CTR_DEEP_SHAPE.denseFeatures, 403), randomIds(256, 404), 256);
    expect(stddev(y)).toBeGreaterThan(0.05);
    expect(Math.min(...y)).toBeGreaterThan(0.001);
    expect(Math.max(...y)).toBeLessThan(0.999);
  });

  it('declares INT64 ids, max_batch_size 256 and a KIND_GPU instance on device 0', async () => {
    const text = await readFile(join(repo, 'ctr_deep', 'config.pbtxt'), 'utf8');
    expect(text).toMatch(/^max_batch_size: 256$/m);
    expect(text).toMatch(/name: "dense"\s*data_type: TYPE_FP32\s*dims: \[ 13 \]/);
    expect(text).toMatch(/name: "categorical"\s*data_type: TYPE_INT64\s*dims: \[ 8 \]/);
    expect(text).toMatch(/name: "probability"\s*data_type: TYPE_FP32\s*dims: \[ 1 \]/);
    expect(text).toMatch(/dynamic_batching \{[^}]*max_queue_delay_microseconds: 100\s*\}/);
    expect(text).toMatch(/instance_group \[\s*\{\s*count: 1\s*kind: KIND_GPU\s*gpus: \[ 0 \]\s*\}\s*\]/);
  });

  it('exposes both inputs with the symbolic batch dimension', async () => {
    const s = await session('ctr_deep');
    expect(s.inputMetadata).toEqual([
      { name: 'dense', isTensor: true, type: 'float32', shape: ['batch', 13] },
      { name: 'categorical', isTensor: true, type: 'int64', shape: ['batch', 8] },
    ]);
  });
});

describe('fraud_gbdt', () => {
  it('has LightGBM-like structure: 100 trees, depth <= 5, some full depth', () => {
    const e = fraudGbdtEnsemble();
    expect(e.trees).toHaveLength(100);
    const depth = (tree: TreeEnsemble['trees'][number], id = 0): number => {
      const n = tree[id]!;
      return n.kind === 'leaf' ? 0 : 1 + Math.max(depth(tree, n.trueId), depth(tree, n.falseId));
    };
    const depths = e.trees.map((t) => depth(t));
    expect(Math.max(...depths)).toBe(5);
    expect(Math.min(...depths)).toBeGreaterThanOrEqual(2);
  });

  it('matches walking the trees in JS', async () => {
    const rows = 64;
    const x = randomFeatures(rows, 16, 201);
    const y = await runFloat('fraud_gbdt', 'features', 'probability', x, rows);
    expectClose(y, treeReference(fraudGbdtEnsemble(), x, rows));
  });

  it('takes the true branch on equality (BRANCH_LEQ)', async () => {
    // Put every feature exactly on the root threshold of tree 0 where it splits.
    const e = fraudGbdtEnsemble();
    const root = e.trees[0]![0]!;
    if (root.kind !== 'split') throw new Error('tree 0 root should split');
    const x = randomFeatures(1, 16, 202);
    x[root.featureId] = root.threshold;
    const y = await runFloat('fraud_gbdt', 'features', 'probability', x, 1);
    expectClose(y, treeReference(e, x, 1));
  });

  it('is not saturated: probabilities spread across (0, 1)', async () => {
    const y = await runFloat('fraud_gbdt', 'features', 'probability', randomFeatures(256, 16, 203), 256);
    expect(stddev(y)).toBeGreaterThan(0.05);
    expect(Math.min(...y)).toBeGreaterThan(0.0001);
    expect(Math.max(...y)).toBeLessThan(0.9999);
  });
});

describe('ranker_mlp', () => {
  it('matches a JS forward pass on a small batch', async () => {
    const rows = 4;
    const x = randomFeatures(rows, 256, 301);
    const y = await runFloat('ranker_mlp', 'features', 'score', x, rows);
    expectClose(y, mlpReference(rankerMlpLayers(), x, rows));
    expect(stddev(y)).toBeGreaterThan(0.01);
  });

  it('is about 6 MB (which is why it is generated on install, not committed)', async () => {
    const { size } = await stat(join(repo, 'ranker_mlp', '1', 'model.onnx'));
    expect(size).toBeGreaterThan(6_000_000);
    expect(size).toBeLessThan(7_000_000);
  });
});

describe('typed_identity', () => {
  it('returns every input unchanged, for each datatype', async () => {
    const s = await session('typed_identity');
    const rows = 3;
    const n = rows * 4;
    const feeds: Record<string, ort.Tensor> = {
      in_fp32: new ort.Tensor('float32', Float32Array.from({ length: n }, (_, i) => i * 1.5 - 7), [rows, 4]),
      // float16 travels as raw bit patterns (Node has no Float16Array): 1.0, -2.0, +inf,
      // NaN, the smallest subnormal, -0, max finite, -inf and a few arbitrary values.
      in_fp16: new ort.Tensor(
        'float16',
        Uint16Array.of(0x3c00, 0xc000, 0x7c00, 0x7e00, 0x0001, 0x8000, 0x7bff, 0xfc00, 0x3555, 0x0400, 0x1234, 0xabcd),
        [rows, 4],
      ),
      in_int64: new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => (i % 2 === 0 ? 1n : -1n) * (2n ** 62n - BigInt(i))), [rows, 4]),
      in_bool: new ort.Tensor('bool', Uint8Array.from({ length: n }, (_, i) => i % 3 === 0 ? 1 : 0), [rows, 4]),
      in_bytes: new ort.Tensor('string', Array.from({ length: n }, (_, i) => ['', 'a', 'héllo', '日本語', 'x'.repeat(100)][i % 5]! + String(i)), [rows, 4]),
    };
    const result = await s.run(feeds);
    for (const { suffix } of TYPED_IDENTITY_TENSORS) {
      const sent = feeds[`in_${suffix}`]!;
      const got = result[`out_${suffix}`]!;
      expect(got.type, suffix).toBe(sent.type);
      expect(got.dims, suffix).toEqual([rows, 4]);
      expect(Array.from(got.data as ArrayLike<unknown>), suffix).toEqual(Array.from(sent.data as ArrayLike<unknown>));
    }
  });
});

// --- metadata, configs, determinism -------------------------------------------------------

describe('ONNX Runtime metadata (used for config auto-complete)', () => {
  it('reports name, type and shape with the symbolic batch dimension as a string', async () => {
    const s = await session('ctr_mlp');
    expect(s.inputNames).toEqual(['features']);
    expect(s.outputNames).toEqual(['score']);
    expect(s.inputMetadata).toEqual([{ name: 'features', isTensor: true, type: 'float32', shape: ['batch', 32] }]);
    expect(s.outputMetadata).toEqual([{ name: 'score', isTensor: true, type: 'float32', shape: ['batch', 1] }]);
  });

  it('maps each typed_identity datatype to an ORT tensor type', async () => {
    const s = await session('typed_identity');
    expect(s.inputMetadata.map((m) => (m.isTensor ? [m.name, m.type, m.shape] : [m.name]))).toEqual([
      ['in_fp32', 'float32', ['batch', 4]],
      ['in_fp16', 'float16', ['batch', 4]],
      ['in_int64', 'int64', ['batch', 4]],
      ['in_bool', 'bool', ['batch', 4]],
      ['in_bytes', 'string', ['batch', 4]],
    ]);
  });
});

describe('config.pbtxt', () => {
  it('declares ctr_mlp with dims excluding the batch dimension and dynamic batching', async () => {
    const text = await readFile(join(repo, 'ctr_mlp', 'config.pbtxt'), 'utf8');
    expect(text).toMatch(/^name: "ctr_mlp"$/m);
    expect(text).toMatch(/^platform: "onnxruntime_onnx"$/m);
    expect(text).toMatch(/^max_batch_size: 64$/m);
    expect(text).toMatch(/input \[\s*\{\s*name: "features"\s*data_type: TYPE_FP32\s*dims: \[ 32 \]\s*\}\s*\]/);
    expect(text).toMatch(/output \[\s*\{\s*name: "score"\s*data_type: TYPE_FP32\s*dims: \[ 1 \]\s*\}\s*\]/);
    expect(text).toMatch(/dynamic_batching \{\s*preferred_batch_size: \[ 16, 32, 64 \]\s*max_queue_delay_microseconds: 200\s*\}/);
    expect(text).toMatch(/instance_group \[\s*\{\s*count: 1\s*kind: KIND_CPU\s*\}\s*\]/);
  });

  it('gives each model max_batch_size matching the brief and BYTES as TYPE_STRING', async () => {
    const read = (m: string) => readFile(join(repo, m, 'config.pbtxt'), 'utf8');
    expect(await read('fraud_gbdt')).toMatch(/^max_batch_size: 64$/m);
    expect(await read('ranker_mlp')).toMatch(/^max_batch_size: 128$/m);
    const typed = await read('typed_identity');
    expect(typed).toMatch(/^max_batch_size: 8$/m);
    expect(typed).toMatch(/name: "in_bytes"\s*data_type: TYPE_STRING\s*dims: \[ 4 \]/);
    expect(typed).toMatch(/name: "out_fp16"\s*data_type: TYPE_FP16/);
  });
});

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describe('determinism', () => {
  it('writes byte-identical files on a second run', async () => {
    const again = await mkdtemp(join(tmpdir(), 'hotpath-sample-models-'));
    try {
      await writeSampleRepository(again);
      const files = await listFiles(repo);
      expect(await listFiles(again)).toEqual(files);
      expect(files).toHaveLength(SAMPLE_MODELS.length * 2);
      for (const f of files) {
        const a = await readFile(join(repo, f));
        const b = await readFile(join(again, f));
        expect(a.equals(b), f).toBe(true);
      }
    } finally {
      await rm(again, { recursive: true, force: true });
    }
  });

  it('with missingOnly, keeps existing files and fills in missing ones', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hotpath-sample-models-'));
    try {
      await writeSampleRepository(dir, { only: ['ctr_mlp', 'typed_identity'] });
      await rm(join(dir, 'ctr_mlp', '1', 'model.onnx'));
      const result = await writeSampleRepository(dir, { missingOnly: true, only: ['ctr_mlp', 'typed_identity'] });
      expect(result.map((f) => [relative(dir, f.path), f.action])).toEqual([
        [join('ctr_mlp', 'config.pbtxt'), 'kept'],
        [join('ctr_mlp', '1', 'model.onnx'), 'written'],
        [join('typed_identity', 'config.pbtxt'), 'kept'],
        [join('typed_identity', '1', 'model.onnx'), 'kept'],
      ]);
      // No temp files left behind by the atomic writes.
      expect(await listFiles(dir)).toHaveLength(4);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects an unknown model name', async () => {
    await expect(writeSampleRepository(repo, { only: ['nope'] })).rejects.toThrow(/unknown sample model.*nope/);
  });
});
