// The serve suite (issue 4): ranker_mlp over gRPC against the limit of
// onnxruntime itself. Contenders, each in fresh processes:
//   ort-raw           onnxruntime-node called directly in one process, the
//                     server workers' session options, batch sizes swept;
//   hotpath-unbatched the server, config without dynamic_batching;
//   hotpath-batched   the server, config as checked in (dynamic_batching).
// Each hotpath contender gets its own server process and temp repository;
// each point gets fresh load-generator processes (grpc-js), closed-loop
// (concurrency sweep) then open-loop Poisson. Mean batch size and the queued
// share come from the server's ModelStatistics, never from assumptions.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { atExit, killAllChildren } from '../load/child-process.js';
import { connect, waitForReady, type InferShape } from '../load/infer-client.js';
import type { LoadShape } from '../load/messages.js';
import { hasDynamicBatching, instanceCount, readModel, withoutDynamicBatching, writeTempRepository } from '../load/model-repository.js';
import { startServer } from '../load/server-process.js';
import { hotpathPoint, rawOrtPoints, type PointSettings } from '../load/trials.js';
import { ratioVerdict, renderServeMarkdown } from '../report/serve-markdown.js';
import { computeRatios } from '../report/serve-ratios.js';
import { loadLabel, TARGETS, type RatioName, type ServeContender, type ServePoint, type ServeResult } from '../report/serve-result.js';
import { renderServeSvg } from '../report/serve-svg.js';
import type { BenchSuite, SuiteContext, SuiteReport } from './suite.js';

const MODEL = 'ranker_mlp';
const INFER: InferShape = { model: MODEL, input: 'features', output: 'score', rows: 1, width: 256 };
/** The server's default, passed explicitly so the raw contender provably matches it. */
const INTRA_OP_THREADS = 1;

interface Plan {
  readonly concurrency: readonly number[];
  readonly rates: readonly number[];
  readonly point: PointSettings;
  readonly rawBatches: readonly number[];
  readonly rawDurationMs: number;
}

const PLANS: Readonly<Record<'quick' | 'full', Plan>> = {
  quick: {
    concurrency: [1, 8, 64],
    rates: [200, 800],
    point: { warmupMs: 300, durationMs: 1500, loaders: 2, maxRequestsPerLoader: 100_000, maxInFlight: 512, deadlineMs: 10_000 },
    rawBatches: [1, 8, 32, 64, 128],
    rawDurationMs: 600,
  },
  full: {
    concurrency: [1, 2, 4, 8, 16, 32, 64, 128],
    rates: [100, 200, 400, 800, 1600, 3200],
    point: { warmupMs: 1000, durationMs: 5000, loaders: 2, maxRequestsPerLoader: 500_000, maxInFlight: 1024, deadlineMs: 10_000 },
    rawBatches: [1, 2, 4, 8, 16, 32, 64, 128],
    rawDurationMs: 2000,
  },
};

function describePoint(p: ServePoint): string {
  const batch = p.mean_batch === null ? '–' : p.mean_batch.toFixed(2);
  const queued = p.queue_share === undefined || p.queue_share === null ? '' : `, queued ${(p.queue_share * 100).toFixed(1)}%`;
  const errors = p.errors > 0 ? `, ${p.errors} errors (${p.error_samples?.[0] ?? ''})` : '';
  const dropped = p.dropped ? `, ${p.dropped} dropped` : '';
  return `${p.throughput_rps.toFixed(0)} req/s, ${p.rows_per_s.toFixed(0)} rows/s, p50 ${p.p50_ms} / p99 ${p.p99_ms} / p99.9 ${p.p999_ms} ms, batch ${batch}${queued}${errors}${dropped}`;
}

async function hotpathContender(
  context: SuiteContext,
  plan: Plan,
  name: string,
  description: string,
  config: string,
): Promise<ServeContender> {
  const repository = writeTempRepository(path.join(context.root, 'models'), MODEL, config);
  const forget = atExit(repository.remove);
  const points: ServePoint[] = [];
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    context.log(`serve: ${name}: starting the server ...`);
    server = await startServer(context.root, repository.dir, ['--intra-op-threads', String(INTRA_OP_THREADS), '--log-level', 'info'], 120_000);
    const stats = connect(server.address);
    try {
      await waitForReady(stats, 10_000);
      const loads: LoadShape[] = [
        ...plan.concurrency.map((concurrency): LoadShape => ({ kind: 'closed', concurrency })),
        ...plan.rates.map((ratePerSecond, i): LoadShape => ({ kind: 'open', ratePerSecond, seed: 101 + i })),
      ];
      for (const load of loads) {
        const label = load.kind === 'closed' ? `c=${load.concurrency}` : `λ=${load.ratePerSecond}/s`;
        const point = await hotpathPoint(server.address, stats, INFER, load, plan.point).catch((err: unknown) => {
          throw new Error(`serve: ${name} ${label}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        });
        context.log(`serve: ${name} ${loadLabel(point)}: ${describePoint(point)}`);
        points.push(point);
      }
    } finally {
      stats.close();
    }
  } finally {
    await server?.stop();
    repository.remove();
    forget();
  }
  return { name, kind: 'hotpath', description, points };
}

function writeArtefacts(context: SuiteContext, result: ServeResult): { markdown: string; svg: string } {
  const base = context.outputFile.replace(/\.json$/i, '');
  const markdown = `${base}.md`;
  const svg = `${base}.svg`;
  const host = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
  const title = `serve: ${MODEL}${context.quick ? ' (quick)' : ''}, ${new Date().toISOString().slice(0, 16)}Z`;
  mkdirSync(path.dirname(markdown), { recursive: true });
  writeFileSync(markdown, renderServeMarkdown(result, `${title} on ${host}`) + `\n![latency vs throughput](${path.basename(svg)})\n`);
  writeFileSync(svg, renderServeSvg(result.contenders, `${title}: latency vs throughput`));
  return { markdown, svg };
}

async function run(context: SuiteContext): Promise<SuiteReport> {
  const plan = context.quick ? PLANS.quick : PLANS.full;
  const models = path.join(context.root, 'models');
  if (!existsSync(path.join(models, MODEL, '1', 'model.onnx'))) {
    context.log(`serve: generating models/${MODEL}/1/model.onnx ...`);
    spawnSync(process.execPath, [path.join(context.root, 'dist', 'models', 'generate.js'), '--missing-only'], { cwd: context.root, stdio: 'inherit' });
  }
  const { config, modelPath } = readModel(models, MODEL);
  if (!hasDynamicBatching(config)) throw new Error(`models/${MODEL}/config.pbtxt has no dynamic_batching block to compare against`);
  const instances = instanceCount(config);

  const contenders: ServeContender[] = [];
  const sessionCounts = instances > 1 ? [1, instances] : [1];
  for (const sessions of sessionCounts) {
    const name = sessions === 1 ? 'ort-raw' : `ort-raw-x${sessions}`;
    context.log(`serve: ${name}: onnxruntime-node in one process, ${sessions} session(s), intraOpNumThreads ${INTRA_OP_THREADS} ...`);
    const points = await rawOrtPoints({
      modelPath, input: INFER.input, width: INFER.width, batchSizes: plan.rawBatches, sessions,
      intraOpThreads: INTRA_OP_THREADS, warmupRuns: 10, durationMs: plan.rawDurationMs, maxRuns: 200_000, seed: 7,
    });
    for (const p of points) context.log(`serve: ${name} ${loadLabel(p)}: ${p.throughput_rps.toFixed(0)} runs/s, ${p.rows_per_s.toFixed(0)} rows/s, p50 ${p.p50_ms} / p99 ${p.p99_ms} ms`);
    contenders.push({
      name, kind: 'raw', points,
      description: `onnxruntime-node ${sessions === 1 ? 'in one process' : `with ${sessions} sessions on ${sessions} threads`}, ` +
        `intraOpNumThreads ${INTRA_OP_THREADS}, interOpNumThreads 1, sequential (the server workers' options); no network. ` +
        'Latency is one session.run (tensor creation, run, output read).',
    });
  }
  const setup = `${instances} instance(s), --intra-op-threads ${INTRA_OP_THREADS}; requests of ${INFER.rows} row x ${INFER.width} FP32 from ${plan.point.loaders} grpc-js load-generator processes on 127.0.0.1`;
  contenders.push(await hotpathContender(context, plan, 'hotpath-unbatched',
    `hotpath, config.pbtxt without dynamic_batching; ${setup}.`, withoutDynamicBatching(config)));
  contenders.push(await hotpathContender(context, plan, 'hotpath-batched',
    `hotpath, config.pbtxt as checked in (dynamic_batching); ${setup}.`, config));

  const byName = (name: string) => contenders.find((c) => c.name === name);
  const rawLimit = byName(instances > 1 ? `ort-raw-x${instances}` : 'ort-raw');
  const ratios = {
    ...computeRatios(byName('hotpath-batched'), byName('hotpath-unbatched'), rawLimit),
    // p50 overhead is always against one session at batch 1: a lone request is one run.
    p50_overhead_ms_c1: computeRatios(byName('hotpath-batched'), undefined, byName('ort-raw')).p50_overhead_ms_c1,
  };
  const result: ServeResult = {
    suite: 'serve',
    model: MODEL,
    contenders,
    ratios,
    targets: TARGETS,
    settings: { ...plan, instances, intra_op_threads: INTRA_OP_THREADS, rows_per_request: INFER.rows, raw_limit: rawLimit?.name },
  };
  const files = writeArtefacts(context, result);

  const table: [string, string][] = [];
  for (const contender of contenders) {
    for (const p of contender.points) {
      table.push([`${contender.name} ${loadLabel(p)}`, contender.kind === 'raw'
        ? `${p.rows_per_s.toFixed(0)} rows/s, p50 ${p.p50_ms} / p99 ${p.p99_ms} ms`
        : describePoint(p)]);
    }
  }
  for (const name of Object.keys(TARGETS) as RatioName[]) {
    const target = TARGETS[name];
    table.push([name, `${ratios[name] ?? '–'} (target ${target.op} ${target.value}: ${ratioVerdict(name, ratios[name])})`]);
  }
  table.push(['markdown', path.relative(process.cwd(), files.markdown)], ['plot', path.relative(process.cwd(), files.svg)]);
  return { json: { ...result }, table };
}

export const serveSuite: BenchSuite = {
  name: 'serve',
  description: 'ranker_mlp over gRPC: batched vs unbatched hotpath vs raw onnxruntime (closed + open loop)',
  async run(context: SuiteContext): Promise<SuiteReport> {
    try {
      return await run(context);
    } finally {
      killAllChildren();
    }
  },
};
