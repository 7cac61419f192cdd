import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../../bench/report/latency.js';

describe('bench latency summaries', () => {
  it('uses nearest-rank percentiles', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 0.5)).toBe(50);
    expect(percentile(sorted, 0.9)).toBe(90);
    expect(percentile(sorted, 0.99)).toBe(99);
    expect(percentile(sorted, 0.999)).toBe(100);
    expect(percentile(sorted, 0)).toBe(1);
    expect(percentile(sorted, 1)).toBe(100);
  });

  it('returns NaN for no samples and rejects p outside [0, 1]', () => {
    expect(percentile([], 0.5)).toBeNaN();
    expect(() => percentile([1], 1.5)).toThrow(/p must be in \[0, 1\], got 1.5/);
  });

  it('summarises unsorted samples without reordering the input', () => {
    const samples = [5, 1, 4, 2, 3];
    const summary = summarize(samples);
    expect(samples).toEqual([5, 1, 4, 2, 3]);
    expect(summary).toMatchObject({ count: 5, mean_ms: 3, p50_ms: 3, p90_ms: 5, p99_ms: 5, max_ms: 5 });
  });

  it('rounds to the microsecond', () => {
    expect(summarize([0.12345678]).p50_ms).toBe(0.123);
  });
});
