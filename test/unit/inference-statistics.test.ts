import { describe, expect, it } from 'vitest';
import { InferenceStatistics } from '../../src/repository/inference-statistics.js';

const timing = { queueNs: 1_000, computeInputNs: 2_000, computeInferNs: 30_000, computeOutputNs: 4_000 };

describe('inference statistics', () => {
  it('sum the request duration of successes only, and count failures by reason', () => {
    const statistics = new InferenceStatistics();
    statistics.recordSuccess(4, 100_000, timing);
    statistics.recordSuccess(1, 50_000, timing);
    statistics.recordFailure(9_000_000, 'REJECTED');
    statistics.recordFailure(1_000, 'OTHER');
    statistics.recordFailure(2_000, 'CANCELED');
    const snapshot = statistics.snapshot();
    expect(snapshot.successCount).toBe(2);
    expect(snapshot.requestNs).toBe(150_000);
    expect(snapshot.failureCounts).toEqual({ REJECTED: 1, CANCELED: 1, BACKEND: 0, OTHER: 1 });
    expect(snapshot.inferenceCount).toBe(5);
    // ModelStatistics keeps the failures' own duration apart.
    const proto = statistics.toProto('m', '1');
    expect(proto.inferenceStats?.success).toMatchObject({ count: 2n, ns: 150_000n });
    expect(proto.inferenceStats?.fail).toMatchObject({ count: 3n, ns: 9_003_000n });
  });
});
