/**
 * Which of a model's numbered version directories are served, per Triton's
 * ModelVersionPolicy. Pure functions: the repository scanner passes in the
 * versions it found on disk and loads what comes back.
 */
import type { ModelVersionPolicy } from '../generated/model_config_pb.js';

export interface VersionSelection {
  /** Versions to serve, ascending. */
  readonly versions: number[];
  /** Versions a `specific` policy names that are not on disk, ascending. */
  readonly missing: number[];
}

/**
 * Applies `policy` to the `available` versions. No policy means Triton's
 * default, `latest { num_versions: 1 }`; `num_versions: 0` is read the same way
 * (proto3 cannot tell it from unset, and validation rejects it when written).
 */
export function selectVersionsDetailed(
  policy: ModelVersionPolicy | undefined,
  available: readonly number[],
): VersionSelection {
  const sorted = [...new Set(available)].sort((a, b) => a - b);
  const choice = policy?.policyChoice;
  switch (choice?.case) {
    case 'all':
      return { versions: sorted, missing: [] };
    case 'specific': {
      const wanted = [...new Set(choice.value.versions.map(Number))].sort((a, b) => a - b);
      const present = new Set(sorted);
      return {
        versions: wanted.filter((v) => present.has(v)),
        missing: wanted.filter((v) => !present.has(v)),
      };
    }
    case 'latest': {
      const count = Math.max(1, choice.value.numVersions);
      return { versions: sorted.slice(-count), missing: [] };
    }
    default:
      return { versions: sorted.slice(-1), missing: [] };
  }
}

/** The versions to serve, ascending. See `selectVersionsDetailed` for what is missing. */
export function selectVersions(policy: ModelVersionPolicy | undefined, available: number[]): number[] {
  return selectVersionsDetailed(policy, available).versions;
}
