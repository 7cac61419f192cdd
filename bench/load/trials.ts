// One measured point of the serve benchmark: a set of fresh load-generator
// processes against a running server (hotpath contenders), or one fresh
// process running onnxruntime directly (the raw contender).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';

import { summarize, type LatencySummary } from '../report/latency.js';
import type { ServePoint } from '../report/serve-result.js';
import { Child } from './child-process.js';
import { modelStatistics, statisticsDelta, type InferShape } from './infer-client.js';
import type { LoadShape, LoaderConfig, LoaderResult, RawOrtConfig, RawOrtPoint } from './messages.js';
import { splitEvenly } from './poisson.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const LOADER = path.join(here, 'loader-process.js');
const RAW_ORT = path.join(here, 'raw-ort-process.js');

export interface PointSettings {
  readonly warmupMs: number;
  readonly durationMs: number;
  /** Load-generator processes per point (fewer when concurrency is lower). */
  readonly loaders: number;
  readonly maxRequestsPerLoader: number;
  readonly maxInFlight: number;
  readonly deadlineMs: number;
}

/** Splits a load across `loaders` processes: concurrency evenly, a Poisson rate evenly (the sum is Poisson). */
export function splitLoad(load: LoadShape, loaders: number): LoadShape[] {
  if (load.kind === 'closed') {
    return splitEvenly(load.concurrency, Math.min(loaders, load.concurrency))
      .map((concurrency) => ({ kind: 'closed', concurrency }));
  }
  return Array.from({ length: loaders }, (_, i) => ({
    kind: 'open', ratePerSecond: load.ratePerSecond / loaders, seed: load.seed * 1000 + i,
  }));
}

export async function hotpathPoint(
  address: string,
  stats: grpc.Client,
  infer: InferShape,
  load: LoadShape,
  settings: PointSettings,
): Promise<ServePoint> {
  const shares = splitLoad(load, settings.loaders);
  const children = shares.map((share, i) => {
    const child = new Child(LOADER, `load generator ${i}`);
    const config: LoaderConfig = {
      address, infer, load: share, warmupMs: settings.warmupMs, durationMs: settings.durationMs,
      maxRequests: settings.maxRequestsPerLoader, maxInFlight: settings.maxInFlight,
      deadlineMs: settings.deadlineMs, seed: 17 + i,
    };
    child.send({ type: 'start', config });
    return child;
  });
  try {
    await Promise.all(children.map((c) => c.next('ready', settings.warmupMs + 60_000)));
    const before = await modelStatistics(stats, infer.model);
    for (const child of children) child.send({ type: 'go' });
    const budget = settings.durationMs + settings.deadlineMs + 30_000;
    const results = (await Promise.all(children.map((c) => c.next('done', budget)))).map(
      (m) => (m as { result: LoaderResult }).result,
    );
    const after = await modelStatistics(stats, infer.model);
    const server = statisticsDelta(before, after);
    const latencies = results.flatMap((r) => [...r.latenciesMs]);
    const elapsedS = Math.max(...results.map((r) => r.elapsedMs)) / 1000;
    const summary = summarize(latencies);
    const throughput = elapsedS > 0 ? latencies.length / elapsedS : 0;
    const lags = results.map((r) => r.sendLagP99Ms).filter((x): x is number => x !== null);
    return {
      ...(load.kind === 'closed' ? { concurrency: load.concurrency } : { rate: load.ratePerSecond }),
      throughput_rps: Math.round(throughput * 10) / 10,
      rows_per_s: Math.round(throughput * infer.rows * 10) / 10,
      ...latencyFields(summary),
      mean_batch: Number.isFinite(server.mean_batch) ? server.mean_batch : null,
      queue_share: Number.isFinite(server.queue_share) ? server.queue_share : null,
      server_request_ms: Number.isFinite(server.server_request_ms) ? server.server_request_ms : null,
      compute_infer_ms: Number.isFinite(server.compute_infer_ms_per_execution) ? server.compute_infer_ms_per_execution : null,
      requests: latencies.length,
      server_requests: server.requests,
      errors: results.reduce((n, r) => n + r.errors, 0),
      ...(results.some((r) => r.errorSamples.length > 0) ? { error_samples: [...new Set(results.flatMap((r) => r.errorSamples))].slice(0, 5) } : {}),
      ...(load.kind === 'open' ? { dropped: results.reduce((n, r) => n + r.dropped, 0), send_lag_p99_ms: lags.length ? Math.max(...lags) : null } : {}),
    };
  } finally {
    for (const child of children) child.kill();
  }
}

/** The latency fields of a point, in the JSON's order (the summary without its count). */
function latencyFields(summary: LatencySummary) {
  const { p50_ms, p90_ms, p99_ms, p999_ms, mean_ms, max_ms } = summary;
  return { p50_ms, p90_ms, p99_ms, p999_ms, mean_ms, max_ms };
}

export async function rawOrtPoints(config: RawOrtConfig): Promise<ServePoint[]> {
  const child = new Child(RAW_ORT, 'raw onnxruntime');
  try {
    child.send({ type: 'start', config });
    const budget = config.batchSizes.length * (config.durationMs + 30_000) + 30_000;
    const points = ((await child.next('done', budget)) as { result: RawOrtPoint[] }).result;
    return points.map((point) => {
      const summary = summarize(point.latenciesMs);
      const runsPerSecond = point.latenciesMs.length / (point.elapsedMs / 1000);
      return {
        batch: point.batch,
        throughput_rps: Math.round(runsPerSecond * 10) / 10,
        rows_per_s: Math.round(runsPerSecond * point.batch * 10) / 10,
        ...latencyFields(summary),
        mean_batch: point.batch,
        requests: point.latenciesMs.length,
        errors: 0,
      };
    });
  } finally {
    child.kill();
  }
}
