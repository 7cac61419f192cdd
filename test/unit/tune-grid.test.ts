/**
 * `hotpath tune`'s pure decisions: the grid (no duplicates of the current
 * config, no preferred size above max_batch_size), a candidate applied to a
 * copy of the original config, when the concurrency search stops, and the
 * pick (highest throughput within the budget, the current config winning
 * ties); and tune's flags, with their refusals.
 */
import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/common/flag-values.js';
import { ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import type { LevelResult } from '../../src/perf/perf-report.js';
import { parseTuneArgs } from '../../src/perf/tune-flags.js';
import { applySettings, bestLevel, gridCandidates, pickBest, searchContinues, settingsOf, unsweepable } from '../../src/perf/tune-grid.js';

const ORIGINAL = create(ModelConfigSchema, {
  name: 'm', maxBatchSize: 64,
  schedulingChoice: { case: 'dynamicBatching', value: { preferredBatchSize: [16, 64], maxQueueDelayMicroseconds: 200n, preserveOrdering: true } },
  instanceGroup: [{ count: 1, kind: 2 }, { count: 1, kind: 2 }],
});

function level(concurrency: number, inferencesPerSecond: number, p99Ms: number, errors = 0): LevelResult {
  return { concurrency, inferencesPerSecond, p99Us: p99Ms * 1000, errors } as LevelResult;
}

describe('tune grid', () => {
  it('reads the current settings and lists the candidates without repeats or impossible preferred sizes', () => {
    const current = settingsOf(ORIGINAL);
    expect(current).toEqual({ maxBatchSize: 64, preferredBatchSizes: [16, 64], maxQueueDelayUs: 200, instanceCount: 2 });
    const same = { maxBatchSize: 64, preferredBatchSizes: [16, 64], maxQueueDelayUs: 200, instanceCount: 2 };
    expect(gridCandidates({ maxBatchSizes: [64], preferred: [], queueDelaysUs: [200], instanceCounts: [2] }, same)).toEqual([]);
    const grid = gridCandidates({ maxBatchSizes: [8, 32], preferred: ['none', 'max', 16], queueDelaysUs: [0], instanceCounts: [1, 1] }, current);
    expect(grid.map((c) => `${c.maxBatchSize}:${c.preferredBatchSizes.join(',')}`)).toEqual(['8:', '8:8', '32:', '32:32', '32:16']);
    expect(unsweepable(ORIGINAL)).toBeUndefined();
    expect(unsweepable(create(ModelConfigSchema, { name: 'flat', maxBatchSize: 0 }))).toMatch(/does not batch \(max_batch_size 0\)/);
  });

  it('applies a candidate to a copy: max_batch_size, dynamic batching, one instance group', () => {
    const tuned = applySettings(ORIGINAL, { maxBatchSize: 8, preferredBatchSizes: [], maxQueueDelayUs: 500, instanceCount: 3 });
    expect(settingsOf(tuned)).toEqual({ maxBatchSize: 8, preferredBatchSizes: [], maxQueueDelayUs: 500, instanceCount: 3 });
    expect(tuned.schedulingChoice.case === 'dynamicBatching' && tuned.schedulingChoice.value.preserveOrdering).toBe(true);
    expect(tuned.instanceGroup).toHaveLength(1);
    expect(settingsOf(ORIGINAL).maxBatchSize).toBe(64);
    const bare = applySettings(create(ModelConfigSchema, { name: 'b', maxBatchSize: 4 }), { maxBatchSize: 4, preferredBatchSizes: [4], maxQueueDelayUs: 0, instanceCount: 1 });
    expect(settingsOf(bare)).toEqual({ maxBatchSize: 4, preferredBatchSizes: [4], maxQueueDelayUs: 0, instanceCount: 1 });
  });

  it('stops the search over budget, on errors or on a plateau, and picks the best level within the budget', () => {
    const budget = 5000;
    expect(searchContinues([], budget)).toBe(true);
    expect(searchContinues([level(1, 100, 1)], budget)).toBe(true);
    expect(searchContinues([level(1, 100, 1), level(2, 180, 2)], budget)).toBe(true);
    expect(searchContinues([level(1, 100, 1), level(2, 103, 2)], budget)).toBe(false); // under 5% more
    expect(searchContinues([level(1, 100, 1), level(2, 300, 6)], budget)).toBe(false); // over budget
    expect(searchContinues([level(1, 100, 1, 1)], budget)).toBe(false);
    expect(bestLevel([level(1, 100, 1), level(2, 300, 6), level(4, 150, 4)], budget)?.concurrency).toBe(4);
    expect(bestLevel([level(1, 100, 6)], budget)).toBeUndefined();
    expect(pickBest([100, undefined, 120, 120])).toBe(2);
    expect(pickBest([100, 100])).toBe(0);
    expect(pickBest([undefined, undefined])).toBe(-1);
  });

  it("parses tune's flags, refusing bad lists and budgets by name", () => {
    const settings = parseTuneArgs(['-m', 'ctr', '--p99-ms', '5'], {});
    expect(settings).toMatchObject({ model: 'ctr', budgetUs: 5000, url: 'localhost:8001', protocol: 'grpc', maxConcurrency: 64, measurementIntervalMs: 1000, maxTrials: 3, outputFile: 'config.pbtxt' });
    expect(settings.grid).toEqual({ maxBatchSizes: [16, 64], preferred: ['none', 'max'], queueDelaysUs: [100, 1000], instanceCounts: [1, 2] });
    const refusal = (argv: string[]) => {
      try {
        parseTuneArgs(argv, {});
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
      throw new Error('expected a usage error');
    };
    expect(refusal(['-m', 'ctr'])).toMatch(/^--p99-ms: expected the latency budget in ms/);
    expect(refusal(['-m', 'ctr', '--p99-ms', '5', '--max-batch-sizes', '8,x'])).toBe("--max-batch-sizes: expected a comma-separated list of integers from 1 to 1048576, got '8,x'");
    expect(refusal(['-m', 'ctr', '--p99-ms', '5', '--preferred-batch-sizes', 'all'])).toMatch(/^--preferred-batch-sizes: expected a comma-separated list of none, max or positive integers, got 'all'/);
    expect(refusal(['-m', 'ctr', '--p99-ms', '5', '-b', '32', '--max-batch-sizes', '16,64'])).toBe('-b 32: expected at most the smallest of --max-batch-sizes (16)');
    expect(refusal(['-m', 'ctr', '--p99-ms', '5', '-i', 'udp'])).toBe("-i: expected grpc or http, got 'udp'");
  });
});
