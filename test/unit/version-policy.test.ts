import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import {
  ModelVersionPolicySchema,
  ModelVersionPolicy_AllSchema,
  ModelVersionPolicy_LatestSchema,
  ModelVersionPolicy_SpecificSchema,
  type ModelVersionPolicy,
} from '../../src/generated/model_config_pb.js';
import { selectVersions, selectVersionsDetailed } from '../../src/repository/version-policy.js';

const latest = (numVersions: number): ModelVersionPolicy =>
  create(ModelVersionPolicySchema, {
    policyChoice: { case: 'latest', value: create(ModelVersionPolicy_LatestSchema, { numVersions }) },
  });
const all = (): ModelVersionPolicy =>
  create(ModelVersionPolicySchema, { policyChoice: { case: 'all', value: create(ModelVersionPolicy_AllSchema) } });
const specific = (versions: number[]): ModelVersionPolicy =>
  create(ModelVersionPolicySchema, {
    policyChoice: {
      case: 'specific',
      value: create(ModelVersionPolicy_SpecificSchema, { versions: versions.map(BigInt) }),
    },
  });

describe('selectVersions', () => {
  it('serves only the highest version when there is no policy (Triton default)', () => {
    expect(selectVersions(undefined, [3, 1, 10, 2])).toEqual([10]);
    expect(selectVersions(create(ModelVersionPolicySchema), [1, 2])).toEqual([2]);
  });

  it('serves the N highest versions for latest, ascending', () => {
    expect(selectVersions(latest(2), [1, 7, 3, 5])).toEqual([5, 7]);
    expect(selectVersions(latest(10), [2, 1])).toEqual([1, 2]);
  });

  it('treats latest with num_versions 0 as 1', () => {
    expect(selectVersions(latest(0), [1, 2, 3])).toEqual([3]);
  });

  it('serves every version for all, deduplicated and sorted', () => {
    expect(selectVersions(all(), [3, 1, 3, 2])).toEqual([1, 2, 3]);
  });

  it('serves only the specific versions that exist and reports the missing ones', () => {
    expect(selectVersions(specific([1, 4, 9]), [1, 2, 3, 4])).toEqual([1, 4]);
    expect(selectVersionsDetailed(specific([9, 1, 4]), [1, 2, 3, 4])).toEqual({ versions: [1, 4], missing: [9] });
  });

  it('returns nothing when no versions are available', () => {
    expect(selectVersions(undefined, [])).toEqual([]);
    expect(selectVersionsDetailed(specific([1]), [])).toEqual({ versions: [], missing: [1] });
  });

  it('does not modify its input', () => {
    const available = [3, 1, 2];
    selectVersions(all(), available);
    expect(available).toEqual([3, 1, 2]);
  });
});
