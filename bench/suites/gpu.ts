// The gpu suite (issue 9): dense scoring on the native executor against
// onnxruntime-node on CPU. Contenders, each model in a fresh child process
// (bench/load/scoring-process.ts):
//   executor     the addon's executor on the CUDA device when deviceInfo()
//                says one is usable; otherwise its host kernels, reported as
//                device "none";
//   onnxruntime  onnxruntime-node's CPU provider, intraOpNumThreads = every core.
// Models: ranker_mlp (256-1024-1024-256-1) and a larger MLP, 256 -> 4 x 1024
// -> 1, generated in-process from a fixed seed. Batch sizes 1 ... 1024; per
// point rows/s, p50/p99 per run and executor / onnxruntime rows/s, plus the
// largest difference between the two contenders' outputs (same inputs).
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { deviceInfo } from '../../src/native/device.js';
import { Child, killAllChildren } from '../load/child-process.js';
import type { ScoringConfig, ScoringFacts, ScoringModel, ScoringPointRaw, ScoringResult } from '../load/scoring-process.js';
import { summarize } from '../report/latency.js';
import type { BenchSuite, SuiteContext, SuiteReport } from './suite.js';

const SCORING = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'load', 'scoring-process.js');

const MODELS: readonly ScoringModel[] = [
  { kind: 'sample', name: 'ranker_mlp', width: 256, layers: [256, 1024, 1024, 256, 1] },
  // Relu between the layers, a linear output (models/lib/mlp.ts); a GPU node's check
  // generates the same shape.
  { kind: 'mlp', name: 'mlp_4x1024', width: 256, layers: [256, 1024, 1024, 1024, 1024, 1], seed: 0x4b1024 },
];

interface Plan {
  readonly batchSizes: readonly number[];
  readonly warmupRuns: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  readonly minRuns: number;
  readonly maxRuns: number;
}

const PLANS: Readonly<Record<'quick' | 'full', Plan>> = {
  quick: { batchSizes: [1, 32, 1024], warmupRuns: 3, warmupMs: 100, durationMs: 400, minRuns: 3, maxRuns: 5_000 },
  full: { batchSizes: [1, 4, 16, 64, 256, 1024], warmupRuns: 10, warmupMs: 300, durationMs: 1_500, minRuns: 5, maxRuns: 50_000 },
};

interface ContenderPoint {
  readonly rows_per_s: number;
  readonly runs_per_s: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly mean_ms: number;
  readonly runs: number;
  /** Executor only: its own kernel time per run (p50), without the copies and the JS round trip. */
  readonly compute_p50_ms?: number;
}

interface GpuPoint {
  readonly model: string;
  readonly batch: number;
  readonly executor: ContenderPoint;
  readonly onnxruntime: ContenderPoint;
  /** executor rows/s / onnxruntime rows/s. */
  readonly ratio: number;
  /** max |executor - onnxruntime| over the last run's outputs (same inputs), and the same relative to max |onnxruntime|. */
  readonly max_abs_diff: number;
  readonly max_rel_diff: number;
}

function contenderPoint(raw: ScoringPointRaw): ContenderPoint {
  const summary = summarize(raw.latenciesMs);
  const runsPerSecond = raw.latenciesMs.length / (raw.elapsedMs / 1000);
  return {
    rows_per_s: Math.round(runsPerSecond * raw.batch * 10) / 10,
    runs_per_s: Math.round(runsPerSecond * 10) / 10,
    p50_ms: summary.p50_ms,
    p99_ms: summary.p99_ms,
    mean_ms: summary.mean_ms,
    runs: summary.count,
    ...(raw.computeMs !== undefined ? { compute_p50_ms: summarize(raw.computeMs).p50_ms } : {}),
  };
}

function outputDiff(a: Float32Array, b: Float32Array): { abs: number; rel: number } {
  if (a.length !== b.length) return { abs: Number.POSITIVE_INFINITY, rel: Number.POSITIVE_INFINITY };
  let abs = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i += 1) {
    abs = Math.max(abs, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return { abs, rel: scale > 0 ? abs / scale : abs };
}

async function runContender(context: SuiteContext, config: ScoringConfig): Promise<ScoringResult> {
  const label = `${config.contender} ${config.model.name}`;
  const child = new Child(SCORING, label);
  try {
    child.send({ type: 'start', config });
    // Generous: a slow host run of the large MLP at batch 1024 takes about a second.
    const budget = config.batchSizes.length * (config.durationMs + config.warmupMs + 60_000) + 60_000;
    const result = ((await child.next('done', budget)) as { result: ScoringResult }).result;
    context.log(`gpu: ${label}: ${result.facts.kernels}, loaded in ${Math.round(result.facts.loadMs)} ms`);
    return result;
  } finally {
    child.kill();
  }
}

const sci = (x: number) => (x === 0 ? '0' : x.toExponential(1));

async function run(context: SuiteContext): Promise<SuiteReport> {
  const plan = context.quick ? PLANS.quick : PLANS.full;
  const info = deviceInfo();
  const cuda = info.backend === 'cuda';
  const device = cuda ? info.name : 'none';
  const cores = os.cpus().length;
  context.log(`gpu: device ${cuda ? `${info.name} (CUDA): the executor runs on it` : `none (${info.name}): the executor runs on host kernels`}`);

  const points: GpuPoint[] = [];
  const facts: Record<string, { executor: ScoringFacts; onnxruntime: ScoringFacts }> = {};
  for (const model of MODELS) {
    const base = { model, deviceOrdinal: 0, intraOpThreads: cores, seed: 1234, ...plan } as const;
    const executor = await runContender(context, { ...base, contender: 'executor', device: cuda ? 'cuda' : 'host' });
    const onnxruntime = await runContender(context, { ...base, contender: 'onnxruntime', device: 'host' });
    facts[model.name] = { executor: executor.facts, onnxruntime: onnxruntime.facts };
    for (const [i, batch] of plan.batchSizes.entries()) {
      const e = executor.points[i]!;
      const o = onnxruntime.points[i]!;
      const ep = contenderPoint(e);
      const op = contenderPoint(o);
      const diff = outputDiff(e.output, o.output);
      const point: GpuPoint = {
        model: model.name, batch, executor: ep, onnxruntime: op,
        ratio: Math.round((ep.rows_per_s / op.rows_per_s) * 1000) / 1000,
        max_abs_diff: diff.abs, max_rel_diff: diff.rel,
      };
      context.log(`gpu: ${model.name} b=${batch}: executor ${ep.rows_per_s.toFixed(0)} rows/s (p50 ${ep.p50_ms} ms), ` +
        `onnxruntime ${op.rows_per_s.toFixed(0)} rows/s (p50 ${op.p50_ms} ms), ratio ${point.ratio}, max diff ${sci(diff.abs)}`);
      points.push(point);
    }
  }

  const json = {
    suite: 'gpu',
    device,
    ...(cuda ? {} : { device_reason: info.name }),
    models: MODELS.map((m) => {
      const parameters = m.layers.slice(1).reduce((n, out, i) => n + out * (m.layers[i]! + 1), 0);
      return { name: m.name, layers: m.layers, parameters, ...(m.kind === 'mlp' ? { generated: true, seed: m.seed } : {}) };
    }),
    contenders: {
      executor: {
        device: cuda ? 'cuda' : 'host',
        description: cuda
          ? `the native executor on ${info.name}: one instance, one stream; latency = one run (copy in, kernels, copy out, sync) from JS`
          : 'the native executor on host kernels (no usable CUDA device): one instance thread; latency = one run from JS',
        facts: Object.fromEntries(Object.entries(facts).map(([name, f]) => [name, f.executor])),
      },
      onnxruntime: {
        device: 'cpu',
        description: `onnxruntime-node CPU provider, intraOpNumThreads ${cores} (every core), sequential, graphOptimizationLevel all; ` +
          'latency = tensor creation, session.run and output read',
        facts: Object.fromEntries(Object.entries(facts).map(([name, f]) => [name, f.onnxruntime])),
      },
    },
    points,
    settings: { ...plan, cores, process_per_contender_and_model: true },
  };

  const table: [string, string][] = [['device', cuda ? `${info.name} (executor on CUDA)` : `none: executor on host kernels (${info.name})`]];
  for (const p of points) {
    table.push([`${p.model} b=${p.batch}`,
      `executor ${p.executor.rows_per_s.toFixed(0)} rows/s p50 ${p.executor.p50_ms} / p99 ${p.executor.p99_ms} ms | ` +
      `onnxruntime ${p.onnxruntime.rows_per_s.toFixed(0)} rows/s p50 ${p.onnxruntime.p50_ms} / p99 ${p.onnxruntime.p99_ms} ms | ` +
      `ratio ${p.ratio} | diff ${sci(p.max_abs_diff)}`]);
  }
  return { json, table };
}

export const gpuSuite: BenchSuite = {
  name: 'gpu',
  description: 'dense scoring: the native executor (CUDA, else host kernels) vs onnxruntime CPU, batch 1..1024',
  async run(context: SuiteContext): Promise<SuiteReport> {
    try {
      return await run(context);
    } finally {
      killAllChildren();
    }
  },
};
