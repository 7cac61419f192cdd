// The serve suite (issues 4 and 10): hotpath over gRPC against the two limits
// it cannot beat on these cores, all measured in the same run:
//   echo-<model>        a grpc-js server answering a canned response (the
//                       bytes hotpath answered the same request with), no
//                       protobuf work: the transport's ceiling;
//   ort-raw-<model>     onnxruntime-node called directly, the server workers'
//                       session options, batch sizes swept: compute alone;
//   hotpath-ctr_mlp     the server, sample config as checked in (batching);
//   hotpath-ctr_mlp_nb  a copy of ctr_mlp without dynamic_batching;
//   hotpath-ranker_mlp  the server, sample config as checked in.
// Each contender runs in fresh processes; each point gets a fresh HTTP/2
// load generator sending one pre-encoded gRPC body (bench/load/h2-loader-
// process.ts: pre-encoded frames on a socket, or node:http2), closed loop. Where h2load is installed it runs once against
// the batched ctr_mlp server as a check on that generator.
// With --threads the suite runs the front-door threads sweep instead
// (serve-threads.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { atExit, Child, killAllChildren } from '../load/child-process.js';
import type { EchoConfig } from '../load/echo-server-process.js';
import { grpcFrame, MODEL_INFER_PATH } from '../../src/perf/grpc-frames.js';
import { h2loadVersion, runH2load } from '../load/h2load.js';
import { checkInferResponse, connect, CTR_SHAPE, encodeInferRequests, modelStatistics, RANKER_SHAPE, waitForReady, type InferShape } from '../load/infer-client.js';
import { hasDynamicBatching, instanceCount, maxQueueDelayUs, readModel, renameModel, withoutDynamicBatching, writeTempRepository } from '../load/model-repository.js';
import { startServer } from '../load/server-process.js';
import { closedPoint, rawOrtPoints, type LoadTarget, type PointSettings } from '../load/trials.js';
import { describeH2load, renderServeMarkdown, verdict } from '../report/serve-markdown.js';
import { computeFigures, figureReport, h2loadDifference } from '../report/serve-ratios.js';
import { H2LOAD_TARGET, loadLabel, TARGETS, type FigureName, type H2loadAgreement, type ServeContender, type ServePoint, type ServeResult } from '../report/serve-result.js';
import { renderServeSvg } from '../report/serve-svg.js';
import { runThreadsSweep } from './serve-threads.js';
import type { BenchSuite, SuiteContext, SuiteReport } from './suite.js';

const ECHO = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'load', 'echo-server-process.js');
const CTR: InferShape = CTR_SHAPE;
const RANKER: InferShape = RANKER_SHAPE;
const UNBATCHED = 'ctr_mlp_nb';
/** The server's default, passed explicitly so the raw contender provably matches it. */
const INTRA_OP_THREADS = 1;
/** The load of every headline figure. */
const HEADLINE = [1, 64] as const;

interface Plan {
  readonly concurrency: readonly number[];
  /** Unmeasured load (64 streams) on each fresh server before its first point, so its JIT is warm. */
  readonly serverWarmupMs: number;
  readonly point: PointSettings;
  readonly rawBatches: readonly number[];
  readonly rawDurationMs: number;
  readonly h2load: { readonly warmupS: number; readonly durationS: number };
}

const PLANS: Readonly<Record<'quick' | 'full', Plan>> = {
  quick: {
    concurrency: [...HEADLINE],
    serverWarmupMs: 1000,
    point: { warmupMs: 300, durationMs: 1500, loaders: 1, connections: 1, maxRequestsPerLoader: 400_000, stallMs: 10_000, client: 'raw' },
    rawBatches: [1, 8, 32, 64, 128],
    rawDurationMs: 400,
    h2load: { warmupS: 1, durationS: 2 },
  },
  full: {
    concurrency: [1, 4, 16, 64, 128],
    serverWarmupMs: 2000,
    point: { warmupMs: 1000, durationMs: 4000, loaders: 1, connections: 1, maxRequestsPerLoader: 1_000_000, stallMs: 10_000, client: 'raw' },
    rawBatches: [1, 2, 4, 8, 16, 32, 64, 128],
    rawDurationMs: 1500,
    h2load: { warmupS: 1, durationS: 4 },
  },
};

/** One pre-encoded request body per model: a length-prefixed ModelInfer frame. */
function requestBody(shape: InferShape): Buffer {
  return grpcFrame(encodeInferRequests(shape, 1, 17)[0]!);
}

function describePoint(p: ServePoint): string {
  const batch = p.mean_batch === null ? '' : `, batch ${p.mean_batch.toFixed(2)}`;
  const errors = p.errors > 0 ? `, ${p.errors} errors (${p.error_samples?.[0] ?? ''})` : '';
  return `${p.throughput_rps.toFixed(0)} req/s, mean ${p.mean_ms} / p50 ${p.p50_ms} / p99 ${p.p99_ms} ms${batch}${errors}`;
}

async function sweep(context: SuiteContext, plan: Plan, name: string, target: LoadTarget): Promise<{ points: ServePoint[]; sample: Uint8Array }> {
  const points: ServePoint[] = [];
  let sample: Uint8Array | undefined;
  await closedPoint(target, 64, 1, { ...plan.point, warmupMs: 0, durationMs: plan.serverWarmupMs }).catch((err: unknown) => {
    throw new Error(`serve: ${name} warm-up: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  });
  for (const concurrency of plan.concurrency) {
    const measured = await closedPoint(target, concurrency, 1, plan.point).catch((err: unknown) => {
      throw new Error(`serve: ${name} c=${concurrency}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    });
    sample ??= measured.sampleResponse;
    context.log(`serve: ${name} c=${concurrency}: ${describePoint(measured.point)}`);
    points.push(measured.point);
  }
  return { points, sample: sample! };
}

interface HotpathRun {
  readonly contender: ServeContender;
  /** What the server answered the body with (the echo contender's canned answer). */
  readonly response: Uint8Array;
  readonly h2load?: H2loadAgreement;
}

async function hotpathContender(
  context: SuiteContext,
  plan: Plan,
  shape: InferShape,
  config: string,
  as: string,
  description: string,
  withH2load: boolean,
): Promise<HotpathRun> {
  const name = `hotpath-${as}`;
  const repository = writeTempRepository(path.join(context.root, 'models'), shape.model, config, as);
  const forget = atExit(repository.remove);
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    context.log(`serve: ${name}: starting the server ...`);
    server = await startServer(context.root, repository.dir, ['--intra-op-threads', String(INTRA_OP_THREADS), '--log-level', 'info'], 120_000);
    const stats = connect(server.address);
    try {
      await waitForReady(stats, 10_000);
      const served = { ...shape, model: as };
      const body = requestBody(served);
      const target: LoadTarget = { address: server.address, path: MODEL_INFER_PATH, body, statistics: { client: stats, model: as } };
      const { points, sample } = await sweep(context, plan, name, target);
      checkInferResponse(Buffer.from(sample), served);
      let h2load: H2loadAgreement | undefined;
      if (withH2load) h2load = await h2loadAgainst(context, plan, target, points);
      return { contender: { name, kind: 'hotpath', model: as, description, points }, response: sample, ...(h2load ? { h2load } : {}) };
    } finally {
      stats.close();
    }
  } finally {
    await server?.stop();
    repository.remove();
    forget();
  }
}

async function h2loadAgainst(context: SuiteContext, plan: Plan, target: LoadTarget, points: readonly ServePoint[]): Promise<H2loadAgreement> {
  const version = h2loadVersion();
  if (version === undefined) {
    context.log('serve: h2load not installed (Debian: nghttp2-client); no agreement check');
    return 'not installed';
  }
  const streams = 64;
  const stats = target.statistics!;
  try {
    context.log(`serve: h2load at ${streams} streams against ${stats.model} ...`);
    const before = await modelStatistics(stats.client, stats.model);
    const run = await runH2load({ address: target.address, path: target.path, body: target.body, streams, ...plan.h2load });
    const after = await modelStatistics(stats.client, stats.model);
    // Own figure: the mean of the sweep's point and one more right after h2load, so drift on a shared machine cancels.
    const again = (await closedPoint(target, streams, 1, plan.point)).point;
    context.log(`serve: ${stats.model} c=${streams} again after h2load: ${describePoint(again)}`);
    const sweepPoint = points.find((p) => p.concurrency === streams);
    const own = sweepPoint === undefined ? null : Math.round(((sweepPoint.throughput_rps + again.throughput_rps) / 2) * 10) / 10;
    const agreement = h2loadDifference(own, run.requests_per_s);
    return {
      version, command: run.command.replace(/\S*body\.bin/, 'BODY'), model: stats.model, streams,
      h2load_rps: run.requests_per_s, h2load_mean_ms: run.mean_ms, h2load_failed: run.failed + run.errored,
      server_successes: after.successCount - before.successCount,
      own_rps: own, own_runs_rps: [sweepPoint?.throughput_rps ?? null, again.throughput_rps], own_errors: again.errors, difference: agreement.difference, target: `<= ${H2LOAD_TARGET}`, met: agreement.met,
    };
  } catch (err) {
    return { error: err instanceof Error ? err.message.split('\n')[0]! : String(err) };
  }
}

async function echoContender(context: SuiteContext, plan: Plan, shape: InferShape, response: Uint8Array): Promise<ServeContender> {
  const name = `echo-${shape.model}`;
  context.log(`serve: ${name}: starting the echo server ...`);
  const child = new Child(ECHO, 'echo server');
  try {
    child.send({ type: 'start', config: { response } satisfies EchoConfig });
    const port = (await child.next('ready', 30_000) as { info: number }).info;
    const target: LoadTarget = { address: `127.0.0.1:${port}`, path: MODEL_INFER_PATH, body: requestBody(shape) };
    const { points, sample } = await sweep(context, plan, name, target);
    if (Buffer.compare(Buffer.from(sample), Buffer.from(response)) !== 0) throw new Error(`${name} answered other bytes than it was given`);
    return {
      name, kind: 'echo', model: shape.model, points,
      description: `grpc-js (same server options as hotpath) answering ${shape.model}'s request body with the ${response.byteLength}-byte response hotpath gave it, identity (de)serializers: no protobuf work.`,
    };
  } finally {
    child.kill();
  }
}

async function rawContender(context: SuiteContext, plan: Plan, shape: InferShape, modelPath: string, batches: readonly number[], sessions: number): Promise<ServeContender> {
  const name = `ort-raw-${shape.model}${sessions > 1 ? `-x${sessions}` : ''}`;
  context.log(`serve: ${name}: onnxruntime-node in one process, ${sessions} session(s), intraOpNumThreads ${INTRA_OP_THREADS} ...`);
  const points = await rawOrtPoints({
    modelPath, input: shape.input, width: shape.width, batchSizes: batches, sessions,
    intraOpThreads: INTRA_OP_THREADS, warmupRuns: 50, durationMs: plan.rawDurationMs, maxRuns: 400_000, seed: 7,
  });
  for (const p of points) context.log(`serve: ${name} ${loadLabel(p)}: ${p.throughput_rps.toFixed(0)} runs/s, ${p.rows_per_s.toFixed(0)} rows/s, mean ${p.mean_ms} / p50 ${p.p50_ms} / p99 ${p.p99_ms} ms`);
  return {
    name, kind: 'raw', model: shape.model, points,
    description: `onnxruntime-node ${sessions === 1 ? 'in one process' : `with ${sessions} sessions on ${sessions} threads`}, ` +
      `intraOpNumThreads ${INTRA_OP_THREADS}, interOpNumThreads 1, sequential (the server workers' options); no network. ` +
      'Latency is one session.run (tensor creation, run, output read).',
  };
}

function writeArtefacts(context: SuiteContext, result: ServeResult): { markdown: string; svg: string } {
  const base = context.outputFile.replace(/\.json$/i, '');
  const markdown = `${base}.md`;
  const svg = `${base}.svg`;
  const host = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
  const title = `serve${context.quick ? ' (quick)' : ''}, ${new Date().toISOString().slice(0, 16)}Z`;
  mkdirSync(path.dirname(markdown), { recursive: true });
  writeFileSync(markdown, renderServeMarkdown(result, `${title} on ${host}`) + `\n![latency vs throughput](${path.basename(svg)})\n`);
  writeFileSync(svg, renderServeSvg(result.contenders, `${title}: latency vs throughput`));
  return { markdown, svg };
}

async function run(context: SuiteContext): Promise<SuiteReport> {
  const base = context.quick ? PLANS.quick : PLANS.full;
  // HOTPATH_BENCH_CLIENT=node-http2 swaps the raw client for node:http2's (to compare the two).
  const client = process.env['HOTPATH_BENCH_CLIENT'] === 'node-http2' ? 'node-http2' : 'raw';
  const plan: Plan = { ...base, point: { ...base.point, client } };
  const models = path.join(context.root, 'models');
  if ([CTR, RANKER].some((s) => !existsSync(path.join(models, s.model, '1', 'model.onnx')))) {
    context.log('serve: generating the sample models ...');
    spawnSync(process.execPath, [path.join(context.root, 'dist', 'models', 'generate.js'), '--missing-only'], { cwd: context.root, stdio: 'inherit' });
  }
  const ctr = readModel(models, CTR.model);
  const ranker = readModel(models, RANKER.model);
  for (const [shape, model] of [[CTR, ctr], [RANKER, ranker]] as const) {
    if (!hasDynamicBatching(model.config)) throw new Error(`models/${shape.model}/config.pbtxt has no dynamic_batching block`);
  }
  const instances = instanceCount(ranker.config);

  const rawCtr = await rawContender(context, plan, CTR, ctr.modelPath, [1], 1);
  const rawRanker = await rawContender(context, plan, RANKER, ranker.modelPath, plan.rawBatches, instances);
  const setup = `--intra-op-threads ${INTRA_OP_THREADS}; one pre-encoded 1-row request from a ${plan.point.client === 'raw' ? 'raw HTTP/2 (pre-encoded frames)' : 'node:http2'} load generator (own process, ${plan.point.connections} connection) on 127.0.0.1`;
  const batchedCtr = await hotpathContender(context, plan, CTR, ctr.config, CTR.model, `hotpath, config.pbtxt as checked in; ${setup}.`, true);
  const unbatchedCtr = await hotpathContender(context, plan, CTR, renameModel(withoutDynamicBatching(ctr.config), UNBATCHED), UNBATCHED,
    `hotpath, ctr_mlp's config.pbtxt without dynamic_batching, served as ${UNBATCHED}; ${setup}.`, false);
  const batchedRanker = await hotpathContender(context, plan, RANKER, ranker.config, RANKER.model, `hotpath, config.pbtxt as checked in; ${setup}.`, false);
  const echoCtr = await echoContender(context, plan, CTR, batchedCtr.response);
  const echoRanker = await echoContender(context, plan, RANKER, batchedRanker.response);

  const contenders = [echoCtr, echoRanker, batchedCtr.contender, unbatchedCtr.contender, batchedRanker.contender, rawCtr, rawRanker];
  const { figures, terms } = computeFigures({
    echoCtr, echoRanker, ctr: batchedCtr.contender, ctrUnbatched: unbatchedCtr.contender, ranker: batchedRanker.contender,
    rawCtr, rawRanker, ctrMaxQueueDelayUs: maxQueueDelayUs(ctr.config),
  });
  const result: ServeResult = {
    suite: 'serve',
    models: [CTR.model, UNBATCHED, RANKER.model],
    contenders,
    figures: figureReport(figures),
    terms,
    h2load: batchedCtr.h2load ?? 'not installed',
    settings: { ...plan, ranker_instances: instances, intra_op_threads: INTRA_OP_THREADS, rows_per_request: 1 },
  };
  const files = writeArtefacts(context, result);

  const table: [string, string][] = [];
  for (const contender of contenders) {
    for (const p of contender.points) {
      table.push([`${contender.name} ${loadLabel(p)}`, contender.kind === 'raw'
        ? `${p.rows_per_s.toFixed(0)} rows/s, mean ${p.mean_ms} / p50 ${p.p50_ms} / p99 ${p.p99_ms} ms`
        : describePoint(p)]);
    }
  }
  for (const name of Object.keys(TARGETS) as FigureName[]) {
    const figure = result.figures[name];
    table.push([name, `${figure.value ?? '–'} (target ${figure.target}: ${verdict(figure.met)})`]);
  }
  table.push(['h2load', describeH2load(result.h2load)]);
  const errors = contenders.reduce((n, c) => n + c.points.reduce((m, p) => m + p.errors, 0), 0);
  table.push(['failed requests', String(errors)]);
  table.push(['markdown', path.relative(process.cwd(), files.markdown)], ['plot', path.relative(process.cwd(), files.svg)]);
  return { json: { ...result }, table };
}

export const serveSuite: BenchSuite = {
  name: 'serve',
  description: 'hotpath (ctr_mlp batched/unbatched, ranker_mlp) vs an echo server and raw onnxruntime, node:http2 load (+ h2load check); ' +
    'with --threads 1,2,...: hotpath and an echo at each front-door thread count, h2load, best of --rounds (default 2)',
  options: ['threads', 'rounds'],
  async run(context: SuiteContext): Promise<SuiteReport> {
    try {
      if (context.threads !== undefined) return await runThreadsSweep(context, context.threads);
      if (context.rounds !== undefined) throw new Error('serve: --rounds applies to the threads sweep only (add --threads 1,2,...)');
      return await run(context);
    } finally {
      killAllChildren();
    }
  },
};
