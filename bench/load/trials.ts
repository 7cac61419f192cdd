// One measured point of the serve benchmark: fresh node:http2 load-generator
// processes (h2-loader-process.ts) against a running server (hotpath or echo),
// or one fresh process running onnxruntime directly (the raw contender).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';

import { summarize, type LatencySummary } from '../report/latency.js';
import type { ServePoint } from '../report/serve-result.js';
import { Child } from './child-process.js';
import { modelStatistics, statisticsDelta, type StatisticsSnapshot } from './infer-client.js';
import type { LoadShape, LoaderConfig, LoaderResult, RawOrtConfig, RawOrtPoint } from './messages.js';
import { splitEvenly } from './poisson.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const LOADER = path.join(here, 'h2-loader-process.js');
const RAW_ORT = path.join(here, 'raw-ort-process.js');

export interface PointSettings {
  readonly warmupMs: number;
  readonly durationMs: number;
  /** Load-generator processes per point (fewer when concurrency is lower). */
  readonly loaders: number;
  /** HTTP/2 connections per load generator (fewer when its concurrency is lower). */
  readonly connections: number;
  readonly maxRequestsPerLoader: number;
  /** Requests still open this long after a point's end count as errors. */
  readonly stallMs: number;
  /** The load generator's HTTP/2 client (see h2-loader-process.ts). */
  readonly client: 'raw' | 'node-http2';
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

export interface LoadTarget {
  readonly address: string;
  readonly path: string;
  /** The length-prefixed gRPC request body, sent as is by every stream. */
  readonly body: Uint8Array;
  /** hotpath: ModelStatistics over the point (the server's view); echo has none. */
  readonly statistics?: { readonly client: grpc.Client; readonly model: string };
}

export interface MeasuredPoint {
  readonly point: ServePoint;
  /** The gRPC message of one warm-up answer (checked by the suite; the echo contender's canned answer). */
  readonly sampleResponse: Uint8Array;
}

/** A closed-loop point at `concurrency` streams; `rows` per request. */
export async function closedPoint(target: LoadTarget, concurrency: number, rows: number, settings: PointSettings): Promise<MeasuredPoint> {
  const shares = splitLoad({ kind: 'closed', concurrency }, settings.loaders);
  const children = shares.map((share, i) => {
    const child = new Child(LOADER, `load generator ${i}`);
    const streams = share.kind === 'closed' ? share.concurrency : 1;
    const config: LoaderConfig = {
      address: target.address, path: target.path, body: target.body, client: settings.client, concurrency: streams,
      connections: Math.min(settings.connections, streams), warmupMs: settings.warmupMs,
      durationMs: settings.durationMs, maxRequests: settings.maxRequestsPerLoader, stallMs: settings.stallMs,
    };
    child.send({ type: 'start', config });
    return child;
  });
  try {
    const ready = await Promise.all(children.map((c) => c.next('ready', settings.warmupMs + 60_000)));
    const sampleResponse = (ready[0] as { info: Uint8Array }).info;
    const stats = target.statistics;
    const before: StatisticsSnapshot | undefined = stats && (await modelStatistics(stats.client, stats.model));
    for (const child of children) child.send({ type: 'go' });
    const budget = settings.durationMs + settings.stallMs + 30_000;
    const results = (await Promise.all(children.map((c) => c.next('done', budget)))).map(
      (m) => (m as { result: LoaderResult }).result,
    );
    const server = stats && before && statisticsDelta(before, await modelStatistics(stats.client, stats.model));
    const latencies = results.flatMap((r) => [...r.latenciesMs]);
    const elapsedS = Math.max(...results.map((r) => r.elapsedMs)) / 1000;
    const summary = summarize(latencies);
    const throughput = elapsedS > 0 ? latencies.length / elapsedS : 0;
    const finite = (x: number | undefined) => (x !== undefined && Number.isFinite(x) ? x : null);
    const point: ServePoint = {
      concurrency,
      throughput_rps: Math.round(throughput * 10) / 10,
      rows_per_s: Math.round(throughput * rows * 10) / 10,
      ...latencyFields(summary),
      mean_batch: finite(server?.mean_batch),
      ...(server ? {
        queue_share: finite(server.queue_share),
        server_request_ms: finite(server.server_request_ms),
        compute_infer_ms: finite(server.compute_infer_ms_per_execution),
        server_requests: server.requests,
      } : {}),
      requests: latencies.length,
      errors: results.reduce((n, r) => n + r.errors, 0),
      ...(results.some((r) => r.errorSamples.length > 0) ? { error_samples: [...new Set(results.flatMap((r) => r.errorSamples))].slice(0, 5) } : {}),
    };
    return { point, sampleResponse };
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
