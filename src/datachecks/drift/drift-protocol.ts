/** Messages between DriftChecks (main thread) and the compute thread (drift-compute-thread.ts). */
import type { FeatureReference } from './drift-stats.js';

export interface ComputeJob {
  readonly job: number;
  /** One per feature: its reference and the window's values (a transferred copy). */
  readonly features: readonly { readonly reference: FeatureReference; readonly values: Float64Array }[];
}

export interface ComputeResult {
  readonly job: number;
  readonly results: readonly { readonly psi: number; readonly ks: number; readonly count: number }[];
}
