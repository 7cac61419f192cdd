import { describe, expect, it } from 'vitest';
import { poissonSchedule, seededUniform, splitEvenly } from '../../bench/load/poisson.js';

describe('bench Poisson schedules', () => {
  it('is a pure function of rate, duration and seed', () => {
    expect(poissonSchedule(500, 1000, 3, 10_000)).toEqual(poissonSchedule(500, 1000, 3, 10_000));
    expect(poissonSchedule(500, 1000, 3, 10_000)).not.toEqual(poissonSchedule(500, 1000, 4, 10_000));
  });

  it('stays inside the duration, ascends, and averages the requested rate', () => {
    const schedule = poissonSchedule(1000, 20_000, 11, 1_000_000);
    for (let i = 1; i < schedule.length; i += 1) expect(schedule[i]!).toBeGreaterThanOrEqual(schedule[i - 1]!);
    expect(schedule[schedule.length - 1]!).toBeLessThan(20_000);
    // 20 000 expected arrivals; the standard deviation is ~141.
    expect(schedule.length).toBeGreaterThan(19_300);
    expect(schedule.length).toBeLessThan(20_700);
    // Exponential gaps: the coefficient of variation is ~1 (a fixed-rate schedule would give 0).
    const gaps = Array.from(schedule, (t, i) => t - (i === 0 ? 0 : schedule[i - 1]!));
    const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
    const sd = Math.sqrt(gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / gaps.length);
    expect(mean).toBeCloseTo(1, 1);
    expect(sd / mean).toBeGreaterThan(0.9);
    expect(sd / mean).toBeLessThan(1.1);
  });

  it('caps the number of arrivals and refuses a non-positive rate', () => {
    expect(poissonSchedule(1e6, 1000, 1, 50)).toHaveLength(50);
    expect(() => poissonSchedule(0, 1000, 1, 10)).toThrow(/rate must be > 0, got 0/);
  });

  it('draws uniforms in [0, 1)', () => {
    const uniform = seededUniform(42);
    for (let i = 0; i < 10_000; i += 1) {
      const u = uniform();
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(1);
    }
  });

  it('splits totals as evenly as integers allow', () => {
    expect(splitEvenly(64, 2)).toEqual([32, 32]);
    expect(splitEvenly(7, 3)).toEqual([3, 2, 2]);
    expect(splitEvenly(1, 1)).toEqual([1]);
  });
});
