import { afterEach, describe, expect, it, vi } from 'vitest';
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

describe('sharded inference statistics (one shard per recording thread)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sum every shard in snapshot() and toProto(), whichever shard reads', () => {
    const main = new InferenceStatistics({ shards: 3, maxBatchSize: 4 });
    const door1 = InferenceStatistics.attach(main.share(), 1);
    const door2 = InferenceStatistics.attach(main.share(), 2);
    main.recordSuccess(2, 100_000, timing);
    door1.recordSuccess(3, 200_000, timing);
    door1.recordSuccess(1, 300_000, timing);
    door2.recordCacheHit(4, 7_000, 500);
    door2.recordCacheMiss(900);
    main.recordCacheMiss(100);
    door1.recordFailure(5_000, 'REJECTED');
    door2.recordFailure(6_000, 'REJECTED');
    main.recordFailure(1_000, 'BACKEND');
    door1.recordExecution(2, timing);
    main.recordExecution(2, timing);

    const expected = {
      successCount: 4,
      failureCounts: { REJECTED: 2, CANCELED: 0, BACKEND: 1, OTHER: 0 },
      inferenceCount: 10,
      executionCount: 2,
      requestNs: 607_000,
      queueNs: 3_000,
      computeInputNs: 6_000,
      computeInferNs: 90_000,
      computeOutputNs: 12_000,
      cacheHitCount: 1,
      cacheHitNs: 500,
      cacheMissCount: 2,
      cacheMissNs: 1_000,
    };
    expect(main.snapshot()).toEqual(expected);
    expect(door1.snapshot()).toEqual(expected);
    expect(door2.snapshot()).toEqual(expected);

    const proto = main.toProto('m', '1');
    expect(proto).toEqual(door2.toProto('m', '1'));
    expect(proto.inferenceCount).toBe(10n);
    expect(proto.executionCount).toBe(2n);
    expect(proto.inferenceStats?.success).toMatchObject({ count: 4n, ns: 607_000n });
    expect(proto.inferenceStats?.fail).toMatchObject({ count: 3n, ns: 12_000n });
    expect(proto.inferenceStats?.queue).toMatchObject({ count: 3n, ns: 3_000n });
    expect(proto.inferenceStats?.computeInfer).toMatchObject({ count: 3n, ns: 90_000n });
    expect(proto.inferenceStats?.cacheHit).toMatchObject({ count: 1n, ns: 500n });
    expect(proto.inferenceStats?.cacheMiss).toMatchObject({ count: 2n, ns: 1_000n });
    expect(proto.batchStats).toHaveLength(1);
    expect(proto.batchStats[0]).toMatchObject({ batchSize: 2n, computeInfer: { count: 2n, ns: 60_000n }, computeOutput: { count: 2n, ns: 8_000n } });
  });

  it('keep sizes 1..maxBatchSize in shared slots, larger ones on the main shard only, all in size order', () => {
    const main = new InferenceStatistics({ shards: 2, maxBatchSize: 4 });
    const door = InferenceStatistics.attach(main.share(), 1);
    door.recordExecution(4, timing);
    main.recordExecution(9, timing); // above max_batch_size: the main thread's unbatched path
    door.recordExecution(1, timing);
    main.recordExecution(4, timing);
    main.recordExecution(9, timing);
    expect(() => door.recordExecution(5, timing)).toThrow(/batchSize 5 has no slot in front-door shard 1 \(expected an integer from 1 to 4/);
    const proto = main.toProto('m', '1');
    // The refused execution was not counted.
    expect(proto.executionCount).toBe(5n);
    expect(proto.batchStats.map((b) => [b.batchSize, b.computeInput?.count, b.computeInput?.ns])).toEqual([
      [1n, 1n, 2_000n],
      [4n, 2n, 4_000n],
      [9n, 2n, 4_000n],
    ]);
    // A door's own reads see the shared slots; the main thread's map is its own.
    expect(door.toProto('m', '1').batchStats.map((b) => b.batchSize)).toEqual([1n, 4n]);
  });

  it('give one slot when the model does not batch (max_batch_size 0), and keep every size with one shard', () => {
    const unbatched = new InferenceStatistics({ shards: 2, maxBatchSize: 0 });
    InferenceStatistics.attach(unbatched.share(), 1).recordExecution(1, timing);
    expect(unbatched.toProto('m', '1').batchStats.map((b) => [b.batchSize, b.computeInfer?.count])).toEqual([[1n, 1n]]);

    const single = new InferenceStatistics();
    for (const size of [3, 1, 3, 64]) single.recordExecution(size, timing);
    expect(single.toProto('m', '1').batchStats.map((b) => [b.batchSize, b.computeInfer?.count])).toEqual([[1n, 1n], [3n, 2n], [64n, 1n]]);
  });

  it('report lastInference as the latest over the shards', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const main = new InferenceStatistics({ shards: 3 });
    const door1 = InferenceStatistics.attach(main.share(), 1);
    const door2 = InferenceStatistics.attach(main.share(), 2);
    expect(main.toProto('m', '1').lastInference).toBe(0n);
    vi.setSystemTime(5_000);
    door2.recordFailure(1, 'OTHER');
    vi.setSystemTime(3_000);
    main.recordSuccess(1, 1, timing);
    door1.recordCacheHit(1, 1, 1);
    expect(main.toProto('m', '1').lastInference).toBe(5_000n);
    vi.setSystemTime(7_000);
    door1.recordSuccess(1, 1, timing);
    expect(main.toProto('m', '1').lastInference).toBe(7_000n);
  });

  it('refuse bad options, shards and shared data, naming the field, expected and actual', () => {
    expect(() => new InferenceStatistics({ shards: 0 })).toThrow(/shards must be an integer >= 1 \(1 \+ front-door threads\), got 0/);
    expect(() => new InferenceStatistics({ maxBatchSize: -1 })).toThrow(/maxBatchSize must be an integer >= 0, got -1/);
    expect(() => new InferenceStatistics().share()).toThrow(/made with shards 1/);
    const shared = new InferenceStatistics({ shards: 2, maxBatchSize: 8 }).share();
    expect(() => InferenceStatistics.attach(shared, 0)).toThrow(/shard must be an integer from 1 to 1 \(shard 0 is the main thread's\), got 0/);
    expect(() => InferenceStatistics.attach(shared, 2)).toThrow(/got 2/);
    expect(() => InferenceStatistics.attach({ ...shared, batchSlots: 9 }, 1)).toThrow(/stride must be 64 for 9 batch slots, got 56/);
    expect(() => InferenceStatistics.attach({ ...shared, shards: 3 }, 1)).toThrow(/buffer must be 1344 bytes \(3 shards of 56 cells\), got 896/);
    expect(() => InferenceStatistics.attach({ ...shared, buffer: new ArrayBuffer(896) as unknown as SharedArrayBuffer }, 1)).toThrow(/buffer must be a SharedArrayBuffer/);
  });
});
