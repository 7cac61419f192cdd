/**
 * `hotpath perf`'s results: one row per level (concurrency or request rate), summarised from
 * its last measurement windows, and the three ways out: a table, a CSV with
 * perf_analyzer's exact header (values in µs), and JSON. Pure.
 */
import type { WindowRecord } from './load-loop.js';
import type { ServerSplit } from './server-stats.js';

const CSV_COLUMNS =
  'Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,' +
  'Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency';

/** perf_analyzer's CSV header, column for column (its `-f` output in concurrency mode). */
export const CSV_HEADER = `Concurrency,${CSV_COLUMNS}`;

/** The same in request-rate mode: `Request Rate` first. */
export const RATE_CSV_HEADER = `Request Rate,${CSV_COLUMNS}`;

/** One level of load: requests in flight (closed loop) or requests a second (open loop). */
export type Load = { readonly kind: 'concurrency'; readonly value: number } | { readonly kind: 'rate'; readonly value: number };

/** `concurrency 8` or `request rate 500`, for the notes. */
export function loadLabel(load: Load): string {
  return load.kind === 'concurrency' ? `concurrency ${load.value}` : `request rate ${load.value}`;
}

/** The generator's CPU share of its one core above which a level is flagged client-bound. */
export const CLIENT_BOUND_CPU = 0.85;

/** One measurement window with the server's side of it. */
export interface Measurement {
  readonly client: WindowRecord;
  readonly server: ServerSplit;
}

export interface LevelResult {
  readonly load: Load;
  /** Requests in flight (closed loop); null in rate mode. */
  readonly concurrency: number | null;
  /** Requests a second offered (open loop); null in concurrency mode. */
  readonly requestRate: number | null;
  /** Inferences (rows) per second: requests per second × batch size. */
  readonly inferencesPerSecond: number;
  readonly requestsPerSecond: number;
  /** Requests the client saw succeed in the reported windows, and the server's count over the same windows. */
  readonly clientRequests: number;
  readonly serverRequests: number;
  readonly errors: number;
  /** Failed requests the server counted over the same windows (ModelStatistics `fail`). */
  readonly serverErrors: number;
  readonly errorSamples: Readonly<Record<string, number>>;
  /** Latency in µs over the reported windows. */
  readonly avgUs: number;
  readonly p50Us: number;
  readonly p90Us: number;
  readonly p95Us: number;
  readonly p99Us: number;
  readonly queueUs: number;
  readonly computeInputUs: number;
  readonly computeInferUs: number;
  readonly computeOutputUs: number;
  /** Average latency not spent in the server's queue or compute: network, HTTP/2 and gRPC on both sides. */
  readonly networkUs: number;
  /** The generator's CPU over the reported windows, share of one core. */
  readonly clientCpu: number;
  readonly clientBound: boolean;
  /** Whether the reported windows met --stability-percentage. */
  readonly stable: boolean;
  /** Windows measured at this level, all trials. */
  readonly trials: number;
  /** Windows the row summarises (the last ones). */
  readonly windows: number;
}

/** The value at `fraction` (0..1) of sorted values, nearest rank; 0 for none. */
export function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil(fraction * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** The latency the stability check follows: the average, or `--percentile`'s. */
export function windowLatency(window: WindowRecord, percentileValue: number | undefined): number {
  const sorted = Float64Array.from(window.latenciesUs).sort();
  if (percentileValue !== undefined) return percentile(sorted, percentileValue / 100);
  return sorted.length === 0 ? 0 : sorted.reduce((a, b) => a + b, 0) / sorted.length;
}

/**
 * perf_analyzer's rule: the last three windows are stable when, for
 * throughput and for latency each, every window is within ±`percentage`% of
 * their mean. A window with no successful request is never stable.
 */
export function isStable(windows: readonly WindowRecord[], percentage: number, percentileValue: number | undefined): boolean {
  if (windows.length < 3) return false;
  const last = windows.slice(-3);
  if (last.some((w) => w.latenciesUs.length === 0)) return false;
  const within = (values: number[]): boolean => {
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    return values.every((v) => Math.abs(v - mean) <= (mean * percentage) / 100);
  };
  return within(last.map((w) => w.latenciesUs.length / w.elapsedMs)) && within(last.map((w) => windowLatency(w, percentileValue)));
}

/** One row from the windows it reports (perf_analyzer reports the last three, stable or not). */
export function summarise(load: Load, batchSize: number, windows: readonly Measurement[], stable: boolean, trials: number): LevelResult {
  const latencies = Float64Array.from(windows.flatMap((w) => Array.from(w.client.latenciesUs))).sort();
  const elapsedMs = windows.reduce((sum, w) => sum + w.client.elapsedMs, 0);
  const requests = latencies.length;
  const serverRequests = windows.reduce((sum, w) => sum + w.server.successCount, 0);
  // Server averages weighted by each window's requests.
  const weighted = (pick: (s: ServerSplit) => number) =>
    serverRequests === 0 ? 0 : windows.reduce((sum, w) => sum + pick(w.server) * w.server.successCount, 0) / serverRequests;
  const avgUs = requests === 0 ? 0 : latencies.reduce((a, b) => a + b, 0) / requests;
  const queueUs = weighted((s) => s.queueUs);
  const computeInputUs = weighted((s) => s.computeInputUs);
  const computeInferUs = weighted((s) => s.computeInferUs);
  const computeOutputUs = weighted((s) => s.computeOutputUs);
  const errorSamples: Record<string, number> = {};
  for (const w of windows) for (const [text, count] of w.client.errorSamples) errorSamples[text] = (errorSamples[text] ?? 0) + count;
  const cpuMs = windows.reduce((sum, w) => sum + w.client.clientCpu * w.client.elapsedMs, 0);
  const clientCpu = elapsedMs > 0 ? cpuMs / elapsedMs : 0;
  const requestsPerSecond = elapsedMs > 0 ? (requests * 1000) / elapsedMs : 0;
  return {
    load,
    concurrency: load.kind === 'concurrency' ? load.value : null,
    requestRate: load.kind === 'rate' ? load.value : null,
    inferencesPerSecond: requestsPerSecond * batchSize,
    requestsPerSecond,
    clientRequests: requests,
    serverRequests,
    errors: windows.reduce((sum, w) => sum + w.client.errors, 0),
    serverErrors: windows.reduce((sum, w) => sum + w.server.failCount, 0),
    errorSamples,
    avgUs,
    p50Us: percentile(latencies, 0.5),
    p90Us: percentile(latencies, 0.9),
    p95Us: percentile(latencies, 0.95),
    p99Us: percentile(latencies, 0.99),
    queueUs,
    computeInputUs,
    computeInferUs,
    computeOutputUs,
    networkUs: Math.max(0, avgUs - queueUs - computeInputUs - computeInferUs - computeOutputUs),
    clientCpu,
    clientBound: clientCpu >= CLIENT_BOUND_CPU,
    stable,
    trials,
    windows: windows.length,
  };
}

const round = (value: number) => String(Math.round(value));

/**
 * perf_analyzer's CSV: one row per level, µs. The generator sends
 * pre-encoded bytes and does not decode answers, so Client Send and Client
 * Recv are 0; Network+Server Send/Recv is what the average latency leaves
 * after the server's queue and compute.
 */
export function toCsv(levels: readonly LevelResult[]): string {
  const rate = levels[0]?.load.kind === 'rate';
  const rows = levels.map((l) =>
    [
      l.load.value, l.inferencesPerSecond.toFixed(2), 0, round(l.networkUs), round(l.queueUs), round(l.computeInputUs),
      round(l.computeInferUs), round(l.computeOutputUs), 0, round(l.p50Us), round(l.p90Us), round(l.p95Us), round(l.p99Us),
    ].join(','),
  );
  return [rate ? RATE_CSV_HEADER : CSV_HEADER, ...rows].join('\n') + '\n';
}

/** The table printed to stdout, latencies in ms; notes under it for unstable, client-bound or failing levels. */
export function toTable(levels: readonly LevelResult[]): string {
  const header = [levels[0]?.load.kind === 'rate' ? 'request rate' : 'concurrency', 'infer/s', 'avg ms', 'p50 ms', 'p90 ms', 'p95 ms', 'p99 ms', 'queue', 'c.input', 'c.infer', 'c.output', 'network', 'errors', 'client cpu', ''];
  const ms = (us: number) => (us / 1000).toFixed(3);
  const rows = levels.map((l) => [
    String(l.load.value), l.inferencesPerSecond.toFixed(1), ms(l.avgUs), ms(l.p50Us), ms(l.p90Us), ms(l.p95Us), ms(l.p99Us),
    ms(l.queueUs), ms(l.computeInputUs), ms(l.computeInferUs), ms(l.computeOutputUs), ms(l.networkUs),
    String(l.errors), `${Math.round(l.clientCpu * 100)}%`,
    [l.stable ? '' : 'UNSTABLE', l.clientBound ? 'CLIENT-BOUND' : ''].filter(Boolean).join(' '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ').trimEnd();
  const out = [line(header), ...rows.map(line)];
  out.push('(server split: queue, compute input/infer/output, per request in ms, from ModelStatistics; network: the rest of the average)');
  for (const l of levels) {
    const label = loadLabel(l.load);
    if (!l.stable) out.push(`${label}: not stable within --max-trials (${l.trials} windows); the last ${l.windows} are reported`);
    if (l.clientBound) out.push(`${label}: the load generator used ${Math.round(l.clientCpu * 100)}% of its core: the client, not the server, may be the bottleneck`);
    for (const [text, count] of Object.entries(l.errorSamples)) out.push(`${label}: ${count} error(s): ${text}`);
  }
  return out.join('\n') + '\n';
}
