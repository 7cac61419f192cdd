import { describe, expect, it } from 'vitest';
import { backoffMs, decide, evaluate, slopeBytesPerSecond, type PatrolSample } from '../../src/patrol/patrol-policy.js';

const MiB = 1024 * 1024;
const thresholds = { leakThresholdBytes: 100 * MiB, growthBytesPerSecond: 1 * MiB, window: 5 };
const series = (perSecond: number, n: number, start = 0): PatrolSample[] =>
  Array.from({ length: n }, (_, i) => ({ atMs: i * 1000, leakBytes: start + i * perSecond }));

describe('patrol trigger', () => {
  it('fires on an absolute leak over the threshold', () => {
    expect(evaluate([{ atMs: 0, leakBytes: 101 * MiB }], thresholds)).toEqual({ reason: 'leak_threshold', value: 101 * MiB, threshold: 100 * MiB });
    expect(evaluate([{ atMs: 0, leakBytes: 100 * MiB }], thresholds)).toBeUndefined();
  });

  it('fires on sustained growth only with a full window above the rate', () => {
    expect(evaluate(series(2 * MiB, 4), thresholds)).toBeUndefined();
    const trigger = evaluate(series(2 * MiB, 5), thresholds);
    expect(trigger?.reason).toBe('sustained_growth');
    expect(trigger?.value).toBeCloseTo(2 * MiB);
    expect(evaluate(series(0.5 * MiB, 5), thresholds)).toBeUndefined();
    expect(evaluate(series(-2 * MiB, 5, 50 * MiB), thresholds)).toBeUndefined();
  });

  it('computes a least-squares slope in bytes per second', () => {
    expect(slopeBytesPerSecond([])).toBe(0);
    expect(slopeBytesPerSecond(series(1000, 2))).toBeCloseTo(1000);
    // A noisy flat series has no slope to speak of.
    const flat = [0, 10, -10, 5, -5].map((y, i) => ({ atMs: i * 1000, leakBytes: 1000 + y }));
    expect(Math.abs(slopeBytesPerSecond(flat))).toBeLessThan(5);
  });
});

describe('patrol restart policy', () => {
  const policy = { maxRestarts: 3, backoffBaseMs: 1000, backoffMaxMs: 5000 };

  it('backs off exponentially, capped', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, 1000, 5000))).toEqual([0, 1000, 2000, 4000, 5000, 5000]);
  });

  it('restarts, waits while backing off, then degrades after max restarts', () => {
    expect(decide({ restarts: 0, lastRestartAtMs: undefined }, 0, policy)).toBe('restart');
    expect(decide({ restarts: 1, lastRestartAtMs: 10_000 }, 10_999, policy)).toBe('wait');
    expect(decide({ restarts: 1, lastRestartAtMs: 10_000 }, 11_000, policy)).toBe('restart');
    expect(decide({ restarts: 2, lastRestartAtMs: 10_000 }, 11_500, policy)).toBe('wait');
    expect(decide({ restarts: 3, lastRestartAtMs: 10_000 }, 10_001, policy)).toBe('degrade');
  });
});
