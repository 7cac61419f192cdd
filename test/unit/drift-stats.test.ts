/**
 * Drift's statistics (src/datachecks/drift/drift-stats.ts) against values
 * computed by hand, the reference builder's columns, and the settings parser.
 */
import { describe, expect, it } from 'vitest';
import {
  binCounts,
  binOf,
  compareFeature,
  featureReference,
  ksStatistic,
  psi,
  PSI_FLOOR,
  quantileEdges,
  thinSorted,
} from '../../src/datachecks/drift/drift-stats.js';
import { ReferenceBuilder, parseReference } from '../../src/datachecks/drift/drift-reference.js';
import { DRIFT_DEFAULTS, parseDriftSettings } from '../../src/datachecks/drift/drift-settings.js';

describe('PSI', () => {
  it('matches a hand-computed case', () => {
    // (0.1-.25)ln(.4) + (.2-.25)ln(.8) + (.3-.25)ln(1.2) + (.4-.25)ln(1.6)
    //  = 0.137444 + 0.011157 + 0.009116 + 0.070501 = 0.228217
    expect(psi([0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4])).toBeCloseTo(0.228217, 5);
  });

  it('is 0 for identical proportions and symmetric', () => {
    expect(psi([0.2, 0.3, 0.5], [0.2, 0.3, 0.5])).toBe(0);
    expect(psi([0.5, 0.5], [0.2, 0.8])).toBeCloseTo(psi([0.2, 0.8], [0.5, 0.5]), 12);
  });

  it('floors an empty bin instead of going infinite', () => {
    // (1e-4 - 0.5) ln(1e-4/0.5) + (1 - 0.5) ln(1/0.5)
    const expected = (PSI_FLOOR - 0.5) * Math.log(PSI_FLOOR / 0.5) + 0.5 * Math.log(2);
    expect(psi([0.5, 0.5], [0, 1])).toBeCloseTo(expected, 10);
  });

  it('rejects bins that do not line up', () => {
    expect(() => psi([0.5, 0.5], [1])).toThrow(/2 expected bins, 1 actual/);
  });
});

describe('KS statistic', () => {
  it('matches hand-computed cases', () => {
    // F_a(2) = 0.5, F_b(2) = 0; F_a(4) = 1, F_b(4) = 0.5.
    expect(ksStatistic([1, 2, 3, 4], [3, 4, 5, 6])).toBe(0.5);
    // Ties: F_a(1) = .25 vs 0; F_a(2) = .75 vs 1; F_a(3) = 1 vs 1.
    expect(ksStatistic([1, 2, 2, 3], [2, 2, 2, 2])).toBe(0.25);
    expect(ksStatistic([1, 2, 3], [1, 2, 3])).toBe(0);
    expect(ksStatistic([1, 2], [5, 6, 7])).toBe(1);
    expect(ksStatistic([], [1])).toBe(0);
  });
});

describe('bins', () => {
  it('cuts at the quantiles, right-closed', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    const edges = quantileEdges(sorted, 5);
    expect(edges).toEqual([2, 4, 6, 8]);
    expect(binCounts(sorted, edges)).toEqual([2, 2, 2, 2, 2]);
    expect(binOf(2, edges)).toBe(0);
    expect(binOf(2.5, edges)).toBe(1);
    expect(binOf(-100, edges)).toBe(0);
    expect(binOf(100, edges)).toBe(4);
  });

  it('drops duplicate edges of a constant-heavy feature', () => {
    // The 20%..80% quantiles are all 0: one edge, and the two bins either side of it.
    const sorted = [0, 0, 0, 0, 0, 0, 0, 0, 1, 2];
    expect(quantileEdges(sorted, 5)).toEqual([0]);
    expect(binCounts(sorted, [0])).toEqual([8, 2]);
  });

  it('thins a sorted sample keeping both ends', () => {
    const sample = thinSorted(Array.from({ length: 101 }, (_, i) => i), 11);
    expect(sample).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
  });
});

describe('a feature against its reference', () => {
  const base = Array.from({ length: 2000 }, (_, i) => Math.sin(i * 12.9898) * 0.8);

  it('scores the same distribution near 0 and a shifted one high', () => {
    const reference = featureReference(base);
    expect(reference.proportions.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    const same = compareFeature(reference, base);
    expect(same).toMatchObject({ psi: 0, count: 2000 });
    // The reference keeps 1,000 of the 2,000 values for KS: a thinned sample is off by at most a step.
    expect(same.ks).toBeLessThan(0.01);
    const shifted = compareFeature(reference, base.map((v) => v + 0.5));
    expect(shifted.psi).toBeGreaterThan(0.25);
    expect(shifted.ks).toBeGreaterThan(0.2);
  });
});

describe('ReferenceBuilder', () => {
  it('takes the columns of [B, F] tensors up to the bound, and round-trips through JSON', () => {
    const builder = new ReferenceBuilder(2);
    builder.add('input', 'x', [2, 3], [1, 10, 100, 2, 20, 200], true);
    builder.add('input', 'x', [1, 3], [3, 30, 300], true);
    builder.add('output', 'y', [3], [0.1, 0.2, 0.3]);
    builder.add('input', 'ignored', [1, 1, 1], [5]);
    const reference = builder.build('test');
    expect(reference.rows).toBe(3);
    expect(reference.tensors.map((t) => [t.kind, t.name, t.features.length])).toEqual([
      ['input', 'x', 2],
      ['output', 'y', 1],
    ]);
    expect(reference.tensors[0]!.features[1]!.sample).toEqual([10, 20, 30]);
    expect(parseReference(JSON.stringify(reference), 'r.json')).toEqual(reference);
    expect(() => parseReference('{"format":"x"}', 'r.json')).toThrow(/r\.json: expected "format"/);
  });
});

describe('drift settings', () => {
  const p = (entries: Record<string, string>) =>
    Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, { stringValue: v }]));

  it('is off unless turned on, with defaults and overrides', () => {
    const problems: string[] = [];
    expect(parseDriftSettings(p({}), (x) => problems.push(x))).toBeUndefined();
    expect(parseDriftSettings(p({ hotpath_drift: 'on' }), (x) => problems.push(x))).toEqual(DRIFT_DEFAULTS);
    expect(
      parseDriftSettings(p({ hotpath_drift: 'on', hotpath_drift_window: '500', hotpath_drift_act: '0.3', hotpath_drift_action: 'degrade' }), (x) =>
        problems.push(x),
      ),
    ).toMatchObject({ windowRows: 500, act: 0.3, action: 'degrade' });
    expect(problems).toEqual([]);
  });

  it('reports a bad value and keeps its default', () => {
    const problems: string[] = [];
    const settings = parseDriftSettings(p({ hotpath_drift: 'on', hotpath_drift_sample_rate: '2', hotpath_drift_action: 'page' }), (x) => problems.push(x));
    expect(settings?.sampleRate).toBe(1);
    expect(settings?.action).toBe('alert');
    expect(problems).toEqual([
      expect.stringMatching(/'hotpath_drift_sample_rate': expected a number in 0\.\.1, got '2'/),
      expect.stringMatching(/'hotpath_drift_action': expected 'alert' or 'degrade', got 'page'/),
    ]);
  });
});
