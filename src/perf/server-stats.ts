/**
 * The server's side of a measurement window, from ModelStatistics (Triton's
 * counters, which hotpath and Triton both keep): snapshots before and after
 * a window, and their difference as perf_analyzer reports it, the average
 * per successful request of queue, compute input, compute infer and compute
 * output time. Sums over the versions the statistics list (one, when a
 * version is given), from the gRPC message or the HTTP route's JSON
 * (`{model_stats: [...]}`, Triton's field names). Pure.
 */
import type { ModelStatistics, StatisticDuration } from '../generated/grpc_service_pb.js';

export interface StatsSnapshot {
  readonly success: bigint;
  readonly fail: bigint;
  readonly queueNs: bigint;
  readonly computeInputNs: bigint;
  readonly computeInferNs: bigint;
  readonly computeOutputNs: bigint;
}

export interface ServerSplit {
  /** Successful requests the server counted in the window. */
  readonly successCount: number;
  /** Failed requests the server counted in the window. */
  readonly failCount: number;
  /** Averages per successful request, µs. */
  readonly queueUs: number;
  readonly computeInputUs: number;
  readonly computeInferUs: number;
  readonly computeOutputUs: number;
}

export function sumStatistics(stats: readonly ModelStatistics[]): StatsSnapshot {
  let success = 0n, fail = 0n, queueNs = 0n, computeInputNs = 0n, computeInferNs = 0n, computeOutputNs = 0n;
  const ns = (d: StatisticDuration | undefined) => d?.ns ?? 0n;
  for (const version of stats) {
    const s = version.inferenceStats;
    success += s?.success?.count ?? 0n;
    fail += s?.fail?.count ?? 0n;
    queueNs += ns(s?.queue);
    computeInputNs += ns(s?.computeInput);
    computeInferNs += ns(s?.computeInfer);
    computeOutputNs += ns(s?.computeOutput);
  }
  return { success, fail, queueNs, computeInputNs, computeInferNs, computeOutputNs };
}

/**
 * The HTTP statistics route's answer, summed like `sumStatistics`. Counts and
 * nanoseconds may be JSON numbers (Triton) or strings (protobuf's JSON
 * mapping of uint64); both are read exactly.
 */
export function serverStatsFromJson(json: unknown): StatsSnapshot {
  const list = (json as { model_stats?: unknown } | null)?.model_stats;
  if (!Array.isArray(list)) throw new Error(`the statistics answer has no model_stats list: ${JSON.stringify(json).slice(0, 200)}`);
  const big = (value: unknown): bigint => (typeof value === 'number' || typeof value === 'string' ? BigInt(value) : 0n);
  let success = 0n, fail = 0n, queueNs = 0n, computeInputNs = 0n, computeInferNs = 0n, computeOutputNs = 0n;
  for (const version of list as { inference_stats?: Record<string, { count?: unknown; ns?: unknown } | undefined> }[]) {
    const s = version.inference_stats ?? {};
    success += big(s['success']?.count);
    fail += big(s['fail']?.count);
    queueNs += big(s['queue']?.ns);
    computeInputNs += big(s['compute_input']?.ns);
    computeInferNs += big(s['compute_infer']?.ns);
    computeOutputNs += big(s['compute_output']?.ns);
  }
  return { success, fail, queueNs, computeInputNs, computeInferNs, computeOutputNs };
}

export function serverSplit(before: StatsSnapshot, after: StatsSnapshot): ServerSplit {
  const successCount = Number(after.success - before.success);
  const perRequestUs = (a: bigint, b: bigint) => (successCount > 0 ? Number(a - b) / successCount / 1000 : 0);
  return {
    successCount,
    failCount: Number(after.fail - before.fail),
    queueUs: perRequestUs(after.queueNs, before.queueNs),
    computeInputUs: perRequestUs(after.computeInputNs, before.computeInputNs),
    computeInferUs: perRequestUs(after.computeInferNs, before.computeInferNs),
    computeOutputUs: perRequestUs(after.computeOutputNs, before.computeOutputNs),
  };
}
