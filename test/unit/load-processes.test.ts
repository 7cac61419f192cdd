import { describe, expect, it } from 'vitest';
import { share } from '../../src/perf/load-processes.js';

describe('share', () => {
  it('splits connections and concurrency over the load processes as evenly as possible, summing to the total', () => {
    const split = (total: number, parts: number) => Array.from({ length: parts }, (_, i) => share(total, parts, i));
    expect(split(4, 2)).toEqual([2, 2]);
    expect(split(7, 3)).toEqual([3, 2, 2]);
    expect(split(2, 4)).toEqual([1, 1, 0, 0]);
    for (const [total, parts] of [[64, 5], [1, 1], [100, 7]] as const) expect(split(total, parts).reduce((a, b) => a + b, 0)).toBe(total);
  });
});
