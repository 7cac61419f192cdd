/**
 * `hotpath perf`'s command line: perf_analyzer's flag names and defaults for
 * what this version does, and a clear refusal for what it does not do
 * (a --input-data directory, several data entries). The target flags
 * (-i, -u, the API key and TLS) are shared with `hotpath tune`. Pure.
 */
import { parseArgs } from 'node:util';
import { integerFlag, numberFlag, UsageError } from '../common/flag-values.js';
import type { Protocol } from './control-client.js';
import type { RequestDistribution } from './load-loop.js';
import type { Load } from './perf-report.js';
import { CONNECTION_SECURITY_OPTIONS, checkClientCertPair } from '../client/connection-flags.js';

export const PERF_USAGE = `usage: hotpath perf -m MODEL [-x VERSION] [-u HOST:PORT] [-i grpc|http] [-b BATCH]
                    [--concurrency-range START[:END[:STEP]] | --request-rate-range START[:END[:STEP]]
                     [--request-distribution constant|poisson]] [--connections N] [--load-processes N]
                    [--input-data random|zero|FILE.json] [--shape NAME:DIMS]...
                    [--measurement-interval MS] [--stability-percentage P] [--max-trials N]
                    [--percentile P] [-f FILE.csv] [--json FILE] [--plot FILE.svg|html] [--api-key KEY]
                    [--tls] [--root-cert FILE] [--client-cert FILE --client-key FILE]
                    [--server-name NAME]

Measures a model on any KServe V2 / Triton server (gRPC or HTTP/REST), as perf_analyzer does: for each
level, a closed loop keeps that many requests in flight (or an open loop sends that many
requests a second) and measures windows until three in a row agree, then reports throughput,
latency percentiles and the server's own split of the time (ModelStatistics).

  -m MODEL                    the model
  -x VERSION                  its version (default: the server's choice)
  -u HOST:PORT                the server's address (default localhost:8001 for grpc, localhost:8000 for http)
  -i grpc|http                the protocol (default grpc). http: the V2 REST infer route with the
                              binary tensor extension (JSON header + raw bytes, outputs as binary),
                              HTTP/1.1 keep-alive, one connection per request in flight; metadata,
                              config and statistics over the REST routes too
  -b BATCH                    rows per request (default 1; the model must batch for more)
  --concurrency-range R       START[:END[:STEP]], requests in flight, closed loop (default 1; STEP 1)
  --request-rate-range R      START[:END[:STEP]], requests a second, open loop (STEP default 1);
                              latency counts from each request's scheduled time
  --request-distribution D    constant (default) or poisson arrivals, with --request-rate-range
  --connections N             gRPC: HTTP/2 connections the requests are spread over (default 4;
                              against a server with several front-door threads, give at least 2 per
                              thread). http: connections opened first (the pool grows with concurrency)
  --load-processes N          load-generator processes sharing the connections and the
                              concurrency (default 1: the generator runs in this process)
  --input-data D              the inputs' values: random (default: floats in [0, 1), integers 0 or 1),
                              zero, or a JSON file in perf_analyzer's layout with one entry,
                              {"data":[{"IN":[...] | {"content":[...],"shape":[...]} | {"b64":"..."}}]},
                              one batch element per input (repeated for -b)
  --shape NAME:DIMS           dims of an input with variable dims, without the batch dim (e.g. ids:16)
  --measurement-interval MS   one measurement window (default 5000)
  --stability-percentage P    windows agree when within ±P% of their mean (default 10)
  --max-trials N              windows per level before giving up on stability (default 10)
  --percentile P              follow the P-th percentile latency for stability (default: the average)
  -f FILE                     also write perf_analyzer's CSV (values in µs)
  --json FILE                 also write the results as JSON
  --plot FILE                 also plot p50/p90/p95/p99 latency against throughput (.svg, or .html)
  --api-key KEY               a tenant's API key (or the HOTPATH_API_KEY environment variable)
  --tls                       TLS with the system's roots (implied by the options below)
  --root-cert FILE            PEM roots that sign the server's certificate
  --client-cert FILE          PEM client certificate chain (mutual TLS), with --client-key FILE
  --server-name NAME          the name the server's certificate carries, when not -u's host

The load generator writes pre-encoded HTTP/2 frames on raw sockets, from this process or from
--load-processes child processes, and reports its own CPU (the busiest process's): a level
where it used most of a core is marked CLIENT-BOUND. A level that does not stabilise is
reported and marked UNSTABLE.
Exit status: 0 when every request succeeded; 1 when any failed (they are counted and shown)
or the server cannot be reached; 2 for a usage error.
Not in this version: a --input-data directory, data files with several entries or sequences.
`;

export interface PerfSettings {
  readonly model: string;
  readonly version: string;
  readonly protocol: Protocol;
  readonly url: string;
  readonly batchSize: number;
  /** The levels, in order: all concurrency (closed loop) or all request rates (open loop). */
  readonly loads: readonly Load[];
  readonly distribution: RequestDistribution;
  readonly connections: number;
  readonly loadProcesses: number;
  readonly inputData: InputDataChoice;
  readonly shapes: ReadonlyMap<string, readonly number[]>;
  readonly measurementIntervalMs: number;
  readonly stabilityPercentage: number;
  readonly maxTrials: number;
  readonly percentile: number | undefined;
  readonly csvFile: string | undefined;
  readonly jsonFile: string | undefined;
  readonly plotFile: string | undefined;
  readonly apiKey: string | undefined;
  /** TLS file paths and server name; undefined: plaintext. */
  readonly tls: PerfTls | undefined;
}

/** --input-data: generated values, or a perf_analyzer JSON file (read by the command). */
export type InputDataChoice = 'random' | 'zero' | { readonly file: string };

export interface PerfTls {
  readonly rootCert: string | undefined;
  readonly clientCert: string | undefined;
  readonly clientKey: string | undefined;
  readonly serverName: string | undefined;
}

/** Parses `hotpath perf`'s arguments; throws UsageError (or parseArgs's error) naming the flag. */
export function parsePerfArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): PerfSettings {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      'model-name': { type: 'string', short: 'm' },
      'model-version': { type: 'string', short: 'x' },
      ...TARGET_OPTIONS,
      'batch-size': { type: 'string', short: 'b' },
      'concurrency-range': { type: 'string' },
      'request-rate-range': { type: 'string' },
      'request-distribution': { type: 'string' },
      connections: { type: 'string' },
      'load-processes': { type: 'string' },
      'input-data': { type: 'string' },
      shape: { type: 'string', multiple: true },
      'measurement-interval': { type: 'string', short: 'p' },
      'stability-percentage': { type: 'string', short: 's' },
      'max-trials': { type: 'string', short: 'r' },
      percentile: { type: 'string' },
      'latency-report-file': { type: 'string', short: 'f' },
      json: { type: 'string' },
      plot: { type: 'string' },
    },
  });
  const model = values['model-name'];
  if (model === undefined || model === '') throw new UsageError('-m: expected the model name');
  const { protocol, url, apiKey, tls } = readTarget(values, env);
  const rawData = values['input-data'] ?? 'random';
  // perf_analyzer's --input-data: random, zero, or a path (a JSON file here; its directory form is not supported).
  const inputData: InputDataChoice = rawData === 'random' || rawData === 'zero' ? rawData : { file: rawData };
  const connections = integerFlag('--connections', values.connections ?? '4', 1, 1024);
  const loadProcesses = integerFlag('--load-processes', values['load-processes'] ?? '1', 1, 64);
  if (connections < loadProcesses) {
    throw new UsageError(`--load-processes ${loadProcesses}: expected at most --connections (${connections}); each process needs a connection`);
  }
  if (values['concurrency-range'] !== undefined && values['request-rate-range'] !== undefined) {
    throw new UsageError('--concurrency-range and --request-rate-range: expected one of them (closed or open loop), got both');
  }
  const loads: Load[] = values['request-rate-range'] !== undefined
    ? rateRange(values['request-rate-range']).map((value) => ({ kind: 'rate', value }))
    : concurrencyRange(values['concurrency-range'] ?? '1').map((value) => ({ kind: 'concurrency', value }));
  const distribution = values['request-distribution'] ?? 'constant';
  if (distribution !== 'constant' && distribution !== 'poisson') {
    throw new UsageError(`--request-distribution: expected constant or poisson, got '${distribution}'`);
  }
  if (values['request-distribution'] !== undefined && values['request-rate-range'] === undefined) {
    throw new UsageError('--request-distribution: expected together with --request-rate-range');
  }
  return {
    model,
    version: values['model-version'] ?? '',
    protocol,
    url,
    batchSize: integerFlag('-b', values['batch-size'] ?? '1', 1, 1 << 20),
    loads,
    distribution,
    connections,
    loadProcesses,
    inputData,
    shapes: shapeFlags(values.shape ?? []),
    measurementIntervalMs: integerFlag('--measurement-interval', values['measurement-interval'] ?? '5000', 50, 3_600_000),
    stabilityPercentage: numberFlag('--stability-percentage', values['stability-percentage'] ?? '10', 0, 1000),
    maxTrials: integerFlag('--max-trials', values['max-trials'] ?? '10', 3, 10_000),
    percentile: values.percentile === undefined ? undefined : integerFlag('--percentile', values.percentile, 1, 99),
    csvFile: values['latency-report-file'],
    jsonFile: values.json,
    plotFile: values.plot,
    apiKey,
    tls,
  };
}

/** The flags that say where the server is and how to reach it, shared by perf and tune. */
export const TARGET_OPTIONS = {
  url: { type: 'string', short: 'u' },
  protocol: { type: 'string', short: 'i' },
  ...CONNECTION_SECURITY_OPTIONS,
} as const;

export interface Target {
  readonly protocol: Protocol;
  readonly url: string;
  readonly apiKey: string | undefined;
  readonly tls: PerfTls | undefined;
}

type TargetValues = { readonly [K in keyof typeof TARGET_OPTIONS]?: (typeof TARGET_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

/** -i, -u (default: Triton's port for the protocol, 8001 gRPC or 8000 HTTP), the API key and TLS. */
export function readTarget(values: TargetValues, env: NodeJS.ProcessEnv): Target {
  const protocol = (values.protocol ?? 'grpc').toLowerCase();
  if (protocol !== 'grpc' && protocol !== 'http') throw new UsageError(`-i: expected grpc or http, got '${values.protocol}'`);
  const url = values.url ?? (protocol === 'grpc' ? 'localhost:8001' : 'localhost:8000');
  if (!/^[^:/\s]+:\d+$|^\[[0-9a-fA-F:]+\]:\d+$/.test(url)) throw new UsageError(`-u: expected HOST:PORT, got '${url}'`);
  checkClientCertPair(values);
  const secure = values.tls === true || values['root-cert'] !== undefined || values['client-cert'] !== undefined || values['server-name'] !== undefined;
  return {
    protocol,
    url,
    apiKey: values['api-key'] ?? env['HOTPATH_API_KEY'],
    tls: !secure ? undefined : {
      rootCert: values['root-cert'], clientCert: values['client-cert'], clientKey: values['client-key'], serverName: values['server-name'],
    },
  };
}

/** START[:END[:STEP]] → the levels, ascending. */
export function concurrencyRange(raw: string): number[] {
  const parts = raw.split(':');
  if (parts.length > 3) throw new UsageError(`--concurrency-range: expected START[:END[:STEP]], got '${raw}'`);
  const start = integerFlag('--concurrency-range START', parts[0]!, 1, 100_000);
  const end = parts[1] === undefined ? start : integerFlag('--concurrency-range END', parts[1], start, 100_000);
  const step = parts[2] === undefined ? 1 : integerFlag('--concurrency-range STEP', parts[2], 1, 100_000);
  const levels: number[] = [];
  for (let level = start; level <= end; level += step) levels.push(level);
  return levels;
}

/** START[:END[:STEP]] requests a second → the levels, ascending. */
export function rateRange(raw: string): number[] {
  const parts = raw.split(':');
  if (parts.length > 3) throw new UsageError(`--request-rate-range: expected START[:END[:STEP]], got '${raw}'`);
  const start = numberFlag('--request-rate-range START', parts[0]!, 0.001, 10_000_000);
  const end = parts[1] === undefined ? start : numberFlag('--request-rate-range END', parts[1], start, 10_000_000);
  const step = parts[2] === undefined ? 1 : numberFlag('--request-rate-range STEP', parts[2], 0.001, 10_000_000);
  const levels: number[] = [];
  // A small epsilon so that 0.1 steps reach END despite rounding.
  for (let level = start; level <= end + step * 1e-9; level += step) levels.push(Number(level.toFixed(6)));
  return levels;
}

/** `NAME:D1,D2,...` (perf_analyzer's --shape) per input; tune takes the same flag. */
export function shapeFlags(raw: readonly string[]): Map<string, number[]> {
  const shapes = new Map<string, number[]>();
  for (const flag of raw) {
    const colon = flag.lastIndexOf(':');
    if (colon <= 0) throw new UsageError(`--shape: expected NAME:DIMS (e.g. ids:16 or image:3,224,224), got '${flag}'`);
    const dims = flag.slice(colon + 1).split(',').map((dim) => integerFlag(`--shape ${flag.slice(0, colon)}`, dim, 1, 1 << 24));
    shapes.set(flag.slice(0, colon), dims);
  }
  return shapes;
}
