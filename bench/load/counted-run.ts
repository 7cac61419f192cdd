// Whether every request of an h2load run against hotpath was a success the
// server counted. h2load sees only HTTP statuses, and a gRPC failure is an
// HTTP 200 with a non-zero grpc-status in its trailers, so its "succeeded"
// proves nothing about the answer: the model's ModelStatistics success count,
// read before and after the run, does. Shared by the targets suite and the
// serve suite's threads sweep.
import type { StatisticsSnapshot } from './infer-client.js';

export interface CountedRun {
  /** ModelStatistics success delta over the run (h2load's warm-up included). */
  readonly server_successes: number;
  /**
   * h2load's requests that the server did not count as successes: h2load
   * leaves its warm-up out of `total` and the server counts those too, so
   * when every request succeeds successes >= total and this is 0.
   */
  readonly uncounted: number;
  /** Rows per execution over the run (ModelStatistics); null when nothing executed. */
  readonly mean_batch: number | null;
}

/** The server's side of one h2load run of `h2loadTotal` measured requests, from two snapshots of the model's statistics. */
export function countedRun(before: StatisticsSnapshot, after: StatisticsSnapshot, h2loadTotal: number): CountedRun {
  const successes = after.successCount - before.successCount;
  const executions = after.executionCount - before.executionCount;
  return {
    server_successes: successes,
    uncounted: Math.max(0, h2loadTotal - successes),
    mean_batch: executions > 0 ? Math.round(((after.inferenceCount - before.inferenceCount) / executions) * 100) / 100 : null,
  };
}
