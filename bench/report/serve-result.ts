// The serve suite's JSON (bench/results/serve-*.json), shared by the suite and
// its markdown and SVG renderers. Issue 10 fixes the figures (each against the
// echo and raw onnxruntime contenders of the same run) and their targets;
// points carry the median and p99 of every load; the rest is detail.

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
  /** hotpath: the server; echo: grpc-js answering a canned response; raw: onnxruntime-node directly. */
  readonly kind: 'hotpath' | 'echo' | 'raw';
  /** The model whose request body (and answer) it serves or runs. */
  readonly model: string;
  readonly description: string;
  readonly points: readonly ServePoint[];
}

export type FigureName = 'batched_vs_echo_c64' | 'batched_vs_limit_c64' | 'overhead_us_c1' | 'batched_overhead_us_c1';

/** Issue 10's targets (2 cores, one run). */
export const TARGETS: Readonly<Record<FigureName, { readonly op: '>=' | '<='; readonly value: number; readonly meaning: string }>> = {
  batched_vs_echo_c64: { op: '>=', value: 0.6, meaning: 'ctr_mlp (batched) req/s at 64 streams / echo req/s at 64 (ctr_mlp body)' },
  batched_vs_limit_c64: { op: '>=', value: 0.8, meaning: 'ranker_mlp (batched) req/s at 64 streams / limit, limit = 1 / (1/echo + 1/raw_best rows/s)' },
  overhead_us_c1: { op: '<=', value: 50, meaning: 'ctr_mlp_nb mean round trip at 1 stream - echo\'s - raw onnxruntime batch-1 run (µs)' },
  batched_overhead_us_c1: { op: '<=', value: 80, meaning: 'the same for ctr_mlp (batched), also minus its max_queue_delay (µs)' },
};

export type ServeFigures = Readonly<Record<FigureName, number | null>>;

/** Each figure with its target and verdict, as the JSON carries it. */
export type ServeFigureReport = Readonly<Record<FigureName, { readonly value: number | null; readonly target: string; readonly met: boolean | null }>>;

/** The measured terms the figures are computed from (null when a contender or point is missing). */
export interface ServeTerms {
  readonly echo_ctr_c64_rps: number | null;
  readonly ctr_c64_rps: number | null;
  readonly echo_ranker_c64_rps: number | null;
  readonly ranker_c64_rps: number | null;
  readonly raw_best_rows_per_s: number | null;
  readonly raw_best_batch: number | null;
  readonly limit_rps: number | null;
  readonly echo_ctr_c1_mean_us: number | null;
  readonly ctr_nb_c1_mean_us: number | null;
  readonly ctr_c1_mean_us: number | null;
  readonly raw_ctr_b1_mean_us: number | null;
  readonly ctr_max_queue_delay_us: number | null;
}

/** h2load against the batched server, next to the suite's own generator at the same load. */
export type H2loadAgreement =
  | 'not installed'
  | {
    readonly version: string;
    readonly command: string;
    readonly model: string;
    readonly streams: number;
    readonly h2load_rps: number;
    readonly h2load_mean_ms: number | null;
    readonly h2load_failed: number;
    /** Successful requests the server counted over h2load's run (h2load sees only HTTP statuses). */
    readonly server_successes: number | null;
    /** The suite's generator at the same load: the mean of the sweep's point and a run right after h2load. */
    readonly own_rps: number | null;
    readonly own_runs_rps: readonly (number | null)[];
    readonly own_errors: number;
    /** |own - h2load| / h2load; target <= 0.15. */
    readonly difference: number | null;
    readonly target: string;
    readonly met: boolean | null;
  }
  | { readonly error: string };

export interface ServeResult {
  readonly suite: 'serve';
  readonly models: readonly string[];
  readonly contenders: readonly ServeContender[];
  readonly figures: ServeFigureReport;
  readonly terms: ServeTerms;
  readonly h2load: H2loadAgreement;
  readonly settings: Readonly<Record<string, unknown>>;
}

export const H2LOAD_TARGET = 0.15;

export function meetsTarget(name: FigureName, value: number | null): boolean | null {
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
