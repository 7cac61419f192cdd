// The native executor's host kernels, op by op, against onnxruntime-node: a
// one-node (or few-node) ONNX model per case, run by both at batch 1, 3 and
// max_batch_size on the same seeded inputs, every output element within
// rtol 1e-5 / atol 1e-6 (test/helpers/executor-parity.ts). Broadcasting, the
// attribute variants and initializer-or-runtime operands are the point; the
// shapes stay small so the whole file runs in seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  attrFloat,
  attrInt,
  attrInts,
  floatInitializer,
  int64Initializer,
  node,
  serializeModel,
  tensorValueInfo,
} from '../../models/lib/onnx-builder.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import type { NodeProto, TensorProto } from '../../src/generated/onnx/onnx_pb.js';
import { NativeError } from '../../src/native/native-error.js';
import { makeFeed, ONNX_ELEM, Parity, type ElemType, type Feed, type Gen } from '../helpers/executor-parity.js';

const MAX_BATCH = 8;
const BATCHES = [1, 3, MAX_BATCH];

/** A dimension of a case's input or output: 'B' is the batch dimension. */
type D = number | 'B';

interface Io {
  readonly name: string;
  readonly type?: ElemType;
  readonly dims: readonly D[];
  readonly gen?: Gen;
}

interface OpCase {
  readonly name: string;
  readonly inputs: readonly Io[];
  readonly outputs: readonly Io[];
  readonly nodes: readonly NodeProto[];
  readonly initializers?: readonly TensorProto[];
  /** Default MAX_BATCH; 0 = a model with fixed shapes (no 'B' anywhere). */
  readonly maxBatchSize?: number;
}

// --- building cases -------------------------------------------------------------------

let seed = 1;
/** A float initializer of seeded values (normal by default; 'nonzero' for divisors, 'positive' for variances). */
function w(name: string, dims: readonly number[], kind: 'normal' | 'nonzero' | 'positive' = 'normal'): TensorProto {
  const rng = new SeededRandom(0x5eed + seed++);
  const n = dims.reduce((a, b) => a * b, 1);
  const values = Float32Array.from({ length: n }, () => {
    if (kind === 'positive') return rng.uniform(0.25, 2);
    if (kind === 'nonzero') return (rng.next() < 0.5 ? -1 : 1) * rng.uniform(0.5, 2);
    return rng.normal();
  });
  return floatInitializer(name, dims, values);
}

const x = (dims: readonly D[], name = 'x', gen?: Gen, type?: ElemType): Io => ({ name, dims, ...(gen ? { gen } : {}), ...(type ? { type } : {}) });
const y = (dims: readonly D[], name = 'y', type?: ElemType): Io => ({ name, dims, ...(type ? { type } : {}) });
const NONZERO: Gen = { kind: 'nonzero' };

function buildModel(c: OpCase): Uint8Array {
  const info = (io: Io) => tensorValueInfo(io.name, ONNX_ELEM[io.type ?? 'float32'], io.dims.map((d) => (d === 'B' ? 'batch' : d)));
  return serializeModel({
    name: c.name,
    doc: `executor op test: ${c.name}`,
    inputs: c.inputs.map(info),
    outputs: c.outputs.map(info),
    nodes: [...c.nodes],
    initializers: [...(c.initializers ?? [])],
  });
}

function feedsFor(c: OpCase, index: number): (rows: number) => Record<string, Feed> {
  return (rows) => {
    const rng = new SeededRandom(1000 * index + rows);
    return Object.fromEntries(
      c.inputs.map((io) => [io.name, makeFeed(io.type ?? 'float32', io.dims.map((d) => (d === 'B' ? rows : d)), rng, io.gen)]),
    );
  };
}

// --- the cases ------------------------------------------------------------------------

const gemm: OpCase[] = [
  {
    name: 'Gemm alpha 0.5, beta 2, C row [N]',
    inputs: [x(['B', 6])], outputs: [y(['B', 5])], initializers: [w('w', [6, 5]), w('c', [5])],
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'], { attributes: [attrFloat('alpha', 0.5), attrFloat('beta', 2)] })],
  },
  {
    name: 'Gemm transB, C scalar',
    inputs: [x(['B', 6])], outputs: [y(['B', 5])], initializers: [w('w', [5, 6]), w('c', [])],
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'], { attributes: [attrInt('transB', 1)] })],
  },
  {
    name: 'Gemm transB, C [1] and beta -1',
    inputs: [x(['B', 6])], outputs: [y(['B', 5])], initializers: [w('w', [5, 6]), w('c', [1])],
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'], { attributes: [attrInt('transB', 1), attrFloat('beta', -1)] })],
  },
  {
    name: 'Gemm C [1, N]',
    inputs: [x(['B', 6])], outputs: [y(['B', 5])], initializers: [w('w', [6, 5]), w('c', [1, 5])],
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'])],
  },
  {
    name: 'Gemm C column [M, 1] at run time',
    inputs: [x(['B', 6]), x(['B', 1], 'c')], outputs: [y(['B', 5])], initializers: [w('w', [6, 5])],
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'], { attributes: [attrFloat('beta', 0.25)] })],
  },
  {
    name: 'Gemm C full [M, N] at run time',
    inputs: [x(['B', 6]), x(['B', 5], 'c')], outputs: [y(['B', 5])], initializers: [w('w', [6, 5])],
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'])],
  },
  {
    name: 'Gemm without C, B at run time (fixed shapes)',
    inputs: [x([4, 6]), x([6, 5], 'w')], outputs: [y([4, 5])], maxBatchSize: 0,
    nodes: [node('Gemm', ['x', 'w'], ['y'])],
  },
  {
    name: 'Gemm transA, C full initializer (fixed shapes)',
    inputs: [x([6, 4])], outputs: [y([4, 5])], initializers: [w('w', [6, 5]), w('c', [4, 5])], maxBatchSize: 0,
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'], { attributes: [attrInt('transA', 1)] })],
  },
  {
    name: 'Gemm transA + transB, C column initializer (fixed shapes)',
    inputs: [x([6, 4]), x([5, 6], 'w')], outputs: [y([4, 5])], initializers: [w('c', [4, 1])], maxBatchSize: 0,
    nodes: [node('Gemm', ['x', 'w', 'c'], ['y'], { attributes: [attrInt('transA', 1), attrInt('transB', 1), attrFloat('alpha', 1.5)] })],
  },
  {
    name: 'Transpose then Gemm transA (the batch in dimension 1 in between)',
    inputs: [x(['B', 6])], outputs: [y(['B', 5])], initializers: [w('w', [6, 5]), w('c', [5])],
    nodes: [
      node('Transpose', ['x'], ['xt'], { attributes: [attrInts('perm', [1, 0])] }),
      node('Gemm', ['xt', 'w', 'c'], ['y'], { attributes: [attrInt('transA', 1)] }),
    ],
  },
];

const matmul: OpCase[] = [
  { name: 'MatMul 2-D', inputs: [x(['B', 6])], outputs: [y(['B', 4])], initializers: [w('w', [6, 4])], nodes: [node('MatMul', ['x', 'w'], ['y'])] },
  {
    name: 'MatMul batched [B,3,6] x [6,4]',
    inputs: [x(['B', 3, 6])], outputs: [y(['B', 3, 4])], initializers: [w('w', [6, 4])], nodes: [node('MatMul', ['x', 'w'], ['y'])],
  },
  {
    name: 'MatMul batched, both at run time',
    inputs: [x(['B', 3, 6]), x(['B', 6, 2], 'w')], outputs: [y(['B', 3, 2])], nodes: [node('MatMul', ['x', 'w'], ['y'])],
  },
  {
    name: 'MatMul broadcast batch [B,2,3,6] x [1,6,4]',
    inputs: [x(['B', 2, 3, 6])], outputs: [y(['B', 2, 3, 4])], initializers: [w('w', [1, 6, 4])], nodes: [node('MatMul', ['x', 'w'], ['y'])],
  },
  {
    name: 'MatMul broadcast batch [1,3,6] x [B,6,4]',
    inputs: [x(['B', 6, 4])], outputs: [y(['B', 3, 4])], initializers: [w('w', [1, 3, 6])], nodes: [node('MatMul', ['w', 'x'], ['y'])],
  },
  {
    name: 'MatMul initializer on the left [3,6] x [B,6,4]',
    inputs: [x(['B', 6, 4])], outputs: [y(['B', 3, 4])], initializers: [w('w', [3, 6])], nodes: [node('MatMul', ['w', 'x'], ['y'])],
  },
  {
    name: 'MatMul matrix-vector [B,3,6] x [6]',
    inputs: [x(['B', 3, 6])], outputs: [y(['B', 3])], initializers: [w('w', [6])], nodes: [node('MatMul', ['x', 'w'], ['y'])],
  },
];

/** Each binary op on each broadcasting shape; divisors stay away from zero. */
function binaryCases(op: 'Add' | 'Sub' | 'Mul' | 'Div'): OpCase[] {
  const div = op === 'Div' ? 'nonzero' : 'normal';
  const rhs = op === 'Div' ? NONZERO : undefined;
  const one = (name: string, a: Io, b: Io, out: D[], inits: TensorProto[] = []): OpCase => ({
    name: `${op} ${name}`,
    inputs: [a, b].filter((io) => !inits.some((t) => t.name === io.name)),
    outputs: [y(out)],
    initializers: inits,
    nodes: [node(op, [a.name, b.name], ['y'])],
  });
  return [
    one('same shape [B,4]', x(['B', 4], 'a'), x(['B', 4], 'b', rhs), ['B', 4]),
    one('scalar initializer', x(['B', 4], 'a'), x([], 'b'), ['B', 4], [w('b', [], div)]),
    one('row initializer [4]', x(['B', 4], 'a'), x([4], 'b'), ['B', 4], [w('b', [4], div)]),
    one('column [B,1] at run time', x(['B', 4], 'a'), x(['B', 1], 'b', rhs), ['B', 4]),
    one('[B,3,5] and [1,3,1]', x(['B', 3, 5], 'a'), x([1, 3, 1], 'b'), ['B', 3, 5], [w('b', [1, 3, 1], div)]),
    one('both broadcast [B,1,4] and [3,1]', x(['B', 1, 4], 'a'), x([3, 1], 'b'), ['B', 3, 4], [w('b', [3, 1], div)]),
    one('initializer on the left [4] and [B,4]', x([4], 'a'), x(['B', 4], 'b', rhs), ['B', 4], [w('a', [4])]),
    one('rank 4 [B,2,3,4] and [B,1,3,1]', x(['B', 2, 3, 4], 'a'), x(['B', 1, 3, 1], 'b', rhs), ['B', 2, 3, 4]),
  ];
}

const unary: OpCase[] = [
  { name: 'Relu', inputs: [x(['B', 7])], outputs: [y(['B', 7])], nodes: [node('Relu', ['x'], ['y'])] },
  {
    name: 'LeakyRelu alpha 0.2', inputs: [x(['B', 3, 4])], outputs: [y(['B', 3, 4])],
    nodes: [node('LeakyRelu', ['x'], ['y'], { attributes: [attrFloat('alpha', 0.2)] })],
  },
  { name: 'LeakyRelu default alpha', inputs: [x(['B', 7])], outputs: [y(['B', 7])], nodes: [node('LeakyRelu', ['x'], ['y'])] },
  { name: 'Sigmoid', inputs: [x(['B', 7])], outputs: [y(['B', 7])], nodes: [node('Sigmoid', ['x'], ['y'])] },
  { name: 'Tanh', inputs: [x(['B', 3, 4])], outputs: [y(['B', 3, 4])], nodes: [node('Tanh', ['x'], ['y'])] },
  { name: 'Softmax default axis', inputs: [x(['B', 6])], outputs: [y(['B', 6])], nodes: [node('Softmax', ['x'], ['y'])] },
  {
    name: 'Softmax axis -1', inputs: [x(['B', 3, 5])], outputs: [y(['B', 3, 5])],
    nodes: [node('Softmax', ['x'], ['y'], { attributes: [attrInt('axis', -1)] })],
  },
  {
    name: 'Softmax axis 1', inputs: [x(['B', 3, 5])], outputs: [y(['B', 3, 5])],
    nodes: [node('Softmax', ['x'], ['y'], { attributes: [attrInt('axis', 1)] })],
  },
  {
    name: 'Clip min and max inputs', inputs: [x(['B', 7])], outputs: [y(['B', 7])],
    initializers: [floatInitializer('lo', [], Float32Array.of(-0.5)), floatInitializer('hi', [], Float32Array.of(0.8))],
    nodes: [node('Clip', ['x', 'lo', 'hi'], ['y'])],
  },
  {
    name: 'Clip min only', inputs: [x(['B', 7])], outputs: [y(['B', 7])],
    initializers: [floatInitializer('lo', [], Float32Array.of(0.1))], nodes: [node('Clip', ['x', 'lo'], ['y'])],
  },
  {
    name: 'Clip max only (min omitted)', inputs: [x(['B', 7])], outputs: [y(['B', 7])],
    initializers: [floatInitializer('hi', [], Float32Array.of(-0.2))], nodes: [node('Clip', ['x', '', 'hi'], ['y'])],
  },
  { name: 'Clip without bounds', inputs: [x(['B', 7])], outputs: [y(['B', 7])], nodes: [node('Clip', ['x'], ['y'])] },
];

const shape: OpCase[] = [
  {
    name: 'Concat axis 1', inputs: [x(['B', 3], 'a'), x(['B', 4], 'b')], outputs: [y(['B', 7])],
    nodes: [node('Concat', ['a', 'b'], ['y'], { attributes: [attrInt('axis', 1)] })],
  },
  {
    name: 'Concat axis -1, three inputs', inputs: [x(['B', 2, 3], 'a'), x(['B', 2, 1], 'b'), x(['B', 2, 4], 'c')], outputs: [y(['B', 2, 8])],
    nodes: [node('Concat', ['a', 'b', 'c'], ['y'], { attributes: [attrInt('axis', -1)] })],
  },
  {
    name: 'Concat axis 1 of rank 3', inputs: [x(['B', 2, 3], 'a'), x(['B', 1, 3], 'b')], outputs: [y(['B', 3, 3])],
    nodes: [node('Concat', ['a', 'b'], ['y'], { attributes: [attrInt('axis', 1)] })],
  },
  { name: 'Flatten default axis', inputs: [x(['B', 2, 3, 4])], outputs: [y(['B', 24])], nodes: [node('Flatten', ['x'], ['y'])] },
  {
    name: 'Flatten axis 1', inputs: [x(['B', 2, 3])], outputs: [y(['B', 6])],
    nodes: [node('Flatten', ['x'], ['y'], { attributes: [attrInt('axis', 1)] })],
  },
  {
    name: 'Flatten axis 2 [B,1,3,4]', inputs: [x(['B', 1, 3, 4])], outputs: [y(['B', 12])],
    nodes: [node('Flatten', ['x'], ['y'], { attributes: [attrInt('axis', 2)] })],
  },
  {
    name: 'Flatten axis 2 (fixed shapes)', inputs: [x([2, 3, 4])], outputs: [y([6, 4])], maxBatchSize: 0,
    nodes: [node('Flatten', ['x'], ['y'], { attributes: [attrInt('axis', 2)] })],
  },
  {
    name: 'Reshape [0, 3, -1]', inputs: [x(['B', 2, 6])], outputs: [y(['B', 3, 4])],
    initializers: [int64Initializer('shape', [3], [0, 3, -1])], nodes: [node('Reshape', ['x', 'shape'], ['y'])],
  },
  {
    name: 'Reshape [0, -1]', inputs: [x(['B', 2, 6])], outputs: [y(['B', 12])],
    initializers: [int64Initializer('shape', [2], [0, -1])], nodes: [node('Reshape', ['x', 'shape'], ['y'])],
  },
  {
    name: 'Reshape [0, 0, 3, 2]', inputs: [x(['B', 2, 6])], outputs: [y(['B', 2, 3, 2])],
    initializers: [int64Initializer('shape', [4], [0, 0, 3, 2])], nodes: [node('Reshape', ['x', 'shape'], ['y'])],
  },
  {
    name: 'Squeeze axes [1]', inputs: [x(['B', 1, 4, 1])], outputs: [y(['B', 4, 1])],
    initializers: [int64Initializer('axes', [1], [1])], nodes: [node('Squeeze', ['x', 'axes'], ['y'])],
  },
  {
    name: 'Squeeze axes [1, -1]', inputs: [x(['B', 1, 4, 1])], outputs: [y(['B', 4])],
    initializers: [int64Initializer('axes', [2], [1, -1])], nodes: [node('Squeeze', ['x', 'axes'], ['y'])],
  },
  {
    name: 'Unsqueeze axes [1]', inputs: [x(['B', 4])], outputs: [y(['B', 1, 4])],
    initializers: [int64Initializer('axes', [1], [1])], nodes: [node('Unsqueeze', ['x', 'axes'], ['y'])],
  },
  {
    name: 'Unsqueeze axes [-1]', inputs: [x(['B', 4])], outputs: [y(['B', 4, 1])],
    initializers: [int64Initializer('axes', [1], [-1])], nodes: [node('Unsqueeze', ['x', 'axes'], ['y'])],
  },
  {
    name: 'Unsqueeze axes [1, 3]', inputs: [x(['B', 4])], outputs: [y(['B', 1, 4, 1])],
    initializers: [int64Initializer('axes', [2], [1, 3])], nodes: [node('Unsqueeze', ['x', 'axes'], ['y'])],
  },
  {
    name: 'Transpose rank 3 [0, 2, 1]', inputs: [x(['B', 3, 4])], outputs: [y(['B', 4, 3])],
    nodes: [node('Transpose', ['x'], ['y'], { attributes: [attrInts('perm', [0, 2, 1])] })],
  },
  {
    name: 'Transpose rank 4 [0, 3, 1, 2]', inputs: [x(['B', 2, 3, 4])], outputs: [y(['B', 4, 2, 3])],
    nodes: [node('Transpose', ['x'], ['y'], { attributes: [attrInts('perm', [0, 3, 1, 2])] })],
  },
  {
    name: 'Transpose rank 4 [0, 2, 3, 1]', inputs: [x(['B', 2, 3, 4])], outputs: [y(['B', 3, 4, 2])],
    nodes: [node('Transpose', ['x'], ['y'], { attributes: [attrInts('perm', [0, 2, 3, 1])] })],
  },
  {
    name: 'Transpose default perm (fixed shapes)', inputs: [x([2, 3, 4])], outputs: [y([4, 3, 2])], maxBatchSize: 0,
    nodes: [node('Transpose', ['x'], ['y'])],
  },
  { name: 'Identity', inputs: [x(['B', 5])], outputs: [y(['B', 5])], nodes: [node('Identity', ['x'], ['y'])] },
  {
    name: 'Identity INT64', inputs: [x(['B', 3], 'x', { kind: 'ints', low: -1000, high: 1000 }, 'int64')], outputs: [y(['B', 3], 'y', 'int64')],
    nodes: [node('Identity', ['x'], ['y'])],
  },
];

const norm: OpCase[] = [
  {
    name: 'BatchNormalization [B,3,4,5], epsilon 1e-3', inputs: [x(['B', 3, 4, 5])], outputs: [y(['B', 3, 4, 5])],
    initializers: [w('scale', [3]), w('bias', [3]), w('mean', [3]), w('var', [3], 'positive')],
    nodes: [node('BatchNormalization', ['x', 'scale', 'bias', 'mean', 'var'], ['y'], { attributes: [attrFloat('epsilon', 1e-3)] })],
  },
  {
    name: 'BatchNormalization [B,3]', inputs: [x(['B', 3])], outputs: [y(['B', 3])],
    initializers: [w('scale', [3]), w('bias', [3]), w('mean', [3]), w('var', [3], 'positive')],
    nodes: [node('BatchNormalization', ['x', 'scale', 'bias', 'mean', 'var'], ['y'])],
  },
  {
    name: 'LayerNormalization axis -1', inputs: [x(['B', 3, 8])], outputs: [y(['B', 3, 8])],
    initializers: [w('scale', [8]), w('bias', [8])],
    nodes: [node('LayerNormalization', ['x', 'scale', 'bias'], ['y'], { attributes: [attrInt('axis', -1)] })],
  },
  {
    name: 'LayerNormalization axis -2, epsilon 1e-3', inputs: [x(['B', 3, 8])], outputs: [y(['B', 3, 8])],
    initializers: [w('scale', [3, 8]), w('bias', [3, 8])],
    nodes: [node('LayerNormalization', ['x', 'scale', 'bias'], ['y'], { attributes: [attrInt('axis', -2), attrFloat('epsilon', 1e-3)] })],
  },
  {
    name: 'LayerNormalization without bias', inputs: [x(['B', 6])], outputs: [y(['B', 6])], initializers: [w('scale', [6])],
    nodes: [node('LayerNormalization', ['x', 'scale'], ['y'])],
  },
];

const reduce: OpCase[] = [
  {
    name: 'ReduceSum axes [1], keepdims 1', inputs: [x(['B', 3, 4])], outputs: [y(['B', 1, 4])],
    initializers: [int64Initializer('axes', [1], [1])], nodes: [node('ReduceSum', ['x', 'axes'], ['y'])],
  },
  {
    name: 'ReduceSum axes [-1], keepdims 0', inputs: [x(['B', 3, 4])], outputs: [y(['B', 3])],
    initializers: [int64Initializer('axes', [1], [-1])], nodes: [node('ReduceSum', ['x', 'axes'], ['y'], { attributes: [attrInt('keepdims', 0)] })],
  },
  {
    name: 'ReduceSum axes [1, 2], keepdims 0', inputs: [x(['B', 3, 4])], outputs: [y(['B'])],
    initializers: [int64Initializer('axes', [2], [1, 2])], nodes: [node('ReduceSum', ['x', 'axes'], ['y'], { attributes: [attrInt('keepdims', 0)] })],
  },
  {
    name: 'ReduceMean axes [-1], keepdims 0', inputs: [x(['B', 3, 4])], outputs: [y(['B', 3])],
    nodes: [node('ReduceMean', ['x'], ['y'], { attributes: [attrInts('axes', [-1]), attrInt('keepdims', 0)] })],
  },
  {
    name: 'ReduceMean axes [1], keepdims 1 (default)', inputs: [x(['B', 3, 4])], outputs: [y(['B', 1, 4])],
    nodes: [node('ReduceMean', ['x'], ['y'], { attributes: [attrInts('axes', [1])] })],
  },
  {
    name: 'ReduceMean axes [1, 2], keepdims 1', inputs: [x(['B', 3, 4])], outputs: [y(['B', 1, 1])],
    nodes: [node('ReduceMean', ['x'], ['y'], { attributes: [attrInts('axes', [1, 2]), attrInt('keepdims', 1)] })],
  },
];

const ids = (type: 'int64' | 'int32', dims: readonly D[], n: number): Io => x(dims, 'ids', { kind: 'ints', low: -n, high: n }, type);

const gather: OpCase[] = [
  {
    name: 'Gather INT64 ids (negative too) into a [10,4] table', inputs: [ids('int64', ['B', 3], 10)], outputs: [y(['B', 3, 4])],
    initializers: [w('table', [10, 4])], nodes: [node('Gather', ['table', 'ids'], ['y'])],
  },
  {
    name: 'Gather INT32 ids, axis 0', inputs: [ids('int32', ['B', 3], 10)], outputs: [y(['B', 3, 4])],
    initializers: [w('table', [10, 4])], nodes: [node('Gather', ['table', 'ids'], ['y'], { attributes: [attrInt('axis', 0)] })],
  },
  {
    name: 'Gather one id per row [B]', inputs: [ids('int64', ['B'], 10)], outputs: [y(['B', 4])],
    initializers: [w('table', [10, 4])], nodes: [node('Gather', ['table', 'ids'], ['y'])],
  },
  {
    name: 'Gather axis 1 of a [3,10] table, then Transpose', inputs: [ids('int64', ['B', 2], 10)], outputs: [y(['B', 3, 2])],
    initializers: [w('table', [3, 10])],
    nodes: [
      node('Gather', ['table', 'ids'], ['g'], { attributes: [attrInt('axis', 1)] }),
      node('Transpose', ['g'], ['y'], { attributes: [attrInts('perm', [1, 0, 2])] }),
    ],
  },
];

const cast: OpCase[] = [
  {
    name: 'Cast FLOAT -> FLOAT16', inputs: [x(['B', 6])], outputs: [y(['B', 6], 'y', 'float16')],
    nodes: [node('Cast', ['x'], ['y'], { attributes: [attrInt('to', ONNX_ELEM.float16)] })],
  },
  {
    name: 'Cast FLOAT16 -> FLOAT', inputs: [x(['B', 6], 'x', undefined, 'float16')], outputs: [y(['B', 6])],
    nodes: [node('Cast', ['x'], ['y'], { attributes: [attrInt('to', ONNX_ELEM.float32)] })],
  },
  {
    name: 'Cast FLOAT -> DOUBLE', inputs: [x(['B', 6])], outputs: [y(['B', 6], 'y', 'float64')],
    nodes: [node('Cast', ['x'], ['y'], { attributes: [attrInt('to', ONNX_ELEM.float64)] })],
  },
  {
    name: 'Cast DOUBLE -> FLOAT', inputs: [x(['B', 6], 'x', undefined, 'float64')], outputs: [y(['B', 6])],
    nodes: [node('Cast', ['x'], ['y'], { attributes: [attrInt('to', ONNX_ELEM.float32)] })],
  },
];

const GROUPS: ReadonlyArray<readonly [string, readonly OpCase[]]> = [
  ['Gemm', gemm],
  ['MatMul', matmul],
  ['Add', binaryCases('Add')],
  ['Sub', binaryCases('Sub')],
  ['Mul', binaryCases('Mul')],
  ['Div', binaryCases('Div')],
  ['activations and Softmax, Clip', unary],
  ['shape ops', shape],
  ['normalisation', norm],
  ['reductions', reduce],
  ['Gather', gather],
  ['Cast', cast],
];

// --- the tests --------------------------------------------------------------------------

let parity: Parity;
beforeAll(() => {
  parity = Parity.open('ops');
});
afterAll(() => parity?.close());

let caseIndex = 0;
for (const [group, cases] of GROUPS) {
  describe(group, () => {
    for (const c of cases) {
      const index = caseIndex++;
      it(c.name, async () => {
        await parity.check({
          name: c.name,
          model: buildModel(c),
          maxBatchSize: c.maxBatchSize ?? MAX_BATCH,
          batches: BATCHES,
          feeds: feedsFor(c, index),
        });
      });
    }
  });
}

// Valid ONNX the executor does not run: Executor.create refuses it (and the
// server falls back to onnxruntime) with FAILED_PRECONDITION naming op and node.
const refused: ReadonlyArray<OpCase & { readonly op: RegExp; readonly node: RegExp }> = [
  {
    name: 'an unsupported op (Conv)', op: /Conv/, node: /stem_conv/,
    inputs: [x(['B', 1, 5, 5])], outputs: [y(['B', 2, 3, 3])], initializers: [w('kernel', [2, 1, 3, 3])],
    nodes: [node('Conv', ['x', 'kernel'], ['y'], { name: 'stem_conv' })],
  },
  {
    name: 'MatMul batch dimensions that broadcast both ways, [B,1,3,6] x [2,6,4]', op: /MatMul/, node: /heads_matmul/,
    inputs: [x(['B', 1, 3, 6])], outputs: [y(['B', 2, 3, 4])], initializers: [w('w', [2, 6, 4])],
    nodes: [node('MatMul', ['x', 'w'], ['y'], { name: 'heads_matmul' })],
  },
];

describe('refused graphs', () => {
  for (const c of refused) {
    it(`${c.name}: Executor.create fails with FAILED_PRECONDITION naming the op and the node`, async () => {
      const model = buildModel(c);
      const owner = parity.owner(c.name);
      try {
        const created = parity.executor(model, 'refused', MAX_BATCH, owner);
        await expect(created).rejects.toBeInstanceOf(NativeError);
        await expect(created).rejects.toMatchObject({ code: 'FAILED_PRECONDITION' });
        await expect(created).rejects.toThrow(c.op);
        await expect(created).rejects.toThrow(c.node);
        // A failed load leaves nothing charged.
        expect(parity.arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
      } finally {
        parity.arena.destroyOwner(owner);
      }
    });
  }
});
