/**
 * The drift statistics, pure: quantile bin edges and proportions of a
 * reference sample, the population stability index (PSI) of a current sample
 * against them, and the two-sample Kolmogorov-Smirnov statistic (the largest
 * gap between two empirical distribution functions).
 *
 * Bins: `edges` e0 < e1 < ... < e(k-1) make k+1 bins, (-inf, e0],
 * (e0, e1], ..., (e(k-1), +inf): a current value outside the reference's range
 * still lands in a bin, so a shift shows as mass moving to the outer bins.
 */

/** A proportion of 0 would make PSI infinite: empty bins count as this much. */
export const PSI_FLOOR = 1e-4;
/** Bins per feature in a built reference (deciles). */
export const DEFAULT_BINS = 10;
/** The most values a reference keeps per feature for KS. */
export const DEFAULT_KS_SAMPLE = 1000;

/** Interior edges at the 1/bins .. (bins-1)/bins quantiles of `sorted`, duplicates dropped. */
export function quantileEdges(sorted: ArrayLike<number>, bins = DEFAULT_BINS): number[] {
  const edges: number[] = [];
  if (sorted.length === 0) return edges;
  for (let b = 1; b < bins; b += 1) {
    // The largest value of the first b/bins of the sample: bins are right-closed, so each holds its share.
    const edge = sorted[Math.max(0, Math.ceil((b * sorted.length) / bins) - 1)]!;
    if (edges.length === 0 || edge > edges[edges.length - 1]!) edges.push(edge);
  }
  return edges;
}

/** The bin of `value` (0..edges.length): the first edge it does not exceed. */
export function binOf(value: number, edges: readonly number[]): number {
  let lo = 0;
  let hi = edges.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (value <= edges[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Counts of `values` per bin (edges.length + 1 bins); NaN values are skipped. */
export function binCounts(values: ArrayLike<number>, edges: readonly number[]): number[] {
  const counts = new Array<number>(edges.length + 1).fill(0);
  for (let i = 0; i < values.length; i += 1) {
    const value = values[i]!;
    if (!Number.isNaN(value)) counts[binOf(value, edges)]! += 1;
  }
  return counts;
}

export function proportions(counts: readonly number[]): number[] {
  const total = counts.reduce((sum, count) => sum + count, 0);
  return counts.map((count) => (total === 0 ? 0 : count / total));
}

/**
 * PSI = sum over bins of (a - e) * ln(a / e), with `expected` and `actual`
 * proportions (each floored at PSI_FLOOR). 0 for identical distributions;
 * 0.1 and 0.25 are the usual "watch" and "act" thresholds.
 */
export function psi(expected: readonly number[], actual: readonly number[]): number {
  if (expected.length !== actual.length) throw new RangeError(`psi: ${expected.length} expected bins, ${actual.length} actual`);
  let sum = 0;
  for (let i = 0; i < expected.length; i += 1) {
    const e = Math.max(expected[i]!, PSI_FLOOR);
    const a = Math.max(actual[i]!, PSI_FLOOR);
    sum += (a - e) * Math.log(a / e);
  }
  return sum;
}

/** The two-sample KS statistic sup |F_a(x) - F_b(x)| of two ascending samples; 0 when either is empty. */
export function ksStatistic(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length === 0 || b.length === 0) return 0;
  let i = 0;
  let j = 0;
  let d = 0;
  while (i < a.length && j < b.length) {
    // Step past every value equal to the smaller one in both samples, then compare.
    const x = Math.min(a[i]!, b[j]!);
    while (i < a.length && a[i]! <= x) i += 1;
    while (j < b.length && b[j]! <= x) j += 1;
    d = Math.max(d, Math.abs(i / a.length - j / b.length));
  }
  return d;
}

/** At most `max` values of ascending `sorted`, evenly spaced order statistics (the ends kept). */
export function thinSorted(sorted: ArrayLike<number>, max = DEFAULT_KS_SAMPLE): number[] {
  if (sorted.length <= max) return Array.from(sorted);
  const out: number[] = [];
  for (let k = 0; k < max; k += 1) out.push(sorted[Math.round((k * (sorted.length - 1)) / (max - 1))]!);
  return out;
}

/** Ascending finite values of `values` (NaN and infinities dropped), as a new array. */
export function sortedFinite(values: ArrayLike<number>): Float64Array {
  const out = Float64Array.from(Array.prototype.filter.call(values, Number.isFinite) as number[]);
  return out.sort();
}

/** A feature's reference: bin edges and proportions for PSI, a sorted sample for KS. */
export interface FeatureReference {
  readonly edges: number[];
  readonly proportions: number[];
  readonly sample: number[];
  readonly count: number;
}

export function featureReference(values: ArrayLike<number>, bins = DEFAULT_BINS, ksSample = DEFAULT_KS_SAMPLE): FeatureReference {
  const sorted = sortedFinite(values);
  const edges = quantileEdges(sorted, bins);
  return { edges, proportions: proportions(binCounts(sorted, edges)), sample: thinSorted(sorted, ksSample), count: sorted.length };
}

/** PSI and KS of current values against a feature's reference. */
export function compareFeature(reference: FeatureReference, values: ArrayLike<number>): { psi: number; ks: number; count: number } {
  const sorted = sortedFinite(values);
  if (sorted.length === 0) return { psi: 0, ks: 0, count: 0 };
  return {
    psi: psi(reference.proportions, proportions(binCounts(sorted, reference.edges))),
    ks: ksStatistic(reference.sample, sorted),
    count: sorted.length,
  };
}
