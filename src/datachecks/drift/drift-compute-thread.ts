/**
 * The drift compute thread: sorts each window column and computes PSI and KS
 * against its reference, so the main thread never does (a 10,000-row window
 * of 32 features is 320,000 values to sort per check).
 */
import { parentPort } from 'node:worker_threads';
import { compareFeature } from './drift-stats.js';
import type { ComputeJob, ComputeResult } from './drift-protocol.js';

parentPort?.on('message', ({ job, features }: ComputeJob) => {
  const result: ComputeResult = { job, results: features.map(({ reference, values }) => compareFeature(reference, values)) };
  parentPort?.postMessage(result);
});
