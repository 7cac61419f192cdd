/**
 * One model version's per-request histograms with their labels bound: what
 * the request path observes into, on the main thread (ServerMetrics.forVersion)
 * and on a front-door thread (attachVersionMetrics, on the series the main
 * thread shared with ServerMetrics.shareVersion). The main thread's scrape
 * reads both (bound-histogram.ts, Threads).
 *
 * This file and bound-histogram.ts load no prom-client (type imports only),
 * so a front-door thread that attaches pays for no Registry.
 */
import type { WorkerTiming } from './execution-stats.js';
import { HistogramShard, type SharedHistogramSeries } from './bound-histogram.js';

/** One version's per-request histograms, labels bound (ServerMetrics.forVersion, attachVersionMetrics). */
export interface VersionMetrics {
  /** A request answered successfully: its total latency and the execution's timing. */
  observeSuccess(totalMs: number, timing: WorkerTiming): void;
  /** One execution of `rows` rows. */
  observeExecution(rows: number): void;
}

/** A version's four series, shared (plain data: structured-clonable, the buffers shared). */
export interface SharedVersionMetrics {
  readonly requestDuration: SharedHistogramSeries;
  readonly queueDuration: SharedHistogramSeries;
  readonly computeInferDuration: SharedHistogramSeries;
  readonly batchSize: SharedHistogramSeries;
}

interface Observer {
  observe(value: number): void;
}

/** What each observation writes where: the one mapping from a request's figures to the four series. */
export function versionMetricsOver(series: {
  readonly requestDuration: Observer;
  readonly queueDuration: Observer;
  readonly computeInferDuration: Observer;
  readonly batchSize: Observer;
}): VersionMetrics {
  const { requestDuration, queueDuration, computeInferDuration, batchSize } = series;
  return {
    observeSuccess(totalMs, timing) {
      requestDuration.observe(totalMs);
      queueDuration.observe(timing.queueNs / 1e6);
      computeInferDuration.observe(timing.computeInferNs / 1e6);
    },
    observeExecution(rows) {
      batchSize.observe(rows);
    },
  };
}

/**
 * A front-door thread's VersionMetrics: writes `shard` (1..shards-1) of the
 * series `shared` names; the main thread's scrape shows them. One per thread
 * and version; the thread must be the shard's only writer.
 */
export function attachVersionMetrics(shared: SharedVersionMetrics, shard: number): VersionMetrics {
  return versionMetricsOver({
    requestDuration: new HistogramShard(shared.requestDuration, shard),
    queueDuration: new HistogramShard(shared.queueDuration, shard),
    computeInferDuration: new HistogramShard(shared.computeInferDuration, shard),
    batchSize: new HistogramShard(shared.batchSize, shard),
  });
}
