// The patrol suite (issue 6): the leak patrol under open-loop load. One server
// process on a temp repository holding ctr_mlp with an injected leak confined
// to the first worker generation (so the patrol's rolling restart cures it);
// one load-generator process sending Poisson arrivals at a fixed rate for a
// fixed time: a steady phase while the leak grows, the patrol's trigger, the
// restart, and a phase after it. Every request's scheduled send time, latency
// (from the scheduled time) and outcome is kept; the trigger and the restart's
// completion come from the server's JSON log lines (their `time`), the ledger
// from its /metrics. Everything is on 127.0.0.1, bounded in count and time,
// and every child is killed when the suite ends or fails.
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { atExit, Child, killAllChildren } from '../load/child-process.js';
import { startServer, type ServerProcess } from '../load/server-process.js';
import type { PatrolLoaderConfig, PatrolLoaderResult } from '../load/patrol-loader-process.js';
import type { InferShape } from '../load/infer-client.js';
import {
  PATROL_DETECTED_MSG,
  PATROL_RESTARTED_MSG,
  PATROL_TARGETS,
  patrolEvents,
  patrolFigures,
  patrolVerdicts,
  type PhaseSummary,
} from '../report/patrol-result.js';
import type { BenchSuite, SuiteContext, SuiteReport } from './suite.js';
import { scrape } from '../load/metrics-scrape.js';

const MODEL = 'ctr_mlp';
const INFER: InferShape = { model: MODEL, input: 'features', output: 'score', rows: 1, width: 32 };

interface Plan {
  readonly leakBytesPerBatch: string;
  readonly serverArgs: readonly string[];
  readonly ratePerSecond: number;
  readonly durationMs: number;
}

// At 200 req/s each batch (dynamic batching coalesces a few requests) leaks
// 16 KiB in the arena plus a 16 KiB Buffer (the patrol counts both), a few
// MiB/s: the 16 MiB threshold is crossed a few seconds into the load. The
// growth trigger is set out of reach so the threshold is what fires.
const PATROL_ARGS = ['--enable-fault-injection', '--patrol-interval', '0.5', '--patrol-leak-threshold', '16MiB', '--patrol-growth-rate', '1GiB'];
const PLANS: Readonly<Record<'quick' | 'full', Plan>> = {
  quick: { leakBytesPerBatch: '32KiB', serverArgs: PATROL_ARGS, ratePerSecond: 200, durationMs: 12_000 },
  full: { leakBytesPerBatch: '16KiB', serverArgs: PATROL_ARGS, ratePerSecond: 200, durationMs: 24_000 },
};
const SEED = 606;
const DEADLINE_MS = 10_000;
/** Nothing in the suite may take longer than this; then every child is killed. */
const SUITE_TIMEOUT_MS = 120_000;

/** The default tenant's allocated + reserved arena bytes. */
function ledgerBytes(metrics: Map<string, number>): number {
  return (metrics.get('hotpath_arena_allocated_bytes{tenant="default",memory="host"}') ?? 0) + (metrics.get('hotpath_arena_reserved_bytes{tenant="default",memory="host"}') ?? 0);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function describePhase(p: PhaseSummary): string {
  return `${p.requests} requests (${p.failed} failed, ${p.dropped} dropped), p50 ${p.p50_ms ?? '–'} / p99 ${p.p99_ms ?? '–'} / max ${p.max_ms ?? '–'} ms`;
}

async function run(context: SuiteContext): Promise<SuiteReport> {
  const plan = context.quick ? PLANS.quick : PLANS.full;
  const leakParameters = { hotpath_fault_leak_bytes_per_batch: plan.leakBytesPerBatch, hotpath_fault_leak_generations: '1' };
  const dir = mkdtempSync(path.join(os.tmpdir(), `hotpath-bench-patrol-`));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  const forget = atExit(remove);
  let server: ServerProcess | undefined;
  let loader: Child | undefined;
  try {
    await writeSampleRepository(dir, { only: [MODEL] });
    appendFileSync(path.join(dir, MODEL, 'config.pbtxt'), Object.entries(leakParameters)
      .map(([key, value]) => `\nparameters { key: "${key}" value: { string_value: "${value}" } }\n`).join(''));
    context.log(`patrol: starting the server (${MODEL}, leak ${plan.leakBytesPerBatch}/batch in generation 1; ${plan.serverArgs.join(' ')}) ...`);
    server = await startServer(context.root, dir, [...plan.serverArgs, '--log-level', 'info'], 60_000);
    const ledgerBefore = ledgerBytes(await scrape(server.metricsPort));

    loader = new Child(path.join(context.root, 'dist', 'bench', 'load', 'patrol-loader-process.js'), 'patrol load generator');
    const config: PatrolLoaderConfig = {
      address: server.address, infer: INFER, ratePerSecond: plan.ratePerSecond, durationMs: plan.durationMs, seed: SEED,
      maxRequests: Math.ceil((plan.ratePerSecond * plan.durationMs) / 1000) * 2, maxInFlight: 1024, deadlineMs: DEADLINE_MS, warmupRequests: 20,
    };
    loader.send({ type: 'start', config });
    await loader.next('ready', 30_000);
    context.log(`patrol: open loop at ${plan.ratePerSecond}/s (Poisson) for ${plan.durationMs / 1000} s ...`);
    loader.send({ type: 'go' });
    const done = await loader.next('done', plan.durationMs + DEADLINE_MS + 15_000);
    const requests = (done as { result: PatrolLoaderResult }).result;

    // Log lines may trail the load by a moment; the ledger after is read with no load in flight.
    await sleep(300);
    const metrics = await scrape(server.metricsPort);
    const ledgerAfter = ledgerBytes(metrics);
    const restartsTotal = [...metrics].filter(([key]) => key.startsWith(`hotpath_patrol_restarts_total{model="${MODEL}"`)).reduce((sum, [, v]) => sum + v, 0);
    const events = patrolEvents(server.lines);
    const figures = patrolFigures(requests, events);
    const verdicts = patrolVerdicts(figures);
    if (events.triggerEpochMs === undefined) context.log(`patrol: no '${PATROL_DETECTED_MSG}' line during the load`);
    else if (events.restartedEpochMs === undefined) context.log(`patrol: no '${PATROL_RESTARTED_MSG}' line after the trigger`);

    const json = {
      suite: 'patrol' as const,
      detection_s: figures.detection_s,
      restart_s: figures.restart_s,
      failed_requests: figures.failed_requests,
      p99_ms_steady: figures.p99_ms_steady,
      p99_ms_during_restart: figures.p99_ms_during_restart,
      ledger_bytes_before: ledgerBefore,
      ledger_bytes_after: ledgerAfter,
      targets: PATROL_TARGETS,
      verdicts,
      pass: verdicts.every((v) => v.pass),
      detail: {
        trigger_reason: events.triggerReason ?? null,
        restart_total_ms: events.restartTotalMs ?? null,
        restart_switch_ms: events.restartSwitchMs ?? null,
        freed_bytes: events.freedBytes ?? null,
        restart_failed: events.restartFailed,
        patrol_restarts_total: restartsTotal,
        phases: figures.phases,
        error_samples: requests.errorSamples,
      },
      settings: {
        model: MODEL,
        leak: leakParameters,
        server_args: plan.serverArgs,
        rate_per_s: plan.ratePerSecond,
        duration_ms: plan.durationMs,
        requests_scheduled: requests.sendOffsetsMs.length,
        deadline_ms: DEADLINE_MS,
        seed: SEED,
        note: 'latency from each request\'s scheduled send time; phases by scheduled send time (steady < trigger <= during < restart complete <= after); ' +
          'ledger before: after the server is ready, before any load; after: once the load has ended',
      },
    };
    const table: [string, string][] = [
      ['detection_s', `${json.detection_s ?? '–'} (reason ${events.triggerReason ?? '–'})`],
      ['restart_s', `${json.restart_s ?? '–'} (server total_ms ${events.restartTotalMs ?? '–'}, switch_ms ${events.restartSwitchMs ?? '–'})`],
      ['steady', describePhase(figures.phases.steady)],
      ['during restart', describePhase(figures.phases.during_restart)],
      ['after restart', describePhase(figures.phases.after_restart)],
      ['ledger bytes', `before ${ledgerBefore}, after ${ledgerAfter} (freed ${events.freedBytes ?? '–'})`],
      ['patrol restarts', String(restartsTotal)],
      ...verdicts.map((v): [string, string] => [v.target, `${v.measured}: ${v.pass ? 'PASS' : 'FAIL'}`]),
    ];
    return { json, table };
  } finally {
    loader?.kill();
    await server?.stop();
    remove();
    forget();
  }
}

export const patrolSuite: BenchSuite = {
  name: 'patrol',
  description: 'leak patrol under open-loop load: detection, rolling restart, latency and failures around it',
  async run(context: SuiteContext): Promise<SuiteReport> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        run(context),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`patrol: gave up after ${SUITE_TIMEOUT_MS / 1000} s`)), SUITE_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      killAllChildren();
    }
  },
};
