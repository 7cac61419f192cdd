// ctr_deep: a click-through-rate model in the shape production ones have (a DLRM /
// Wide&Deep-style "deep" tower), the sample model the native executor is built for:
//
//   dense        FP32  [B, 13] ---------------------------------------------+
//   categorical  INT64 [B, 8] -> Gather(embedding 1000 x 16) -> [B, 8, 16]  |
//                             -> Reshape [0, -1] -> [B, 128] ---------------+-> Concat [B, 141]
//   -> LayerNormalization(axis -1) -> Gemm+Relu 141-64 -> Gemm+Relu 64-32 -> Gemm 32-1
//   -> Sigmoid -> probability FP32 [B, 1]
//
// The 8 categorical fields share one embedding table: ids are hashed into one
// vocabulary of 1,000 rows by the caller (the hashing trick), so one Gather serves
// every field, as in models exported from a shared-vocabulary feature column.
//
// Everything is a pure function of SEED_CTR_DEEP (see seeded-random.ts), and the
// parameter function is exported so tests compute references from exactly the
// weights in the file. Opset 17: LayerNormalization first appears there.

import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import { initMlp, type DenseLayer } from './mlp.js';
import {
  attrFloat,
  attrInt,
  floatInitializer,
  int64Initializer,
  node,
  ONNX_OPSET,
  tensorValueInfo,
  type GraphSpec,
} from './onnx-builder.js';
import { SeededRandom } from './seeded-random.js';
import { renderModelConfig } from './triton-config.js';

export const CTR_DEEP_SHAPE = {
  denseFeatures: 13,
  categoricalFields: 8,
  vocabulary: 1000,
  embeddingDim: 16,
  hidden: [64, 32] as readonly number[],
  maxBatchSize: 256,
  layerNormEpsilon: 1e-5,
} as const;

/** The width after Concat: 13 dense + 8 x 16 embedded = 141. */
export const CTR_DEEP_CONCAT_WIDTH = CTR_DEEP_SHAPE.denseFeatures + CTR_DEEP_SHAPE.categoricalFields * CTR_DEEP_SHAPE.embeddingDim;

const SEED_CTR_DEEP = 0xc7d33b;

export interface CtrDeepParams {
  /** [vocabulary, embeddingDim], row-major. */
  readonly embedding: Float32Array;
  /** LayerNormalization scale and bias, [CTR_DEEP_CONCAT_WIDTH] each. */
  readonly lnScale: Float32Array;
  readonly lnBias: Float32Array;
  /** 141-64-32-1, Relu between, Sigmoid last (weights [out, in], as mlp.ts lays them out). */
  readonly layers: readonly DenseLayer[];
}

export function ctrDeepParams(): CtrDeepParams {
  const rng = new SeededRandom(SEED_CTR_DEEP);
  const { vocabulary, embeddingDim } = CTR_DEEP_SHAPE;
  // Embeddings of about unit scale, like the dense features, so neither half of the
  // concatenation dominates the layer norm's statistics.
  const embedding = rng.uniformArray(vocabulary * embeddingDim, -1, 1);
  // A trained layer norm's affine stays near the identity.
  const lnScale = rng.uniformArray(CTR_DEEP_CONCAT_WIDTH, 0.8, 1.2);
  const lnBias = rng.uniformArray(CTR_DEEP_CONCAT_WIDTH, -0.1, 0.1);
  // A -0.5 prior on the logit: clicks are the minority class (mean ~12% on unit inputs).
  const layers = initMlp(rng, {
    sizes: [CTR_DEEP_CONCAT_WIDTH, ...CTR_DEEP_SHAPE.hidden, 1],
    finalActivation: 'sigmoid',
    finalBiasOffset: -0.5,
  });
  return { embedding, lnScale, lnBias, layers };
}

export function ctrDeepConfig(): string {
  return renderModelConfig({
    name: 'ctr_deep',
    maxBatchSize: CTR_DEEP_SHAPE.maxBatchSize,
    inputs: [
      { name: 'dense', datatype: 'FP32', dims: [CTR_DEEP_SHAPE.denseFeatures] },
      { name: 'categorical', datatype: 'INT64', dims: [CTR_DEEP_SHAPE.categoricalFields] },
    ],
    outputs: [{ name: 'probability', datatype: 'FP32', dims: [1] }],
    // A short delay: a GPU batch costs about the same at 8 rows as at 256.
    dynamicBatching: { preferredBatchSizes: [64, 128, 256], maxQueueDelayMicroseconds: 100 },
    instanceKind: 'KIND_GPU',
    gpus: [0],
  });
}

export function ctrDeepGraph(params: CtrDeepParams = ctrDeepParams()): GraphSpec {
  const { denseFeatures, categoricalFields, vocabulary, embeddingDim, layerNormEpsilon } = CTR_DEEP_SHAPE;
  const initializers = [
    floatInitializer('embedding.weight', [vocabulary, embeddingDim], params.embedding),
    // [0, -1]: keep the batch dimension, flatten the fields' embeddings after it.
    int64Initializer('flatten.shape', [2], [0, -1]),
    floatInitializer('norm.weight', [CTR_DEEP_CONCAT_WIDTH], params.lnScale),
    floatInitializer('norm.bias', [CTR_DEEP_CONCAT_WIDTH], params.lnBias),
  ];
  const nodes = [
    node('Gather', ['embedding.weight', 'categorical'], ['embedded'], { attributes: [attrInt('axis', 0)] }),
    node('Reshape', ['embedded', 'flatten.shape'], ['embedded_flat']),
    node('Concat', ['dense', 'embedded_flat'], ['features'], { attributes: [attrInt('axis', 1)] }),
    node('LayerNormalization', ['features', 'norm.weight', 'norm.bias'], ['normalized'], {
      attributes: [attrInt('axis', -1), attrFloat('epsilon', layerNormEpsilon)],
    }),
  ];
  let current = 'normalized';
  for (const [i, layer] of params.layers.entries()) {
    const last = i === params.layers.length - 1;
    initializers.push(
      floatInitializer(`mlp.${i}.weight`, [layer.outFeatures, layer.inFeatures], layer.weight),
      floatInitializer(`mlp.${i}.bias`, [layer.outFeatures], layer.bias),
    );
    nodes.push(node('Gemm', [current, `mlp.${i}.weight`, `mlp.${i}.bias`], [`mlp.${i}`], { attributes: [attrInt('transB', 1)] }));
    const activated = last ? 'probability' : `mlp.${i}.relu`;
    nodes.push(node(last ? 'Sigmoid' : 'Relu', [`mlp.${i}`], [activated]));
    current = activated;
  }
  return {
    name: 'ctr_deep',
    doc:
      'Click-through-rate model: a shared 1000 x 16 embedding for 8 categorical fields, concatenated with 13 ' +
      'dense features, LayerNormalization, an MLP 141-64-32-1 with Relu and a Sigmoid output (synthetic weights).',
    inputs: [
      tensorValueInfo('dense', TensorProto_DataType.FLOAT, ['batch', denseFeatures]),
      tensorValueInfo('categorical', TensorProto_DataType.INT64, ['batch', categoricalFields]),
    ],
    outputs: [tensorValueInfo('probability', TensorProto_DataType.FLOAT, ['batch', 1])],
    nodes,
    initializers,
    opsets: [ONNX_OPSET],
  };
}
