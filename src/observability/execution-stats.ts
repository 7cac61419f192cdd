/**
 * The plain records statistics and metrics are made of: the durations a
 * worker or executor measures per execution, and the cumulative values a
 * version's statistics (repository/inference-statistics.ts) give the metrics
 * endpoint at scrape time. Types only, so the layers that produce them (the
 * workers, the batcher, the repository) and the one that exports them meet
 * here, below all of them.
 */
import type { FailureReason } from './metric-names.js';

/** Durations in ns measured inside the worker (or executor), for Triton-style statistics. */
export interface WorkerTiming {
  readonly queueNs: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
}

/** Cumulative values as the metrics endpoint reads them at scrape time. */
export interface StatisticsSnapshot {
  readonly successCount: number;
  readonly failureCounts: Readonly<Record<FailureReason, number>>;
  readonly inferenceCount: number;
  readonly executionCount: number;
  /**
   * Receipt to response, successful requests only (Triton's
   * nv_inference_request_duration_us); failed ones keep their own duration
   * (ModelStatistics `fail`), so a burst of fast refusals cannot pull the
   * mean latency down.
   */
  readonly requestNs: number;
  readonly queueNs: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
  /** Response cache (Triton's cache_hit / cache_miss): count and cumulative ns. */
  readonly cacheHitCount: number;
  readonly cacheHitNs: number;
  readonly cacheMissCount: number;
  readonly cacheMissNs: number;
}
