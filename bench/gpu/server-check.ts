// The server measured end to end (issue 22): the last step of OUT/run.sh
// (bench/gpu/pack.sh), after check.sh. One JSON, and PASSED or FAILED with
// reasons on stdout.
//
//   node dist/bench/gpu/server-check.js --json FILE [--quick] [--repository DIR]
//
// 1. executor alone: ranker_mlp at batch 1, 64 and 256, the native executor
//    (on the CUDA device when deviceInfo() says one is usable, else its host
//    kernels) against onnxruntime on CPU with every core, each in a fresh
//    process (bench/load/scoring-process.ts, as `npm run bench -- gpu`).
// 2. the server: `hotpath serve` on a copy of the sample ranker_mlp twice,
//    `executor: native` and `executor: onnxruntime` (one worker per core),
//    loaded explicitly; closed-loop clients (batch 64 requests, 2 per core)
//    give each one's rows/s through gRPC.
// 3. an injected device fault: 60 requests in flight, one carrying
//    hotpath_fault=device-error; every request must be answered, the model
//    must move to onnxruntime (hotpath_model_device_fallbacks_total) and
//    come back to the executor (/healthz) after the probe.
// 4. device memory: nv_gpu_memory_used_bytes on the metrics port (the
//    server's cudaMemGetInfo, read at scrape time) before the models load
//    and after both are unloaded; must be within 4 MiB. "Before" follows one
//    warm cycle (both models loaded, run and unloaded), so what CUDA keeps
//    for the process once used (lazily loaded kernels, cuBLAS's library
//    state) is not counted as a leak. Without a device the server exports no
//    figure, and the step is skipped with that reason.
//
// Exit status 0 when every step passed.
import { mkdtempSync, rmSync, writeFileSync, cpSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createClient, type HotpathClient } from '../../src/client/index.js';
import { deviceInfo } from '../../src/native/device.js';
import { Child, killAllChildren } from '../load/child-process.js';
import { scrape } from '../load/metrics-scrape.js';
import type { ScoringConfig, ScoringPointRaw, ScoringResult } from '../load/scoring-process.js';
import { startServer, type ServerProcess } from '../load/server-process.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..', '..');
const SCORING = path.join(here, '..', 'load', 'scoring-process.js');
const MiB = 1024 * 1024;
const MEMORY_LIMIT = 4 * MiB;
const WIDTH = 256;

interface Args {
  readonly json: string;
  readonly quick: boolean;
  readonly repository: string;
}

function parseArgs(argv: readonly string[]): Args {
  let json = '';
  let quick = false;
  let repository = path.join(root, 'models');
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--json') json = argv[++i] ?? '';
    else if (arg === '--quick') quick = true;
    else if (arg === '--repository') repository = argv[++i] ?? '';
    else throw new Error(`server-check: unknown argument ${String(arg)} (see the top of bench/gpu/server-check.ts)`);
  }
  if (json === '') throw new Error('server-check: --json FILE is required');
  return { json, quick, repository };
}

const failures: string[] = [];
const log = (line: string) => process.stderr.write(`server-check: ${line}\n`);
const round = (x: number) => Math.round(x * 10) / 10;

function rowsPerSecond(point: ScoringPointRaw): number {
  return point.elapsedMs > 0 ? (point.latenciesMs.length * point.batch) / (point.elapsedMs / 1000) : 0;
}

async function scoring(config: ScoringConfig): Promise<ScoringResult> {
  const child = new Child(SCORING, `${config.contender} ${config.model.name}`);
  try {
    child.send({ type: 'start', config });
    const budget = config.batchSizes.length * (config.durationMs + config.warmupMs + 60_000) + 60_000;
    return ((await child.next('done', budget)) as { result: ScoringResult }).result;
  } finally {
    child.kill();
  }
}

async function executorAlone(quick: boolean, cuda: boolean) {
  const cores = os.cpus().length;
  const base = {
    model: { kind: 'sample', name: 'ranker_mlp', width: WIDTH, layers: [256, 1024, 1024, 256, 1] },
    deviceOrdinal: 0, intraOpThreads: cores, seed: 22, batchSizes: [1, 64, 256],
    warmupRuns: 5, warmupMs: quick ? 100 : 300, durationMs: quick ? 300 : 1500, minRuns: 3, maxRuns: 20_000,
  } as const;
  const executor = await scoring({ ...base, contender: 'executor', device: cuda ? 'cuda' : 'host' });
  const ort = await scoring({ ...base, contender: 'onnxruntime', device: 'host' });
  return base.batchSizes.map((batch, i) => {
    const e = rowsPerSecond(executor.points[i]!);
    const o = rowsPerSecond(ort.points[i]!);
    log(`executor alone, ranker_mlp b=${batch}: executor (${executor.facts.kernels}) ${e.toFixed(0)} rows/s, onnxruntime ${o.toFixed(0)} rows/s`);
    return { batch, executor_rows_per_s: round(e), onnxruntime_rows_per_s: round(o), ratio: o > 0 ? Math.round((e / o) * 1000) / 1000 : 0, kernels: executor.facts.kernels };
  });
}

// A repository holding ranker_mlp twice: on the executor and on onnxruntime.
function writeRepository(source: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hotpath-server-check-'));
  const cores = os.cpus().length;
  const variants = [
    { name: 'ranker_native', executor: 'native', instances: 1 },
    { name: 'ranker_ort', executor: 'onnxruntime', instances: cores },
  ];
  for (const v of variants) {
    mkdirSync(path.join(dir, v.name, '1'), { recursive: true });
    cpSync(path.join(source, 'ranker_mlp', '1', 'model.onnx'), path.join(dir, v.name, '1', 'model.onnx'));
    writeFileSync(path.join(dir, v.name, 'config.pbtxt'), [
      `name: "${v.name}"`, 'platform: "onnxruntime_onnx"', 'max_batch_size: 256',
      `input [ { name: "features" data_type: TYPE_FP32 dims: [ ${WIDTH} ] } ]`,
      'output [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]',
      'dynamic_batching { max_queue_delay_microseconds: 200 }',
      `instance_group [ { count: ${v.instances} kind: KIND_CPU } ]`,
      `parameters { key: "executor" value: { string_value: "${v.executor}" } }`,
      '',
    ].join('\n'));
  }
  return dir;
}

function features(rows: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length: rows * WIDTH }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

function infer(client: HotpathClient, model: string, rows: number, seed: number, parameters?: Record<string, string>) {
  return client.infer(model, { features: { data: features(rows, seed), shape: [rows, WIDTH], datatype: 'FP32' } },
    parameters ? { parameters } : {});
}

// Closed loop: `streams` clients, each sending `rows`-row requests until `ms` passed.
async function throughput(client: HotpathClient, model: string, streams: number, rows: number, ms: number) {
  for (let i = 0; i < streams; i++) await infer(client, model, rows, i);  // warm-up
  const started = Date.now();
  let requests = 0;
  let errors = 0;
  await Promise.all(Array.from({ length: streams }, async (_, s) => {
    while (Date.now() - started < ms) {
      try {
        await infer(client, model, rows, s);
        requests++;
      } catch {
        errors++;
      }
    }
  }));
  const seconds = (Date.now() - started) / 1000;
  return { rows_per_s: round((requests * rows) / seconds), requests, errors, streams, rows_per_request: rows };
}

async function healthExecutor(httpPort: number, model: string): Promise<string | undefined> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/healthz`);
  const body = (await response.json()) as { models?: { name: string; executor?: string }[] };
  return body.models?.find((m) => m.name === model)?.executor;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

async function gpuUsedBytes(metricsPort: number): Promise<number | undefined> {
  for (const [key, value] of await scrape(metricsPort)) if (key.startsWith('nv_gpu_memory_used_bytes')) return value;
  return undefined;
}

async function faultCheck(client: HotpathClient, httpPort: number, metricsPort: number) {
  const before = await healthExecutor(httpPort, 'ranker_native');
  const results = await Promise.allSettled(Array.from({ length: 60 }, (_, i) =>
    infer(client, 'ranker_native', 1, 100 + i, i === 10 ? { hotpath_fault: 'device-error' } : undefined)));
  const failed = results.filter((r) => r.status === 'rejected').length;
  const metrics = await scrape(metricsPort);
  const fallbacks = metrics.get('hotpath_model_device_fallbacks_total{model="ranker_native",reason="device_error"}') ?? 0;
  const back = await waitFor(async () => (await healthExecutor(httpPort, 'ranker_native')) === before, 15_000);
  const ok = failed === 0 && fallbacks >= 1 && back;
  if (!ok) failures.push(`injected device fault: ${failed} of 60 requests failed, ${fallbacks} moves to CPU, back on ${before}: ${back}`);
  log(`injected device fault: ${60 - failed}/60 answered, ${fallbacks} move(s) to onnxruntime, back on ${before}: ${back}`);
  return { requests: 60, failed, moves_to_cpu: fallbacks, executor_before: before ?? null, back_on_executor: back, ok };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const info = deviceInfo();
  const cuda = info.backend === 'cuda';
  log(`device: ${cuda ? info.name : `none (${info.name})`}`);
  const alone = await executorAlone(args.quick, cuda);

  const repository = writeRepository(args.repository);
  let server: ServerProcess | undefined;
  const client = { current: undefined as HotpathClient | undefined };
  const result: Record<string, unknown> = { check: 'hotpath-server-check', device: cuda ? info.name : 'none', executor_alone: alone };
  try {
    server = await startServer(root, repository, [
      '--http-port', '0', '--model-control-mode', 'explicit', '--enable-fault-injection',
      '--device-probe-interval', '0.5', '--device', '0',
    ], 120_000);
    const serving = server.lines.find((l) => l['msg'] === 'hotpath serving')!;
    const httpPort = serving['http_port'] as number;
    client.current = createClient(server.address);
    const c = client.current;
    const usedAtStart = cuda ? await gpuUsedBytes(server.metricsPort) : undefined;
    if (cuda) {
      for (const model of ['ranker_native', 'ranker_ort']) {
        await c.load(model);
        await infer(c, model, 64, 1);
        await c.unload(model);
      }
    }
    const usedBefore = cuda ? await gpuUsedBytes(server.metricsPort) : undefined;
    await c.load('ranker_native');
    await c.load('ranker_ort');
    const executor = await healthExecutor(httpPort, 'ranker_native');
    log(`ranker_native runs on ${executor}`);
    const streams = 2 * os.cpus().length;
    const ms = args.quick ? 1500 : 5000;
    const native = await throughput(c, 'ranker_native', streams, 64, ms);
    const ort = await throughput(c, 'ranker_ort', streams, 64, ms);
    log(`through the server: executor ${native.rows_per_s} rows/s, onnxruntime ${ort.rows_per_s} rows/s`);
    if (native.errors + ort.errors > 0) failures.push(`throughput: ${native.errors + ort.errors} requests failed`);
    result['server'] = {
      executor, native, onnxruntime: ort,
      ratio: ort.rows_per_s > 0 ? Math.round((native.rows_per_s / ort.rows_per_s) * 1000) / 1000 : 0,
    };
    result['fault'] = await faultCheck(c, httpPort, server.metricsPort);
    await c.unload('ranker_native');
    await c.unload('ranker_ort');
    if (cuda && usedBefore !== undefined) {
      // The unload releases the executor's blocks; let the arena's cache go too.
      const usedAfter = await gpuUsedBytes(server.metricsPort);
      const grew = usedAfter === undefined ? Number.POSITIVE_INFINITY : usedAfter - usedBefore;
      const ok = grew <= MEMORY_LIMIT;
      if (!ok) failures.push(`device memory after unloading every model: ${grew} bytes above before (limit 4 MiB)`);
      result['memory'] = { source: 'metrics nv_gpu_memory_used_bytes (cudaMemGetInfo at scrape)', at_start_bytes: usedAtStart ?? null, before_bytes: usedBefore, after_bytes: usedAfter ?? null, grew_bytes: grew, limit_bytes: MEMORY_LIMIT, ok };
    } else {
      result['memory'] = { skipped: cuda ? 'the server exported no nv_gpu_memory_used_bytes' : 'no CUDA device: the server exports nv_gpu_memory_used_bytes (cudaMemGetInfo) only on a real device' };
    }
  } catch (err) {
    failures.push(`server: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  } finally {
    client.current?.close();
    await server?.stop();
    killAllChildren();
    rmSync(repository, { recursive: true, force: true });
  }
  result['failures'] = failures;
  result['elapsed_s'] = round((Date.now() - started) / 1000);
  result['ok'] = failures.length === 0;
  writeFileSync(args.json, `${JSON.stringify(result, null, 1)}\n`);
  process.stdout.write(`server-check: ${failures.length === 0 ? 'PASSED' : `FAILED (${failures.join('; ')})`}\n`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`server-check: ${err instanceof Error ? err.stack : String(err)}\n`);
  killAllChildren();
  process.exitCode = 1;
});
