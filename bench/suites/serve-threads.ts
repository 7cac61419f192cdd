// The serve suite's front-door threads sweep (issue 20, item 5):
// `npm run bench -- serve --threads 1,2,... [--rounds N] [--quick]`.
// For each thread count T, one after the other and never two servers at
// once:
//   hotpath  `dist/src/cli.js serve --front-door-threads T` on a temp
//            repository holding ctr_mlp as checked in and ctr_mlp_nb (the
//            same without dynamic_batching);
//   echo     the serve suite's grpc-js echo with the same threading
//            (bench/load/echo-server-process.ts: at T > 1 one acceptor, the
//            server's own src/server/door-acceptor.ts, handing connections
//            round-robin to T threads, each a grpc-js server fed by
//            createConnectionInjector), answering with the bytes hotpath
//            answered the same body with.
// Each gets unmeasured h2load load, then `h2load -c C -m 16 -t 1` on ctr_mlp
// (C = 4 up to 2 threads, 2 per thread above) and one-stream probes
// `-c 1 -m 1` whose per-request logs give the median: hotpath on ctr_mlp_nb
// and on ctr_mlp, the echo once. Every hotpath run is checked against the
// model's ModelStatistics (each h2load request a counted success). Each round
// starts every contender afresh, the thread counts' order rotating; each
// figure is the best of the rounds (bench/report/threads-figures.ts).
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { atExit, Child } from '../load/child-process.js';
import { countedRun } from '../load/counted-run.js';
import type { EchoConfig, EchoReport } from '../load/echo-server-process.js';
import { h2loadVersion, runH2load } from '../load/h2load.js';
import { checkInferResponse, connect, CTR_SHAPE, encodeInferRequests, modelStatistics, oneAnswer, waitForReady } from '../load/infer-client.js';
import { scrape } from '../load/metrics-scrape.js';
import { readModel, renameModel, withoutDynamicBatching, writeTempRepository } from '../load/model-repository.js';
import { startServer } from '../load/server-process.js';
import {
  roundOrder, THREADS_TARGETS, threadsFigures, throughputLoad, type ThreadsContender, type ThreadsPoint, type ThreadsProbe, type ThreadsTargetName,
} from '../report/threads-figures.js';
import { grpcFrame, MODEL_INFER_PATH } from '../../src/perf/grpc-frames.js';
import type { SuiteContext, SuiteReport } from './suite.js';

const ECHO = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'load', 'echo-server-process.js');
const INTRA_OP_THREADS = 1;
const DEFAULT_ROUNDS = 2;
const C1 = { connections: 1, streams: 1 } as const;
const UNBATCHED = 'ctr_mlp_nb';
const UNBATCHED_SHAPE = { ...CTR_SHAPE, model: UNBATCHED };

interface Plan {
  readonly rounds: number;
  /** h2load's warm-up and measured window of every measured run, s. */
  readonly warmupS: number;
  readonly durationS: number;
  /** Unmeasured h2load load (the throughput load) on each fresh process before its runs: JIT, batch sizes. */
  readonly contenderWarmupS: number;
  /** h2load's own threads (-t); HOTPATH_BENCH_H2LOAD_THREADS, for a node where one h2load thread would be the bottleneck. */
  readonly h2loadThreads: number;
}

const PLANS = {
  quick: { warmupS: 0.5, durationS: 2, contenderWarmupS: 1 },
  full: { warmupS: 1, durationS: 5, contenderWarmupS: 2 },
} as const;

const MACHINE_NOTE =
  'hotpath and the echo run one at a time, never together, each in fresh processes; h2load (one process) runs on the same ' +
  'cores as the server it loads, so on a small machine the load generator takes cores the door threads would use. Figures ' +
  'from a machine busy with other work are noisy: compare echo_tT_vs_t1 (the transport alone) with ctr_tT_vs_t1.';

/** What one contender's run of the sweep left: its points and the connections each door thread took. */
interface ContenderRun {
  readonly points: ThreadsPoint[];
  readonly door_connections: number[] | null;
}

/** The request bodies: one pre-encoded 1-row request per model, as a length-prefixed gRPC frame. */
interface Bodies {
  readonly ctr: Buffer;
  readonly unbatched: Buffer;
}

interface Measure {
  readonly contender: ThreadsContender;
  readonly threads: number;
  readonly round: number;
  readonly address: string;
  /** The runs, in order; the first one's body and model also take the unmeasured warm-up. */
  readonly probes: readonly { readonly probe: ThreadsProbe; readonly model: string; readonly body: Buffer }[];
  /** hotpath: ModelStatistics is read around each run (the echo counts nothing). */
  readonly statistics?: ReturnType<typeof connect>;
  /** hotpath: the server's pid, whose CPU the throughput run reads (/proc). */
  readonly pid?: number;
}

/** A process's CPU so far, all its threads (utime + stime of /proc/PID/stat), µs. */
function processCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command (which may hold spaces, so split after its closing parenthesis): utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / CLOCK_TICKS_PER_S;
}

/** USER_HZ, the unit of /proc's CPU times: 100 on every Linux ABI Node runs on. */
const CLOCK_TICKS_PER_S = 100;

function h2loadThreads(): number {
  const raw = process.env['HOTPATH_BENCH_H2LOAD_THREADS'];
  if (raw === undefined || raw === '') return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`HOTPATH_BENCH_H2LOAD_THREADS: expected an integer in 1..64, got '${raw}'`);
  return n;
}

/** The measured runs against one started contender (after its unmeasured warm-up). */
async function measureContender(context: SuiteContext, plan: Plan, m: Measure): Promise<ThreadsPoint[]> {
  const loaded = throughputLoad(m.threads);
  const run = (body: Buffer, load: { connections: number; streams: number }, warmupS: number, durationS: number, logLatencies: boolean) =>
    runH2load({ address: m.address, path: MODEL_INFER_PATH, body, ...load, threads: Math.min(plan.h2loadThreads, load.connections), warmupS, durationS, logLatencies });
  await run(m.probes[0]!.body, loaded, 0, plan.contenderWarmupS, false);
  const points: ThreadsPoint[] = [];
  for (const { probe, model, body } of m.probes) {
    const load = probe === 'throughput' ? loaded : C1;
    const latency = probe !== 'throughput';
    const before = m.statistics === undefined ? undefined : await modelStatistics(m.statistics, model);
    const cpuBefore = m.pid === undefined || probe !== 'throughput' ? undefined : processCpuUs(m.pid);
    const result = await run(body, load, plan.warmupS, plan.durationS, latency);
    const cpuUs = cpuBefore === undefined ? undefined : processCpuUs(m.pid!) - cpuBefore;
    const after = m.statistics === undefined ? undefined : await modelStatistics(m.statistics, model);
    const counted = before !== undefined && after !== undefined ? countedRun(before, after, result.total) : undefined;
    const point: ThreadsPoint = {
      contender: m.contender, threads: m.threads, round: m.round, probe, model, load: `-c ${load.connections} -m ${load.streams}`,
      requests_per_s: result.requests_per_s, h2load_total: result.total, h2load_failed: result.failed + result.errored,
      mean_ms: latency ? result.latency?.mean_ms ?? null : result.mean_ms,
      ...(latency && result.latency !== undefined ? { p50_ms: result.latency.p50_ms, p99_ms: result.latency.p99_ms } : {}),
      ...(counted ?? {}),
      ...(cpuUs !== undefined && counted !== undefined
        ? { server_cpu_us_per_request: counted.server_successes > 0 ? Math.round((cpuUs / counted.server_successes) * 10) / 10 : null }
        : {}),
      command: result.command.replace(/\S*body\.bin/, 'BODY').replace(/:\d+\//, ':PORT/'),
    };
    context.log(`serve --threads: round ${m.round} ${label(point)}: ${describePoint(point)}`);
    points.push(point);
  }
  return points;
}

function label(p: ThreadsPoint): string {
  return `${p.contender} t${p.threads} ${p.model} ${p.load}`;
}

function describePoint(p: ThreadsPoint): string {
  const latency = p.probe !== 'throughput' ? `, mean ${p.mean_ms} / p50 ${p.p50_ms ?? '–'} / p99 ${p.p99_ms ?? '–'} ms` : `, mean ${p.mean_ms} ms`;
  const counted = p.server_successes === undefined ? '' : `, server successes ${p.server_successes} (uncounted ${p.uncounted}), batch ${p.mean_batch}`;
  return `${p.requests_per_s.toFixed(0)} req/s${latency}, failed ${p.h2load_failed}${counted}`;
}

/** hotpath at `threads` front-door threads: its points, its door threads' connections, and its answer to the body. */
async function hotpathRun(context: SuiteContext, plan: Plan, repository: string, bodies: Bodies, threads: number, round: number): Promise<ContenderRun & { answer: Buffer }> {
  context.log(`serve --threads: round ${round} hotpath t${threads}: starting the server ...`);
  const server = await startServer(context.root, repository, [
    '--front-door-threads', String(threads), '--intra-op-threads', String(INTRA_OP_THREADS), '--log-level', 'info',
  ], 120_000);
  const client = connect(server.address);
  try {
    await waitForReady(client, 10_000);
    const answer = await oneAnswer(server.address, bodies.ctr);
    checkInferResponse(answer, CTR_SHAPE);
    checkInferResponse(await oneAnswer(server.address, bodies.unbatched), UNBATCHED_SHAPE);
    const points = await measureContender(context, plan, {
      contender: 'hotpath', threads, round, address: server.address, statistics: client, pid: server.pid,
      probes: [
        { probe: 'throughput', model: CTR_SHAPE.model, body: bodies.ctr },
        { probe: 'c1', model: UNBATCHED, body: bodies.unbatched },
        { probe: 'c1_batched', model: CTR_SHAPE.model, body: bodies.ctr },
      ],
    });
    // hotpath_door_connections_total{door_thread="i"}: exists only with more than one door thread.
    const samples = await scrape(server.metricsPort);
    const doors = [...samples].filter(([series]) => series.startsWith('hotpath_door_connections_total{'))
      .map(([series, value]) => [Number(/door_thread="(\d+)"/.exec(series)?.[1]), value] as const)
      .sort((a, b) => a[0] - b[0]).map(([, value]) => value);
    return { points, door_connections: threads > 1 ? doors : null, answer };
  } finally {
    client.close();
    await server.stop();
  }
}

/** The echo at `threads` door threads, answering with `answer`. */
async function echoRun(context: SuiteContext, plan: Plan, bodies: Bodies, answer: Buffer, threads: number, round: number): Promise<ContenderRun> {
  context.log(`serve --threads: round ${round} echo t${threads}: starting the echo server ...`);
  const child = new Child(ECHO, 'echo server');
  try {
    child.send({ type: 'start', config: { response: answer, threads } satisfies EchoConfig });
    const address = `127.0.0.1:${(await child.next('ready', 30_000) as { info: number }).info}`;
    if (Buffer.compare(await oneAnswer(address, bodies.ctr), answer) !== 0) throw new Error(`echo t${threads} answered other bytes than it was given`);
    const points = await measureContender(context, plan, {
      contender: 'echo', threads, round, address,
      probes: [{ probe: 'throughput', model: CTR_SHAPE.model, body: bodies.ctr }, { probe: 'c1', model: CTR_SHAPE.model, body: bodies.ctr }],
    });
    child.send({ type: 'report' });
    const report = (await child.next('done', 10_000) as { result: EchoReport }).result;
    return { points, door_connections: report.door_connections };
  } finally {
    child.kill();
  }
}

export async function runThreadsSweep(context: SuiteContext, threads: readonly number[]): Promise<SuiteReport> {
  const version = h2loadVersion();
  if (version === undefined) throw new Error('serve --threads: needs h2load (Debian: apt-get install -y nghttp2-client)');
  const plan: Plan = { ...(context.quick ? PLANS.quick : PLANS.full), rounds: context.rounds ?? DEFAULT_ROUNDS, h2loadThreads: h2loadThreads() };
  const model = readModel(path.join(context.root, 'models'), CTR_SHAPE.model);
  const repository = writeTempRepository(path.join(context.root, 'models'), CTR_SHAPE.model, model.config, CTR_SHAPE.model);
  const forget = atExit(repository.remove);
  mkdirSync(path.join(repository.dir, UNBATCHED, '1'), { recursive: true });
  writeFileSync(path.join(repository.dir, UNBATCHED, 'config.pbtxt'), renameModel(withoutDynamicBatching(model.config), UNBATCHED));
  copyFileSync(model.modelPath, path.join(repository.dir, UNBATCHED, '1', 'model.onnx'));
  const bodies: Bodies = {
    ctr: grpcFrame(encodeInferRequests(CTR_SHAPE, 1, 17)[0]!),
    unbatched: grpcFrame(encodeInferRequests(UNBATCHED_SHAPE, 1, 17)[0]!),
  };
  const loadavgBefore = readFileSync('/proc/loadavg', 'utf8').trim();
  const points: ThreadsPoint[] = [];
  const doors: { contender: ThreadsContender; threads: number; round: number; door_connections: number[] | null }[] = [];
  try {
    for (let round = 1; round <= plan.rounds; round += 1) {
      for (const t of roundOrder(threads, round)) {
        const hotpath = await hotpathRun(context, plan, repository.dir, bodies, t, round);
        const echo = await echoRun(context, plan, bodies, hotpath.answer, t, round);
        points.push(...hotpath.points, ...echo.points);
        doors.push({ contender: 'hotpath', threads: t, round, door_connections: hotpath.door_connections });
        doors.push({ contender: 'echo', threads: t, round, door_connections: echo.door_connections });
      }
    }
  } finally {
    repository.remove();
    forget();
  }
  const result = threadsFigures(points, threads);
  const loadavgAfter = readFileSync('/proc/loadavg', 'utf8').trim();

  const table: [string, string][] = [];
  for (const p of points) table.push([`r${p.round} ${label(p)}`, describePoint(p)]);
  for (const t of threads) {
    const f = (name: string) => result.figures[name] ?? '–';
    const hot = result.best.find((b) => b.contender === 'hotpath' && b.threads === t)!;
    const echo = result.best.find((b) => b.contender === 'echo' && b.threads === t)!;
    table.push([`best t${t}`, `ctr_mlp ${hot.requests_per_s ?? '–'} req/s` + (t === 1 ? '' : ` (${f(`ctr_t${t}_vs_t1`)} x t1)`) +
      `, server CPU ${hot.cpu_us_per_request ?? '–'} µs/request` + (t === 1 ? '' : ` (${f(`ctr_cpu_per_request_t${t}_vs_t1`)} x t1)`) +
      `, ${f(`ctr_t${t}_vs_echo_t1`)} x echo t1; echo ${echo.requests_per_s ?? '–'} req/s` + (t === 1 ? '' : ` (${f(`echo_t${t}_vs_t1`)} x t1)`) +
      `; c1 mean / p50: ${UNBATCHED} ${hot.c1_mean_ms ?? '–'} / ${hot.c1_p50_ms ?? '–'} ms, ctr_mlp ${hot.c1_batched_mean_ms ?? '–'} / ${hot.c1_batched_p50_ms ?? '–'} ms, ` +
      `echo ${echo.c1_mean_ms ?? '–'} / ${echo.c1_p50_ms ?? '–'} ms`]);
  }
  for (const name of Object.keys(THREADS_TARGETS) as ThreadsTargetName[]) {
    const verdict = result.verdicts[name];
    if (verdict !== undefined) table.push([name, `${verdict.value} (target ${verdict.target}, ${verdict.where}: ${verdict.met ? 'met' : 'NOT met'})`]);
  }
  for (const d of doors) if (d.door_connections !== null) table.push([`r${d.round} ${d.contender} t${d.threads} door connections`, d.door_connections.join(' / ')]);
  table.push(['uncounted / failed', `${result.checks.uncounted_requests} / ${result.checks.h2load_failed}` +
    (result.checks.every_request_counted ? '' : ': NOT every request was a counted success, the figures are suspect')]);
  table.push(['machine', `${os.cpus().length} cores, load ${loadavgBefore} -> ${loadavgAfter}`], ['note', MACHINE_NOTE]);

  return {
    json: {
      suite: 'serve',
      sweep: 'front-door-threads',
      models: { throughput: CTR_SHAPE.model, c1: UNBATCHED, c1_batched: CTR_SHAPE.model },
      threads,
      figures: result.figures,
      targets: result.verdicts,
      checks: result.checks,
      best: result.best,
      door_connections: doors,
      points,
      settings: {
        ...plan, intra_op_threads: INTRA_OP_THREADS, h2load: version, rows_per_request: 1,
        throughput_load: Object.fromEntries(threads.map((t) => [`t${t}`, `-c ${throughputLoad(t).connections} -m ${throughputLoad(t).streams}`])),
        c1_load: `-c ${C1.connections} -m ${C1.streams}`,
        echo: 'bench/load/echo-server-process.ts; at T > 1 src/server/door-acceptor.ts hands connections round-robin to T worker threads (bench/load/echo-door-threads.ts)',
      },
      machine: { cpus: os.cpus().length, loadavg_before: loadavgBefore, loadavg_after: loadavgAfter, note: MACHINE_NOTE },
    },
    table,
  };
}
