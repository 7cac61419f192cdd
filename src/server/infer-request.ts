/**
 * TRANSITIONAL re-export: request preparation moved to tensor/infer-request.ts
 * (below the repository, which runs golden checks through it). Remove once
 * server/inference-runner.ts imports it from there.
 */
export * from '../tensor/infer-request.js';
