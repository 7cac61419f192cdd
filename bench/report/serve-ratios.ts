// The serve suite's three headline numbers, each against a baseline measured
// in the same run (pure: computed from the contenders' points).
import type { ServeContender, ServeRatios } from './serve-result.js';

const round = (x: number, digits: number) => Number(x.toFixed(digits));

function at(contender: ServeContender | undefined, concurrency: number) {
  return contender?.points.find((p) => p.concurrency === concurrency);
}

function bestRows(contender: ServeContender | undefined): number | null {
  const rows = contender?.points.map((p) => p.rows_per_s).filter((r) => Number.isFinite(r) && r > 0) ?? [];
  return rows.length === 0 ? null : Math.max(...rows);
}

/**
 * - batched_vs_unbatched_c64: requests/s of `batched` over `unbatched`, both at concurrency 64;
 * - batched_vs_raw_best: the best rows/s of `batched` (any load) over the best rows/s of `raw` (any batch size);
 * - p50_overhead_ms_c1: `batched` p50 at concurrency 1 minus `raw` p50 at batch 1.
 * A ratio whose inputs are missing is null.
 */
export function computeRatios(
  batched: ServeContender | undefined,
  unbatched: ServeContender | undefined,
  raw: ServeContender | undefined,
): ServeRatios {
  const b64 = at(batched, 64);
  const u64 = at(unbatched, 64);
  const bestBatched = bestRows(batched);
  const bestRaw = bestRows(raw);
  const b1 = at(batched, 1);
  const raw1 = raw?.points.find((p) => p.batch === 1);
  return {
    batched_vs_unbatched_c64: b64 && u64 && u64.throughput_rps > 0 ? round(b64.throughput_rps / u64.throughput_rps, 3) : null,
    batched_vs_raw_best: bestBatched !== null && bestRaw !== null ? round(bestBatched / bestRaw, 3) : null,
    p50_overhead_ms_c1: b1 && raw1 ? round(b1.p50_ms - raw1.p50_ms, 3) : null,
  };
}
