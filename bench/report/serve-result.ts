// The serve suite's JSON (bench/results/serve-*.json), shared by the suite and
// its markdown and SVG renderers. The fields the issue fixes are suite, model,
// contenders[].name, points[].{concurrency|rate, throughput_rps, p50_ms,
// p90_ms, p99_ms, mean_batch} and ratios; the rest is detail.

export interface ServePoint {
  /** Closed loop: virtual clients in flight. */
  readonly concurrency?: number;
  /** Open loop: offered Poisson rate, requests/s. */
  readonly rate?: number;
  /** Raw onnxruntime: rows per session.run. */
  readonly batch?: number;
  /** Requests (hotpath) or session.run calls (raw) answered per second. */
  readonly throughput_rps: number;
  readonly rows_per_s: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  readonly p999_ms: number;
  readonly mean_ms: number;
  readonly max_ms: number;
  /** Rows per model execution: ModelStatistics inference_count / execution_count deltas (raw: the batch). */
  readonly mean_batch: number | null;
  /** ModelStatistics queue ns / success ns over the point (hotpath only). */
  readonly queue_share?: number | null;
  /** Mean receipt-to-response ms per request from ModelStatistics success (hotpath only); the rest of the client's latency is network and client. */
  readonly server_request_ms?: number | null;
  /** Mean session.run time per execution from ModelStatistics compute_infer (hotpath only). */
  readonly compute_infer_ms?: number | null;
  /** Successful requests (hotpath) or runs (raw) measured by the client. */
  readonly requests: number;
  /** Successful requests ModelStatistics counted over the point; differs from `requests` only if a request outlived its client deadline. */
  readonly server_requests?: number;
  readonly errors: number;
  readonly error_samples?: readonly string[];
  /** Open loop: scheduled requests not sent because max in-flight was reached. */
  readonly dropped?: number;
  /** Open loop: p99 of how late sends left against their schedule. */
  readonly send_lag_p99_ms?: number | null;
}

export interface ServeContender {
  readonly name: string;
  readonly kind: 'hotpath' | 'raw';
  readonly description: string;
  readonly points: readonly ServePoint[];
}

export type RatioName = 'batched_vs_unbatched_c64' | 'batched_vs_raw_best' | 'p50_overhead_ms_c1';

export const TARGETS: Readonly<Record<RatioName, { readonly op: '>=' | '<='; readonly value: number; readonly meaning: string }>> = {
  batched_vs_unbatched_c64: { op: '>=', value: 3, meaning: 'batched / unbatched requests/s at concurrency 64' },
  batched_vs_raw_best: { op: '>=', value: 0.7, meaning: "batched peak rows/s / raw onnxruntime's best rows/s" },
  p50_overhead_ms_c1: { op: '<=', value: 0.5, meaning: 'batched p50 at concurrency 1 - raw batch-1 p50 (ms)' },
};

export type ServeRatios = Readonly<Record<RatioName, number | null>>;

export interface ServeResult {
  readonly suite: 'serve';
  readonly model: string;
  readonly contenders: readonly ServeContender[];
  readonly ratios: ServeRatios;
  readonly targets: typeof TARGETS;
  readonly settings: Readonly<Record<string, unknown>>;
}

export function meetsTarget(name: RatioName, value: number | null): boolean | null {
  if (value === null || !Number.isFinite(value)) return null;
  const target = TARGETS[name];
  return target.op === '>=' ? value >= target.value : value <= target.value;
}

/** "c=8", "λ=500/s" or "batch 32". */
export function loadLabel(point: ServePoint): string {
  if (point.concurrency !== undefined) return `c=${point.concurrency}`;
  if (point.rate !== undefined) return `λ=${point.rate}/s`;
  return `batch ${point.batch ?? '?'}`;
}
