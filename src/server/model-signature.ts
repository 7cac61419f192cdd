/**
 * TRANSITIONAL re-export: the model signature moved to tensor/model-signature.ts
 * (below the repository, which derives it). Remove once its remaining importers
 * (repository/model-version.ts, native-loader.ts, warmup-samples.ts,
 * executor/version-executor.ts, batching/version-batcher.ts) import it from there.
 */
export * from '../tensor/model-signature.js';
