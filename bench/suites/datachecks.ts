// The datachecks suite (issue 14, "Cost"): what drift, the payload archive and
// the response cache cost per request. One model (ctr_mlp), one server
// process per contender, all started at the beginning and kept for the run:
//   off            ctr_mlp as checked in;
//   drift          + hotpath_drift "on" (sample rate 1: every request), with a
//                  drift/reference.json built for the temp copy by
//                  `hotpath drift-reference --csv` from rows of the same
//                  distribution as the requests;
//   archive        + --archive DIR --archive-sample-rate 1;
//   cache-miss     + response_cache { enable: true } and --cache-config
//                  local,size=BYTES, every request distinct (all misses);
//   cache-hit      the same server setup, 16 repeated bodies (hits);
//   all            drift + archive (+ cache when available), distinct requests;
//   elsewhere      ctr_mlp as checked in, on a server where a routes file, the
//                  archive, drift and the response cache are all configured,
//                  for another model only (ctr_other: a copy of ctr_mlp), so
//                  ctr_mlp's path must cost what `off` costs (issue 19:
//                  throughput >= 0.98 x off; a feature not configured for a
//                  version is absent from its path).
// The cache contenders exist only when `hotpath serve --help` lists
// --cache-config at run time.
//
// Load: in this process, the raw HTTP/2 session of the serve suite
// (src/perf/h2-raw-session.ts), closed loop, N streams on one connection.
// Requests come from a pool of 256 pre-encoded 1-row bodies; for the
// "distinct" contenders each request also gets its own value in its last
// feature (written into the session's pre-encoded template before the
// request is queued), so no two requests are equal: the cache misses and the
// archive and drift see varied data. Each trial measures a fixed number of
// requests; the server process's CPU time (user + system, all threads, from
// /proc/<pid>/stat, or process_cpu_seconds_total where /proc is missing) is
// read right before and after. The contenders take turns, the order rotating
// each round. Figures: CPU µs per request (total CPU / total requests over the
// rounds), throughput and p50/p99 (medians over rounds), and the ratios to off.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { atExit, killAllChildren } from '../load/child-process.js';
import { grpcFrame, grpcMessages, GRPC_REQUEST_HEADERS, MODEL_INFER_PATH } from '../../src/perf/grpc-frames.js';
import { RawH2Session, type StreamOutcome } from '../../src/perf/h2-raw-session.js';
import { requestHeaderBlock, requestTemplate, type RequestTemplate } from '../../src/perf/h2-wire.js';
import { create } from '@bufbuild/protobuf';

import { ModelStatisticsRequestSchema, ModelStatisticsResponseSchema } from '../../src/generated/grpc_service_pb.js';
import { checkInferResponse, connect, encodeInferRequests, unaryCall, type InferShape } from '../load/infer-client.js';
import { readModel } from '../load/model-repository.js';
import { startServer, type ServerProcess } from '../load/server-process.js';
import type { BenchSuite, SuiteContext, SuiteReport } from './suite.js';
import { scrapeText as scrape } from '../load/metrics-scrape.js';

const MODEL = 'ctr_mlp';
const CTR: InferShape = { model: MODEL, input: 'features', output: 'score', rows: 1, width: 32 };
const POOL = 256;
const HIT_POOL = 16;
/** Drift's added CPU time per request: at most this ratio to off (issue 14). */
const DRIFT_TARGET = 1.05;
const CACHE_BYTES = 64 * 1024 * 1024;

interface Plan {
  readonly concurrency: number;
  readonly rounds: number;
  /** Measured requests per trial (rounds x this per contender). */
  readonly requestsPerTrial: number;
  /** Unmeasured requests before each trial, and on each fresh server. */
  readonly warmupRequests: number;
  readonly serverWarmupRequests: number;
}

const PLANS: Readonly<Record<'quick' | 'full', Plan>> = {
  quick: { concurrency: 16, rounds: 3, requestsPerTrial: 5_000, warmupRequests: 500, serverWarmupRequests: 4_000 },
  full: { concurrency: 16, rounds: 5, requestsPerTrial: 24_000, warmupRequests: 2_000, serverWarmupRequests: 20_000 },
};

interface ContenderSpec {
  readonly name: string;
  readonly description: string;
  readonly drift: boolean;
  readonly archive: boolean;
  readonly cache: boolean;
  /** distinct: every request differs; repeated: HIT_POOL bodies over and over. */
  readonly requests: 'distinct' | 'repeated';
  /** Routes, archive, drift and cache configured for another model (ctr_other), none for ctr_mlp. */
  readonly elsewhere?: boolean;
}

/** The copy of ctr_mlp that the `elsewhere` contender configures every feature for. */
const OTHER = 'ctr_other';
/** The elsewhere contender's throughput over off's: at least this (issue 19). */
const ELSEWHERE_TARGET = 0.98;

function contenderSpecs(cacheAvailable: boolean): ContenderSpec[] {
  const specs: ContenderSpec[] = [
    { name: 'off', description: 'ctr_mlp as checked in: no data checks', drift: false, archive: false, cache: false, requests: 'distinct' },
    { name: 'drift', description: 'hotpath_drift "on" (sample rate 1, interval and window defaults) with a reference.json for features', drift: true, archive: false, cache: false, requests: 'distinct' },
    { name: 'archive', description: '--archive DIR --archive-sample-rate 1 (every request archived)', drift: false, archive: true, cache: false, requests: 'distinct' },
  ];
  if (cacheAvailable) {
    specs.push(
      { name: 'cache-miss', description: `response_cache { enable: true }, --cache-config local,size=${CACHE_BYTES}; every request distinct (misses)`, drift: false, archive: false, cache: true, requests: 'distinct' },
      { name: 'cache-hit', description: `the same, ${HIT_POOL} bodies repeated (hits after the first of each)`, drift: false, archive: false, cache: true, requests: 'repeated' },
    );
  }
  specs.push({
    name: 'all', description: `drift + archive${cacheAvailable ? ' + cache' : ''}, every request distinct`,
    drift: true, archive: true, cache: cacheAvailable, requests: 'distinct',
  });
  if (cacheAvailable) {
    specs.push({
      name: 'elsewhere', description: `ctr_mlp as checked in; a routes file, --archive (rate 0, ${OTHER} overrides to 1), drift and the cache configured for ${OTHER} only`,
      drift: false, archive: false, cache: false, requests: 'distinct', elsewhere: true,
    });
  }
  return specs;
}

// ---- pure helpers -------------------------------------------------------

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** user + system clock ticks of a /proc/<pid>/stat line (fields 14 and 15; the command may hold spaces). */
export function procStatTicks(stat: string): number {
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state): utime is field 14, stime 15.
  return Number(rest[11]) + Number(rest[12]);
}

/** A value in [-1, 1) for request `n`, different for every n < 2^23 (the distinct requests' last feature). */
export function distinctValue(n: number): number {
  const mixed = Math.imul(n, 0x9e3779b1) >>> 9; // 23 bits, a bijection of n mod 2^23
  return mixed / 2 ** 22 - 1;
}

// ---- server side --------------------------------------------------------

/** The kernel's clock ticks per second (getconf CLK_TCK; 100 if it cannot say). */
export function clockTicksPerSecond(): number {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const value = Number(out.stdout?.trim());
  return Number.isFinite(value) && value > 0 ? value : 100;
}

/** Sums of every series of the metrics whose names start with one of `prefixes`, by name. */
function metricSums(body: string, prefixes: readonly string[]): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const name = line.split(/[{ ]/, 1)[0]!;
    if (!prefixes.some((p) => name.startsWith(p))) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) sums[name] = (sums[name] ?? 0) + value;
  }
  return sums;
}

/** The server's CPU time so far (seconds): /proc/<pid>/stat, or its process_cpu_seconds_total. */
async function cpuSeconds(server: ServerProcess, ticks: number): Promise<number> {
  const stat = `/proc/${server.pid}/stat`;
  if (existsSync(stat)) return procStatTicks(readFileSync(stat, 'utf8')) / ticks;
  return metricSums(await scrape(server.metricsPort), ['process_cpu_seconds_total'])['process_cpu_seconds_total'] ?? Number.NaN;
}

function withParameters(config: string, spec: ContenderSpec): string {
  let out = config.trimEnd() + '\n';
  if (spec.drift) out += 'parameters { key: "hotpath_drift" value: { string_value: "on" } }\n';
  if (spec.cache) out += 'response_cache { enable: true }\n';
  return out;
}

/** Rows like the requests' (uniform in [-1, 1)), as CSV, for drift-reference. */
function referenceCsv(rows: number, width: number, seed: number): string {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const lines = [Array.from({ length: width }, (_, i) => `f${i}`).join(',')];
  for (let r = 0; r < rows; r += 1) lines.push(Array.from({ length: width }, () => (next() * 2 - 1).toFixed(6)).join(','));
  return lines.join('\n') + '\n';
}

interface Served {
  readonly spec: ContenderSpec;
  readonly server: ServerProcess;
  readonly archiveDir?: string;
}

async function startContender(context: SuiteContext, spec: ContenderSpec, dir: string): Promise<Served> {
  const source = readModel(path.join(context.root, 'models'), MODEL);
  const repository = path.join(dir, spec.name, 'repository');
  const modelDir = path.join(repository, MODEL);
  mkdirSync(path.join(modelDir, '1'), { recursive: true });
  writeFileSync(path.join(modelDir, 'config.pbtxt'), withParameters(source.config, spec));
  copyFileSync(source.modelPath, path.join(modelDir, '1', 'model.onnx'));
  if (spec.drift) {
    const csv = path.join(dir, spec.name, 'reference.csv');
    writeFileSync(csv, referenceCsv(5000, CTR.width, 0x5eed));
    const built = spawnSync(process.execPath, [path.join(context.root, 'dist', 'src', 'cli.js'), 'drift-reference', '--model-dir', modelDir, '--csv', csv, '--tensor', CTR.input],
      { cwd: context.root, encoding: 'utf8' });
    if (built.status !== 0 || !existsSync(path.join(modelDir, 'drift', 'reference.json'))) {
      throw new Error(`datachecks: drift-reference failed (${built.status}): ${built.stderr}${built.stdout}`);
    }
  }
  const args = ['--intra-op-threads', '1', '--log-level', 'info'];
  let archiveDir: string | undefined;
  if (spec.archive) {
    archiveDir = path.join(dir, spec.name, 'archive');
    args.push('--archive', archiveDir, '--archive-sample-rate', '1');
  }
  if (spec.cache) args.push('--cache-config', `local,size=${CACHE_BYTES}`);
  if (spec.elsewhere === true) args.push(...configureElsewhere(context, dir, repository, source));
  context.log(`datachecks: ${spec.name}: starting the server (${args.join(' ')}) ...`);
  const server = await startServer(context.root, repository, args, 120_000);
  return { spec, server, ...(archiveDir ? { archiveDir } : {}) };
}

/**
 * The `elsewhere` contender's other model and server flags: ctr_other (a copy
 * of ctr_mlp) with drift, the cache and an archive rate of 1, a routes file
 * whose one route is over ctr_other, and the archive and cache turned on for
 * the server (the archive's server-wide rate 0, so only ctr_other is archived).
 */
function configureElsewhere(context: SuiteContext, dir: string, repository: string, source: { config: string; modelPath: string }): string[] {
  const otherDir = path.join(repository, OTHER);
  mkdirSync(path.join(otherDir, '1'), { recursive: true });
  const config = withParameters(source.config.replace(/name:\s*"[^"]*"/, `name: "${OTHER}"`), { drift: true, cache: true } as ContenderSpec)
    + 'parameters { key: "hotpath_archive_sample_rate" value: { string_value: "1" } }\n';
  writeFileSync(path.join(otherDir, 'config.pbtxt'), config);
  copyFileSync(source.modelPath, path.join(otherDir, '1', 'model.onnx'));
  const csv = path.join(dir, 'elsewhere', 'reference.csv');
  writeFileSync(csv, referenceCsv(5000, CTR.width, 0x5eed));
  const built = spawnSync(process.execPath, [path.join(context.root, 'dist', 'src', 'cli.js'), 'drift-reference', '--model-dir', otherDir, '--csv', csv, '--tensor', CTR.input],
    { cwd: context.root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`datachecks: drift-reference for ${OTHER} failed (${built.status}): ${built.stderr}${built.stdout}`);
  const routes = path.join(dir, 'elsewhere', 'routes.yaml');
  writeFileSync(routes, `routes:\n  other_route:\n    arms: { only: { model: ${OTHER}, weight: 1 } }\n`);
  return ['--routes', routes, '--archive', path.join(dir, 'elsewhere', 'archive'), '--archive-sample-rate', '0', '--cache-config', `local,size=${CACHE_BYTES}`];
}

/** ModelStatistics' cache_hit and cache_miss counts (Triton's fields). */
async function cacheStatistics(server: ServerProcess): Promise<Record<string, number>> {
  const client = connect(server.address);
  try {
    const response = await unaryCall(client, 'ModelStatistics', ModelStatisticsRequestSchema, ModelStatisticsResponseSchema,
      create(ModelStatisticsRequestSchema, { name: MODEL, version: '' }));
    const stats = response.modelStats[0]?.inferenceStats;
    return {
      statistics_cache_hit: Number(stats?.cacheHit?.count ?? 0n),
      statistics_cache_miss: Number(stats?.cacheMiss?.count ?? 0n),
      statistics_success: Number(stats?.success?.count ?? 0n),
    };
  } finally {
    client.close();
  }
}

// ---- load ---------------------------------------------------------------

interface TrialResult {
  readonly requests: number;
  readonly errors: number;
  readonly errorSamples: string[];
  readonly elapsedS: number;
  readonly cpuS: number;
  readonly latenciesMs: Float64Array;
  readonly sample?: Buffer;
}

/**
 * Closed loop on one raw HTTP/2 connection: `warmup` unmeasured requests,
 * then `measured` ones, with the server's CPU time read at the boundary and
 * at the end. Bodies rotate over `bodies`; with `distinct`, each request's
 * last feature is set to distinctValue(counter) first.
 */
async function trial(served: Served, bodies: readonly Buffer[], distinct: boolean, counter: { n: number }, concurrency: number,
  warmup: number, measured: number, ticks: number, capture: boolean): Promise<TrialResult> {
  const session = await RawH2Session.connect(served.server.address, MODEL_INFER_PATH, GRPC_REQUEST_HEADERS, bodies[0]!);
  // The session builds its pre-encoded template lazily from the body it was given; the suite
  // swaps it before each request (same length: the send-window accounting holds).
  const templates: RequestTemplate[] = bodies.map((b) => requestTemplate(requestHeaderBlock(served.server.address, MODEL_INFER_PATH, GRPC_REQUEST_HEADERS), b, 16_384));
  const slot = session as unknown as { template: RequestTemplate | undefined };
  try {
    return await new Promise<TrialResult>((resolve, reject) => {
      const total = warmup + measured;
      const latencies = new Float64Array(measured);
      let sent = 0;
      let done = 0;
      let ok = 0;
      let errors = 0;
      const errorSamples = new Set<string>();
      let sample: Buffer | undefined;
      let startNs = 0n;
      let cpuStart = 0;
      let finished = false;
      const stall = setInterval(() => {
        if (Date.now() - lastProgress > 20_000) {
          finished = true;
          clearInterval(stall);
          reject(new Error(`datachecks: ${served.spec.name}: no answer for 20 s (${done} of ${total} done)`));
        }
      }, 1000);
      let lastProgress = Date.now();
      const send = () => {
        const i = sent;
        sent += 1;
        const template = templates[i % templates.length]!;
        if (distinct) template.bytes.writeFloatLE(distinctValue(counter.n++), template.bytes.length - 4);
        slot.template = template;
        const t0 = process.hrtime.bigint();
        session.request((outcome: StreamOutcome) => onDone(i, t0, outcome), capture && i === 0);
      };
      const onDone = (i: number, t0: bigint, outcome: StreamOutcome) => {
        if (finished) return;
        lastProgress = Date.now();
        done += 1;
        if (outcome.ok) {
          if (i >= warmup) {
            latencies[ok] = Number(outcome.endNs - t0) / 1e6;
            ok += 1;
          }
          if (outcome.body !== undefined) sample = outcome.body;
        } else {
          errors += 1;
          if (errorSamples.size < 5) errorSamples.add(outcome.description);
        }
        if (done === warmup) {
          // Every warm-up request has ended; the measured ones start now.
          void cpuSeconds(served.server, ticks).then((cpu) => {
            cpuStart = cpu;
            startNs = process.hrtime.bigint();
            for (let s = 0; s < concurrency && sent < total; s += 1) send();
          }, reject);
          return;
        }
        if (done === total) {
          const elapsedS = Number(process.hrtime.bigint() - startNs) / 1e9;
          finished = true;
          clearInterval(stall);
          void cpuSeconds(served.server, ticks).then((cpuEnd) => resolve({
            requests: ok, errors, errorSamples: [...errorSamples], elapsedS, cpuS: cpuEnd - cpuStart,
            latenciesMs: latencies.subarray(0, ok), ...(sample ? { sample } : {}),
          }), reject);
          return;
        }
        // Closed loop: the warm-up drains completely before the measured part starts.
        if (sent < (done <= warmup ? warmup : total)) send();
      };
      if (warmup === 0) {
        done = 0;
        void cpuSeconds(served.server, ticks).then((cpu) => {
          cpuStart = cpu;
          startNs = process.hrtime.bigint();
          for (let s = 0; s < concurrency && sent < total; s += 1) send();
        }, reject);
      } else {
        for (let s = 0; s < concurrency && sent < warmup; s += 1) send();
      }
    });
  } finally {
    session.close();
  }
}

// ---- the suite ----------------------------------------------------------

interface TrialRecord {
  readonly round: number;
  readonly position: number;
  readonly requests: number;
  readonly errors: number;
  readonly throughput_rps: number;
  readonly cpu_us_per_request: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
}

const round = (x: number, digits: number): number | null => (Number.isFinite(x) ? Number(x.toFixed(digits)) : null);

async function run(context: SuiteContext): Promise<SuiteReport> {
  const plan = context.quick ? PLANS.quick : PLANS.full;
  const cli = path.join(context.root, 'dist', 'src', 'cli.js');
  if (!existsSync(path.join(context.root, 'models', MODEL, '1', 'model.onnx'))) {
    context.log('datachecks: generating the sample models ...');
    spawnSync(process.execPath, [path.join(context.root, 'dist', 'models', 'generate.js'), '--missing-only'], { cwd: context.root, stdio: 'inherit' });
  }
  const help = spawnSync(process.execPath, [cli, 'serve', '--help'], { encoding: 'utf8' });
  const cacheAvailable = `${help.stdout}${help.stderr}`.includes('--cache-config');
  if (!cacheAvailable) context.log('datachecks: `hotpath serve --help` has no --cache-config: no cache contenders');
  const specs = contenderSpecs(cacheAvailable);
  const ticks = clockTicksPerSecond();

  const dir = mkdtempSync(path.join(os.tmpdir(), 'hotpath-bench-datachecks-'));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  const forget = atExit(removeDir);
  const served: Served[] = [];
  try {
    for (const spec of specs) served.push(await startContender(context, spec, dir));
    const distinctBodies = encodeInferRequests(CTR, POOL, 17).map((m) => grpcFrame(m));
    const repeatedBodies = distinctBodies.slice(0, HIT_POOL);
    const counter = { n: 0 };
    const bodiesOf = (spec: ContenderSpec) => (spec.requests === 'distinct' ? distinctBodies : repeatedBodies);

    for (const s of served) {
      const warm = await trial(s, bodiesOf(s.spec), s.spec.requests === 'distinct', counter, plan.concurrency, 0, plan.serverWarmupRequests, ticks, true);
      if (warm.errors > 0) throw new Error(`datachecks: ${s.spec.name}: ${warm.errors} errors in the warm-up (${warm.errorSamples[0] ?? ''})`);
      if (warm.sample === undefined) throw new Error(`datachecks: ${s.spec.name}: no sample answer`);
      checkInferResponse(grpcMessages(warm.sample)[0]!, CTR);
      context.log(`datachecks: ${s.spec.name}: warm (${warm.requests} requests, ${(warm.requests / warm.elapsedS).toFixed(0)} req/s)`);
    }

    const trials = new Map<string, TrialRecord[]>(specs.map((s) => [s.name, []]));
    const totals = new Map<string, { requests: number; cpuS: number }>(specs.map((s) => [s.name, { requests: 0, cpuS: 0 }]));
    for (let r = 0; r < plan.rounds; r += 1) {
      const order = served.map((_, i) => served[(i + r) % served.length]!);
      for (const [position, s] of order.entries()) {
        const t = await trial(s, bodiesOf(s.spec), s.spec.requests === 'distinct', counter, plan.concurrency, plan.warmupRequests, plan.requestsPerTrial, ticks, false);
        const sorted = Array.from(t.latenciesMs).sort((a, b) => a - b);
        const record: TrialRecord = {
          round: r, position, requests: t.requests, errors: t.errors,
          throughput_rps: Math.round(t.requests / t.elapsedS),
          cpu_us_per_request: round((t.cpuS / t.requests) * 1e6, 2)!,
          p50_ms: round(percentile(sorted, 50), 3)!, p99_ms: round(percentile(sorted, 99), 3)!,
        };
        trials.get(s.spec.name)!.push(record);
        const sum = totals.get(s.spec.name)!;
        sum.requests += t.requests;
        sum.cpuS += t.cpuS;
        context.log(`datachecks: ${s.spec.name} round ${r + 1}: ${record.throughput_rps} req/s, ${record.cpu_us_per_request} µs CPU/req, p50 ${record.p50_ms} / p99 ${record.p99_ms} ms` +
          `${t.errors ? `, ${t.errors} errors (${t.errorSamples[0] ?? ''})` : ''}`);
      }
    }

    // What the data checks did (evidence that they were on), scraped after the rounds.
    const evidence: Record<string, Record<string, number>> = {};
    for (const s of served) {
      evidence[s.spec.name] = { ...metricSums(await scrape(s.server.metricsPort), ['hotpath_drift_', 'hotpath_archive_', 'nv_cache_num_']), ...(await cacheStatistics(s.server)) };
    }

    const summaries = specs.map((spec) => {
      const ts = trials.get(spec.name)!;
      const sum = totals.get(spec.name)!;
      return {
        name: spec.name,
        description: spec.description,
        requests: spec.requests,
        measured_requests: sum.requests,
        errors: ts.reduce((n, t) => n + t.errors, 0),
        cpu_us_per_request: round((sum.cpuS / sum.requests) * 1e6, 2),
        cpu_us_per_request_median: round(median(ts.map((t) => t.cpu_us_per_request)), 2),
        throughput_rps: Math.round(median(ts.map((t) => t.throughput_rps))),
        p50_ms: round(median(ts.map((t) => t.p50_ms)), 3),
        p99_ms: round(median(ts.map((t) => t.p99_ms)), 3),
      };
    });
    const off = summaries.find((s) => s.name === 'off')!;
    const ratios = summaries.filter((s) => s.name !== 'off').map((s) => ({
      name: s.name,
      cpu_ratio: round(s.cpu_us_per_request! / off.cpu_us_per_request!, 3),
      cpu_ratio_median: round(s.cpu_us_per_request_median! / off.cpu_us_per_request_median!, 3),
      throughput_ratio: round(s.throughput_rps / off.throughput_rps, 3),
      p50_ratio: round(s.p50_ms! / off.p50_ms!, 3),
      p99_ratio: round(s.p99_ms! / off.p99_ms!, 3),
    }));
    const driftRatio = ratios.find((r) => r.name === 'drift')!.cpu_ratio;
    const elsewhereRatio = ratios.find((r) => r.name === 'elsewhere')?.throughput_ratio;
    const json = {
      suite: 'datachecks',
      target: { figure: 'cpu_ratio of drift = CPU µs per request with drift on / off (totals over the rounds)', max: DRIFT_TARGET, value: driftRatio, met: driftRatio === null ? null : driftRatio <= DRIFT_TARGET },
      elsewhere_target: elsewhereRatio === undefined ? null : {
        figure: 'throughput_ratio of elsewhere = ctr_mlp req/s with routes, archive, drift and cache configured for another model / off',
        min: ELSEWHERE_TARGET, value: elsewhereRatio, met: elsewhereRatio === null ? null : elsewhereRatio >= ELSEWHERE_TARGET,
      },
      cache: cacheAvailable ? 'measured' : 'not available (no --cache-config in hotpath serve --help)',
      summaries,
      ratios,
      evidence,
      contenders: specs.map((spec) => ({ ...spec, trials: trials.get(spec.name) })),
      settings: {
        ...plan, quick: context.quick, model: MODEL, rows_per_request: 1, intra_op_threads: 1, body_pool: POOL, hit_pool: HIT_POOL,
        cache_bytes: cacheAvailable ? CACHE_BYTES : null, clock_ticks_per_s: ticks,
        cpu_source: existsSync('/proc/self/stat') ? '/proc/<pid>/stat utime+stime (all threads)' : 'process_cpu_seconds_total',
        client: 'raw HTTP/2 session (src/perf/h2-raw-session.ts) in the bench process, one connection, closed loop',
        cores: os.cpus().length,
      },
    };
    const table: [string, string][] = summaries.map((s) => [
      s.name,
      `${s.cpu_us_per_request} µs CPU/req (median ${s.cpu_us_per_request_median}), ${s.throughput_rps} req/s, p50 ${s.p50_ms} / p99 ${s.p99_ms} ms, ${s.measured_requests} req${s.errors ? `, ${s.errors} errors` : ''}`,
    ]);
    for (const r of ratios) table.push([`${r.name} / off`, `CPU ${r.cpu_ratio} (median ${r.cpu_ratio_median}), throughput ${r.throughput_ratio}, p50 ${r.p50_ratio}, p99 ${r.p99_ratio}`]);
    table.push(['drift CPU target', `${driftRatio} (<= ${DRIFT_TARGET}: ${json.target.met === null ? '–' : json.target.met ? 'PASS' : 'FAIL'})`]);
    if (elsewhereRatio !== undefined) table.push(['elsewhere throughput target', `${elsewhereRatio} (>= ${ELSEWHERE_TARGET}: ${elsewhereRatio === null ? '–' : elsewhereRatio >= ELSEWHERE_TARGET ? 'PASS' : 'FAIL'})`]);
    if (!cacheAvailable) table.push(['cache', 'not measured: no --cache-config in hotpath serve --help']);
    return { json, table };
  } finally {
    for (const s of served) await s.server.stop();
    removeDir();
    forget();
  }
}

export const datachecksSuite: BenchSuite = {
  name: 'datachecks',
  description: 'CPU time per request, throughput and p50/p99 with drift, archive and response cache on vs off (issue 14)',
  async run(context: SuiteContext): Promise<SuiteReport> {
    try {
      return await run(context);
    } finally {
      killAllChildren();
    }
  },
};
