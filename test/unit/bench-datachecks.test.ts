import { describe, expect, it } from 'vitest';
import { distinctValue, median, percentile, procStatTicks } from '../../bench/suites/datachecks.js';

describe('datachecks bench helpers', () => {
  it('reads utime + stime from a /proc/<pid>/stat line, whatever the command name holds', () => {
    const fields = ['S', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '250', '31', '0', '0'];
    expect(procStatTicks(`1234 (node) ${fields.join(' ')}`)).toBe(281);
    expect(procStatTicks(`1234 (a) b (c) ${fields.join(' ')}`)).toBe(281);
  });

  it('gives distinct values in [-1, 1) to distinct request numbers', () => {
    const seen = new Set<number>();
    let outside = 0;
    for (let n = 0; n < 100_000; n += 1) {
      const v = Math.fround(distinctValue(n));
      if (!(v >= -1 && v < 1)) outside += 1;
      seen.add(v);
    }
    expect(outside).toBe(0);
    expect(seen.size).toBe(100_000);
  });

  it('takes nearest-rank percentiles and medians', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
  });
});
