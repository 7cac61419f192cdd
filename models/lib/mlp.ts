// Dense multi-layer perceptrons for the sample models: seeded weight initialisation
// and the equivalent ONNX graph (Gemm per layer, Relu between, optional Sigmoid).
//
// Weights are laid out as PyTorch's nn.Linear stores them, [out, in] row-major, and
// the Gemm nodes use transB=1, which is exactly what a torch.onnx export produces.

import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import { attrInt, floatInitializer, node, tensorValueInfo, type GraphSpec } from './onnx-builder.js';
import type { SeededRandom } from './seeded-random.js';

export type Activation = 'relu' | 'sigmoid' | 'none';

export interface DenseLayer {
  readonly inFeatures: number;
  readonly outFeatures: number;
  /** [outFeatures, inFeatures], row-major. */
  readonly weight: Float32Array;
  /** [outFeatures]. */
  readonly bias: Float32Array;
  /** Applied after the affine transform. */
  readonly activation: Activation;
}

export interface MlpInit {
  /** Layer widths including input and output, e.g. [32, 64, 32, 1]. */
  sizes: readonly number[];
  /** Activation after the last layer (hidden layers always use Relu). */
  finalActivation: 'sigmoid' | 'none';
  /** Constant added to the last layer's bias, e.g. a negative prior for a click rate. */
  finalBiasOffset?: number;
}

/**
 * Seeded initialisation that keeps activations in a sensible range for inputs of unit
 * variance, so sigmoid outputs are spread out rather than pinned at 0 or 1:
 * - hidden layers (followed by Relu): He-uniform, limit sqrt(6 / fan_in);
 * - the last layer: Glorot-uniform, limit sqrt(6 / (fan_in + fan_out)).
 * Uniform (not normal) draws keep the stream free of transcendental functions; see
 * seeded-random.ts for why that matters.
 */
export function initMlp(rng: SeededRandom, init: MlpInit): DenseLayer[] {
  const { sizes } = init;
  if (sizes.length < 2) throw new RangeError('an MLP needs at least an input and an output size');
  const layers: DenseLayer[] = [];
  for (let l = 0; l + 1 < sizes.length; l++) {
    const fanIn = sizes[l]!;
    const fanOut = sizes[l + 1]!;
    const last = l + 2 === sizes.length;
    const limit = last ? Math.sqrt(6 / (fanIn + fanOut)) : Math.sqrt(6 / fanIn);
    const weight = rng.uniformArray(fanOut * fanIn, -limit, limit);
    const bias = rng.uniformArray(fanOut, -0.05, 0.05);
    if (last && init.finalBiasOffset !== undefined) {
      for (let i = 0; i < bias.length; i++) bias[i] = bias[i]! + init.finalBiasOffset;
    }
    layers.push({ inFeatures: fanIn, outFeatures: fanOut, weight, bias, activation: last ? init.finalActivation : 'relu' });
  }
  return layers;
}

export interface MlpGraphOptions {
  name: string;
  doc: string;
  inputName: string;
  outputName: string;
}

/**
 * The ONNX graph for `layers`: input [batch, in] FP32 -> ... -> output [batch, out].
 * The batch dimension is the symbolic "batch", as a dynamic-axes export names it.
 */
export function mlpGraph(layers: readonly DenseLayer[], opts: MlpGraphOptions): GraphSpec {
  const first = layers[0];
  const last = layers[layers.length - 1];
  if (first === undefined || last === undefined) throw new RangeError('an MLP needs at least one layer');
  const nodes = [];
  const initializers = [];
  let current = opts.inputName;
  for (const [i, layer] of layers.entries()) {
    const isLast = i === layers.length - 1;
    const w = `fc${i}.weight`;
    const b = `fc${i}.bias`;
    initializers.push(
      floatInitializer(w, [layer.outFeatures, layer.inFeatures], layer.weight),
      floatInitializer(b, [layer.outFeatures], layer.bias),
    );
    const affine = isLast && layer.activation === 'none' ? opts.outputName : `fc${i}`;
    nodes.push(node('Gemm', [current, w, b], [affine], { attributes: [attrInt('transB', 1)] }));
    current = affine;
    if (layer.activation !== 'none') {
      const activated = isLast ? opts.outputName : `act${i}`;
      nodes.push(node(layer.activation === 'relu' ? 'Relu' : 'Sigmoid', [current], [activated]));
      current = activated;
    }
  }
  return {
    name: opts.name,
    doc: opts.doc,
    inputs: [tensorValueInfo(opts.inputName, TensorProto_DataType.FLOAT, ['batch', first.inFeatures])],
    outputs: [tensorValueInfo(opts.outputName, TensorProto_DataType.FLOAT, ['batch', last.outFeatures])],
    nodes,
    initializers,
  };
}
