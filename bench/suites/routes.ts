// The routes suite (issue 13): what a slow shadow costs the primary. One
// server (--routes, --enable-fault-injection) serves ctr_mlp and a copy of it,
// ctr_mlp_shadow, whose config adds hotpath_fault_delay_ms (a slow model), and
// a routes file with two routes over ctr_mlp:
//   route          one arm, no shadow;
//   route+shadow   the same arm, plus `shadow: {model: ctr_mlp_shadow, percent}`;
// and, as a reference, ctr_mlp called directly (no route). The three
// contenders take turns (the order rotates each round) under the same closed
// loop load from a fresh load-generator process per trial, so drift on a
// shared machine falls on all three alike. The figure is the primary's p99
// with the slow shadow over its p99 without (target <= 1.10): medians over
// the rounds, each round's p99 from its own trial.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { atExit, killAllChildren } from '../load/child-process.js';
import { grpcFrame, MODEL_INFER_PATH } from '../../src/perf/grpc-frames.js';
import { checkInferResponse, connect, encodeInferRequests, modelStatistics, waitForReady, type InferShape } from '../load/infer-client.js';
import { readModel, renameModel } from '../load/model-repository.js';
import { startServer, type ServerProcess } from '../load/server-process.js';
import { closedPoint, type LoadTarget, type PointSettings } from '../load/trials.js';
import type { ServePoint } from '../report/serve-result.js';
import type { BenchSuite, SuiteContext, SuiteReport } from './suite.js';
import { scrape } from '../load/metrics-scrape.js';

const PRIMARY = 'ctr_mlp';
const SHADOW = 'ctr_mlp_shadow';
const CTR: InferShape = { model: PRIMARY, input: 'features', output: 'score', rows: 1, width: 32 };
/**
 * The server's --shadow-queue-size (default 256). The shadow's work rate is set
 * by --shadow-concurrency (default 2, kept) and its delay, not by the queue;
 * a short queue only drops more, and drains in ~0.5 s between trials instead of ~4 s.
 */
const SHADOW_QUEUE_SIZE = 32;
/** p99 with the slow shadow / p99 without: at most this (issue 13, "Done when"). */
const P99_TARGET = 1.1;

interface Plan {
  readonly concurrency: readonly number[];
  readonly rounds: number;
  readonly serverWarmupMs: number;
  readonly point: PointSettings;
  /** The shadow model's added latency (hotpath_fault_delay_ms) and the route's shadow percent. */
  readonly shadowDelayMs: number;
  readonly shadowPercent: number;
}

const POINT: Omit<PointSettings, 'warmupMs' | 'durationMs'> = { loaders: 1, connections: 1, maxRequestsPerLoader: 1_000_000, stallMs: 10_000, client: 'raw' };
const PLANS: Readonly<Record<'quick' | 'full', Plan>> = {
  quick: { concurrency: [16], rounds: 5, serverWarmupMs: 1500, point: { ...POINT, warmupMs: 300, durationMs: 1500 }, shadowDelayMs: 30, shadowPercent: 10 },
  full: { concurrency: [1, 16, 64], rounds: 5, serverWarmupMs: 3000, point: { ...POINT, warmupMs: 500, durationMs: 3000 }, shadowDelayMs: 30, shadowPercent: 10 },
};

type ContenderName = 'direct' | 'route' | 'route+shadow';
const CONTENDERS: readonly { name: ContenderName; modelName: string; description: string }[] = [
  { name: 'direct', modelName: PRIMARY, description: `${PRIMARY} called by its model name (no route): the reference` },
  { name: 'route', modelName: 'scorer', description: `route 'scorer': one arm (${PRIMARY}), no shadow` },
  { name: 'route+shadow', modelName: 'scorer_shadowed', description: `route 'scorer_shadowed': the same arm, plus a shadow on ${SHADOW} (slow: hotpath_fault_delay_ms)` },
];

/** Shadow counters over one trial (hotpath_shadow_*_total deltas, summed over their labels). */
interface ShadowCounts {
  /** Accepted into the shadow queue (hotpath_shadow_requests_total); offered = requests + dropped. */
  readonly requests: number;
  readonly dropped: number;
  readonly errors: number;
  /** ModelStatistics successes of the shadow model. */
  readonly completed: number;
}

interface Trial extends ServePoint {
  readonly round: number;
  readonly shadow?: ShadowCounts;
}

interface Summary {
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly throughput_rps: number;
  readonly errors: number;
}

function routesYaml(plan: Plan): string {
  return [
    '# Written by bench/suites/routes.ts.',
    'routes:',
    '  scorer:',
    '    arms:',
    `      stable: { model: ${PRIMARY}, weight: 100 }`,
    '  scorer_shadowed:',
    '    arms:',
    `      stable: { model: ${PRIMARY}, weight: 100 }`,
    `    shadow: { model: ${SHADOW}, percent: ${plan.shadowPercent} }`,
    '',
  ].join('\n');
}

/** A temp directory holding `repository/` (ctr_mlp and its slow copy) and `routes.yaml`. */
function writeSetup(root: string, plan: Plan): { repository: string; routes: string; remove(): void } {
  const source = readModel(path.join(root, 'models'), PRIMARY);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hotpath-bench-routes-'));
  const repository = path.join(dir, 'repository');
  const slow = `${renameModel(source.config, SHADOW)}\nparameters { key: "hotpath_fault_delay_ms" value: { string_value: "${plan.shadowDelayMs}" } }\n`;
  for (const [name, config] of [[PRIMARY, source.config], [SHADOW, slow]] as const) {
    mkdirSync(path.join(repository, name, '1'), { recursive: true });
    writeFileSync(path.join(repository, name, 'config.pbtxt'), config);
    copyFileSync(source.modelPath, path.join(repository, name, '1', 'model.onnx'));
  }
  const routes = path.join(dir, 'routes.yaml');
  writeFileSync(routes, routesYaml(plan));
  return { repository, routes, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Sum of every series of `name` (any labels). */
function total(metrics: Map<string, number>, name: string): number {
  let sum = 0;
  for (const [key, value] of metrics) if (key === name || key.startsWith(`${name}{`)) sum += value;
  return sum;
}

interface ShadowSnapshot {
  readonly metrics: Map<string, number>;
  readonly completed: number;
}

async function shadowSnapshot(server: ServerProcess, stats: ReturnType<typeof connect>): Promise<ShadowSnapshot> {
  return { metrics: await scrape(server.metricsPort), completed: (await modelStatistics(stats, SHADOW)).successCount };
}

function shadowDelta(before: ShadowSnapshot, after: ShadowSnapshot): ShadowCounts {
  const delta = (name: string) => total(after.metrics, name) - total(before.metrics, name);
  return {
    requests: delta('hotpath_shadow_requests_total'),
    dropped: delta('hotpath_shadow_dropped_total'),
    errors: delta('hotpath_shadow_errors_total'),
    completed: after.completed - before.completed,
  };
}

/** Waits until hotpath_shadow_queue_size reads 0, then for the running jobs (each takes the added delay and a run). */
async function drainShadowQueue(server: ServerProcess, delayMs: number): Promise<void> {
  const giveUpAt = Date.now() + 30_000;
  while (total(await scrape(server.metricsPort), 'hotpath_shadow_queue_size') > 0) {
    if (Date.now() > giveUpAt) throw new Error('routes: the shadow queue did not drain within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, Math.max(50, delayMs * 3)));
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const round = (x: number, digits: number) => (Number.isFinite(x) ? Number(x.toFixed(digits)) : null);

function summarise(trials: readonly Trial[]): Summary {
  return {
    p50_ms: median(trials.map((t) => t.p50_ms)),
    p99_ms: median(trials.map((t) => t.p99_ms)),
    throughput_rps: Math.round(median(trials.map((t) => t.throughput_rps))),
    errors: trials.reduce((n, t) => n + t.errors, 0),
  };
}

/** The plan, with HOTPATH_BENCH_SHADOW_PERCENT, HOTPATH_BENCH_SHADOW_DELAY_MS and HOTPATH_BENCH_ROUNDS applied (to explore). */
function planFor(quick: boolean): Plan {
  const base = quick ? PLANS.quick : PLANS.full;
  const env = (name: string, fallback: number, min: number, max: number): number => {
    const raw = process.env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || value > max) throw new Error(`${name} must be a number in [${min}, ${max}], got '${raw}'`);
    return value;
  };
  return {
    ...base,
    shadowPercent: env('HOTPATH_BENCH_SHADOW_PERCENT', base.shadowPercent, 0, 100),
    shadowDelayMs: Math.round(env('HOTPATH_BENCH_SHADOW_DELAY_MS', base.shadowDelayMs, 0, 10_000)),
    rounds: Math.round(env('HOTPATH_BENCH_ROUNDS', base.rounds, 1, 100)),
  };
}

async function run(context: SuiteContext): Promise<SuiteReport> {
  const plan = planFor(context.quick);
  const setup = writeSetup(context.root, plan);
  const forget = atExit(setup.remove);
  let server: ServerProcess | undefined;
  const stats = { client: undefined as ReturnType<typeof connect> | undefined };
  try {
    context.log(`routes: starting the server (${PRIMARY}, ${SHADOW} +${plan.shadowDelayMs} ms, --routes) ...`);
    server = await startServer(context.root, setup.repository, [
      '--enable-fault-injection', '--routes', setup.routes, '--intra-op-threads', '1', '--log-level', 'info',
      '--shadow-queue-size', String(SHADOW_QUEUE_SIZE),
    ], 120_000);
    stats.client = connect(server.address);
    await waitForReady(stats.client, 10_000);
    const targets = new Map(CONTENDERS.map((c) => {
      const target: LoadTarget = {
        address: server!.address, path: MODEL_INFER_PATH, body: grpcFrame(encodeInferRequests({ ...CTR, model: c.modelName }, 1, 17)[0]!),
        statistics: { client: stats.client!, model: PRIMARY },
      };
      return [c.name, target] as const;
    }));
    // Unmeasured load on every path (the shadow's too), so the JIT is warm before the first trial.
    for (const c of CONTENDERS) {
      const warm = await closedPoint(targets.get(c.name)!, 16, 1, { ...plan.point, warmupMs: 0, durationMs: plan.serverWarmupMs / CONTENDERS.length });
      checkInferResponse(Buffer.from(warm.sampleResponse), CTR);
    }
    await drainShadowQueue(server, plan.shadowDelayMs);

    const trials = new Map<ContenderName, Trial[]>(CONTENDERS.map((c) => [c.name, []]));
    for (const concurrency of plan.concurrency) {
      for (let r = 0; r < plan.rounds; r += 1) {
        // Rotate the order each round: no contender always runs first (or right after the shadowed one).
        const order = CONTENDERS.map((_, i) => CONTENDERS[(i + r) % CONTENDERS.length]!);
        for (const c of order) {
          const before = c.name === 'route+shadow' ? await shadowSnapshot(server, stats.client) : undefined;
          const measured = await closedPoint(targets.get(c.name)!, concurrency, 1, plan.point).catch((err: unknown) => {
            throw new Error(`routes: ${c.name} c=${concurrency}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
          });
          let shadow: ShadowCounts | undefined;
          if (before !== undefined) {
            // The shadow's queue drains after the point, before the next trial (its work must not fall on another contender).
            await drainShadowQueue(server, plan.shadowDelayMs);
            shadow = shadowDelta(before, await shadowSnapshot(server, stats.client));
          }
          const trial: Trial = { ...measured.point, round: r, ...(shadow ? { shadow } : {}) };
          trials.get(c.name)!.push(trial);
          const p = measured.point;
          context.log(`routes: ${c.name} c=${concurrency} round ${r + 1}: ${p.throughput_rps.toFixed(0)} req/s, p50 ${p.p50_ms} / p99 ${p.p99_ms} ms` +
            `${p.errors ? `, ${p.errors} errors (${p.error_samples?.[0] ?? ''})` : ''}` +
            `${shadow ? `; shadow ${shadow.requests} accepted, ${shadow.dropped} dropped, ${shadow.completed} completed, ${shadow.errors} errors` : ''}`);
        }
      }
    }

    const byConcurrency = plan.concurrency.map((concurrency) => {
      const of = (name: ContenderName) => trials.get(name)!.filter((t) => t.concurrency === concurrency);
      const summaries = Object.fromEntries(CONTENDERS.map((c) => [c.name, summarise(of(c.name))])) as Record<ContenderName, Summary>;
      const shadowTrials = of('route+shadow').map((t) => t.shadow!);
      const shadow = {
        requests: shadowTrials.reduce((n, s) => n + s.requests, 0),
        dropped: shadowTrials.reduce((n, s) => n + s.dropped, 0),
        completed: shadowTrials.reduce((n, s) => n + s.completed, 0),
        errors: shadowTrials.reduce((n, s) => n + s.errors, 0),
      };
      const p99Ratio = summaries['route+shadow'].p99_ms / summaries.route.p99_ms;
      return {
        concurrency,
        summaries,
        shadow,
        p99_ratio: round(p99Ratio, 3),
        p50_ratio: round(summaries['route+shadow'].p50_ms / summaries.route.p50_ms, 3),
        throughput_ratio: round(summaries['route+shadow'].throughput_rps / summaries.route.throughput_rps, 3),
        route_vs_direct_p50_us: round((summaries.route.p50_ms - summaries.direct.p50_ms) * 1000, 1),
        met: Number.isFinite(p99Ratio) ? p99Ratio <= P99_TARGET : null,
      };
    });

    const json = {
      suite: 'routes',
      target: { figure: 'p99_ratio = p99(route+shadow) / p99(route), medians over rounds', max: P99_TARGET },
      figures: byConcurrency,
      contenders: CONTENDERS.map((c) => ({ ...c, trials: trials.get(c.name) })),
      settings: { ...plan, shadow_queue_size: SHADOW_QUEUE_SIZE, routes: routesYaml(plan), shadow_model: SHADOW, primary_model: PRIMARY, rows_per_request: 1, intra_op_threads: 1 },
    };
    const table: [string, string][] = [];
    for (const f of byConcurrency) {
      for (const c of CONTENDERS) {
        const s = f.summaries[c.name];
        table.push([`${c.name} c=${f.concurrency}`, `${s.throughput_rps} req/s, p50 ${s.p50_ms} / p99 ${s.p99_ms} ms${s.errors ? `, ${s.errors} errors` : ''}`]);
      }
      table.push([`p99 ratio c=${f.concurrency}`, `${f.p99_ratio} (target <= ${P99_TARGET}: ${f.met === null ? '–' : f.met ? 'PASS' : 'FAIL'})`]);
      table.push([`p50 ratio c=${f.concurrency}`, String(f.p50_ratio)]);
      table.push([`throughput ratio c=${f.concurrency}`, String(f.throughput_ratio)]);
      table.push([`shadow c=${f.concurrency}`, `${f.shadow.requests} accepted, ${f.shadow.dropped} dropped, ${f.shadow.completed} completed, ${f.shadow.errors} errors`]);
      table.push([`route overhead p50 c=${f.concurrency}`, `${f.route_vs_direct_p50_us} µs`]);
    }
    return { json, table };
  } finally {
    stats.client?.close();
    await server?.stop();
    setup.remove();
    forget();
  }
}

export const routesSuite: BenchSuite = {
  name: 'routes',
  description: 'primary p50/p99 through a route without and with a slow shadow (issue 13), same server, same load',
  async run(context: SuiteContext): Promise<SuiteReport> {
    try {
      return await run(context);
    } finally {
      killAllChildren();
    }
  },
};
