// Latency summaries for the serve benchmark. Percentiles use the nearest-rank
// method (the smallest sample with at least p of the samples at or below it),
// as HdrHistogram and wrk report them, so p99.9 of 1000 samples is the worst.

export interface LatencySummary {
  readonly count: number;
  readonly mean_ms: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  readonly p999_ms: number;
  readonly max_ms: number;
}

/** Nearest-rank percentile of an ascending array; `p` in [0, 1]. NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`percentile: p must be in [0, 1], got ${p}`);
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(p * n));
  return sorted[rank - 1] as number;
}

/** Sorts a copy of `samples` (ms) and summarises it; values are rounded to 1 µs. */
export function summarize(samples: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const value of sorted) sum += value;
  const n = sorted.length;
  return {
    count: n,
    mean_ms: roundMs(n === 0 ? Number.NaN : sum / n),
    p50_ms: roundMs(percentile(sorted, 0.5)),
    p90_ms: roundMs(percentile(sorted, 0.9)),
    p99_ms: roundMs(percentile(sorted, 0.99)),
    p999_ms: roundMs(percentile(sorted, 0.999)),
    max_ms: roundMs(n === 0 ? Number.NaN : (sorted[n - 1] as number)),
  };
}

/** Milliseconds rounded to the microsecond (JSON stays short; clocks are no finer). */
export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
