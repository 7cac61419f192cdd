// The sample model repository served by `npm start` and used by the benchmarks:
//
//   ctr_mlp         FP32 [B,32]  -> 32-64-32-1 MLP -> Sigmoid   -> score [B,1]
//   ctr_deep        FP32 [B,13] + INT64 ids [B,8] -> embedding, LayerNorm, 141-64-32-1 MLP
//                   -> Sigmoid -> probability [B,1]; KIND_GPU (see ctr-deep.ts)
//   fraud_gbdt      FP32 [B,16]  -> 100-tree GBDT  -> Sigmoid   -> probability [B,1]
//   ranker_mlp      FP32 [B,256] -> 256-1024-1024-256-1 MLP     -> score [B,1] (~6 MB)
//   typed_identity  one Identity per datatype (FP32, FP16, INT64, BOOL, BYTES), [B,4]
//
// Every model is a pure function of a fixed seed, so the files are byte-identical on
// every run and machine. The parameter functions are exported so tests can compute
// reference outputs from exactly the weights that went into the files.

import { ctrDeepConfig, ctrDeepGraph } from './ctr-deep.js';
import { DATATYPES, type TritonDatatype } from './datatypes.js';
import { initMlp, mlpGraph, type DenseLayer } from './mlp.js';
import { node, serializeModel, tensorValueInfo } from './onnx-builder.js';
import { writeModelFiles, type WrittenFile } from './repository-writer.js';
import { SeededRandom } from './seeded-random.js';
import { renderModelConfig } from './triton-config.js';
import { initTreeEnsemble, treeEnsembleGraph, type TreeEnsemble } from './tree-ensemble.js';

export interface SampleModel {
  readonly name: string;
  /** config.pbtxt text. */
  config(): string;
  /** model.onnx bytes (may take a moment for ranker_mlp). */
  model(): Uint8Array;
}

export { CTR_DEEP_SHAPE, ctrDeepParams, type CtrDeepParams } from './ctr-deep.js';

// Distinct seeds per model, so changing one model never reshuffles another.
const SEED_CTR = 0x0c7a11;
const SEED_FRAUD = 0xf4a0d;
const SEED_RANKER = 0x4a4c3e;

export function ctrMlpLayers(): DenseLayer[] {
  // A -1 prior on the logit: clicks are the minority class.
  return initMlp(new SeededRandom(SEED_CTR), { sizes: [32, 64, 32, 1], finalActivation: 'sigmoid', finalBiasOffset: -1 });
}

export function fraudGbdtEnsemble(): TreeEnsemble {
  // baseValue -2: log-odds of a ~12% base rate, as a booster's init score would be.
  return initTreeEnsemble(new SeededRandom(SEED_FRAUD), {
    nFeatures: 16,
    nTrees: 100,
    maxDepth: 5,
    learningRate: 0.02,
    baseValue: -2,
  });
}

export function rankerMlpLayers(): DenseLayer[] {
  // A ranking score is only compared, never thresholded: the last layer stays linear.
  return initMlp(new SeededRandom(SEED_RANKER), { sizes: [256, 1024, 1024, 256, 1], finalActivation: 'none' });
}

const ctrMlp: SampleModel = {
  name: 'ctr_mlp',
  config: () =>
    renderModelConfig({
      name: 'ctr_mlp',
      maxBatchSize: 64,
      inputs: [{ name: 'features', datatype: 'FP32', dims: [32] }],
      outputs: [{ name: 'score', datatype: 'FP32', dims: [1] }],
      dynamicBatching: { preferredBatchSizes: [16, 32, 64], maxQueueDelayMicroseconds: 200 },
    }),
  model: () =>
    serializeModel(
      mlpGraph(ctrMlpLayers(), {
        name: 'ctr_mlp',
        doc: 'Click-through-rate MLP 32-64-32-1 with Relu and a Sigmoid output (synthetic weights).',
        inputName: 'features',
        outputName: 'score',
      }),
    ),
};

const ctrDeep: SampleModel = {
  name: 'ctr_deep',
  config: ctrDeepConfig,
  model: () => serializeModel(ctrDeepGraph()),
};

const fraudGbdt: SampleModel = {
  name: 'fraud_gbdt',
  // No dynamic batching: this model exercises the direct (unbatched) path.
  config: () =>
    renderModelConfig({
      name: 'fraud_gbdt',
      maxBatchSize: 64,
      inputs: [{ name: 'features', datatype: 'FP32', dims: [16] }],
      outputs: [{ name: 'probability', datatype: 'FP32', dims: [1] }],
    }),
  model: () =>
    serializeModel(
      treeEnsembleGraph(fraudGbdtEnsemble(), {
        name: 'fraud_gbdt',
        doc: 'Fraud GBDT: 100 trees of depth <= 5 (LightGBM-style export) and a Sigmoid (synthetic).',
        inputName: 'features',
        outputName: 'probability',
      }),
    ),
};

const rankerMlp: SampleModel = {
  name: 'ranker_mlp',
  config: () =>
    renderModelConfig({
      name: 'ranker_mlp',
      maxBatchSize: 128,
      inputs: [{ name: 'features', datatype: 'FP32', dims: [256] }],
      outputs: [{ name: 'score', datatype: 'FP32', dims: [1] }],
      dynamicBatching: { preferredBatchSizes: [32, 64, 128], maxQueueDelayMicroseconds: 500 },
    }),
  model: () =>
    serializeModel(
      mlpGraph(rankerMlpLayers(), {
        name: 'ranker_mlp',
        doc: 'Ranking MLP 256-1024-1024-256-1 with Relu and a linear output (synthetic weights).',
        inputName: 'features',
        outputName: 'score',
      }),
    ),
};

/** typed_identity's tensors: in_<suffix> -> out_<suffix>, each [B, 4]. */
export const TYPED_IDENTITY_TENSORS: ReadonlyArray<{ suffix: string; datatype: TritonDatatype }> = [
  { suffix: 'fp32', datatype: 'FP32' },
  { suffix: 'fp16', datatype: 'FP16' },
  { suffix: 'int64', datatype: 'INT64' },
  { suffix: 'bool', datatype: 'BOOL' },
  { suffix: 'bytes', datatype: 'BYTES' },
];

/** Fixed inner width: exercises shape checks that a fully dynamic [-1] would skip. */
const TYPED_IDENTITY_WIDTH = 4;

const typedIdentity: SampleModel = {
  name: 'typed_identity',
  config: () =>
    renderModelConfig({
      name: 'typed_identity',
      maxBatchSize: 8,
      inputs: TYPED_IDENTITY_TENSORS.map((t) => ({ name: `in_${t.suffix}`, datatype: t.datatype, dims: [TYPED_IDENTITY_WIDTH] })),
      outputs: TYPED_IDENTITY_TENSORS.map((t) => ({ name: `out_${t.suffix}`, datatype: t.datatype, dims: [TYPED_IDENTITY_WIDTH] })),
    }),
  model: () => {
    const valueInfo = (name: string, dt: TritonDatatype) =>
      tensorValueInfo(name, DATATYPES[dt].onnx, ['batch', TYPED_IDENTITY_WIDTH]);
    return serializeModel({
      name: 'typed_identity',
      doc: 'Passes each input through unchanged (Identity), one tensor per datatype.',
      inputs: TYPED_IDENTITY_TENSORS.map((t) => valueInfo(`in_${t.suffix}`, t.datatype)),
      outputs: TYPED_IDENTITY_TENSORS.map((t) => valueInfo(`out_${t.suffix}`, t.datatype)),
      nodes: TYPED_IDENTITY_TENSORS.map((t) => node('Identity', [`in_${t.suffix}`], [`out_${t.suffix}`])),
    });
  },
};

/** All sample models, in the order they are written. */
export const SAMPLE_MODELS: readonly SampleModel[] = [ctrMlp, ctrDeep, fraudGbdt, rankerMlp, typedIdentity];

export interface WriteRepositoryOptions {
  /** Keep files that already exist (the install-time mode). */
  missingOnly?: boolean;
  /** Restrict to these model names. */
  only?: readonly string[];
}

/** Write the sample models into `repoDir` (created if needed). */
export async function writeSampleRepository(repoDir: string, opts: WriteRepositoryOptions = {}): Promise<WrittenFile[]> {
  const selected = opts.only === undefined ? SAMPLE_MODELS : SAMPLE_MODELS.filter((m) => opts.only!.includes(m.name));
  if (opts.only !== undefined && selected.length !== opts.only.length) {
    const known = SAMPLE_MODELS.map((m) => m.name);
    throw new Error(`unknown sample model in [${opts.only.join(', ')}]; known: ${known.join(', ')}`);
  }
  const written: WrittenFile[] = [];
  for (const m of selected) {
    written.push(...(await writeModelFiles(repoDir, { name: m.name, config: m.config(), model: () => m.model() }, opts.missingOnly)));
  }
  return written;
}
