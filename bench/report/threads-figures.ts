// The serve suite's front-door threads sweep (`npm run bench -- serve
// --threads 1,2,...`, issue 20 item 5): its points, and the figures of the
// issue's target table computed from them. Pure, so the rules (best of the
// rounds, ratios to one thread, which target applies) are unit-tested
// (test/unit/bench-serve-threads.test.ts).

export type ThreadsContender = 'hotpath' | 'echo';

/**
 * `throughput`: the loaded run (-c C -m 16, ctr_mlp); `c1`: the one-stream
 * latency probe (-c 1 -m 1) on ctr_mlp_nb (hotpath: ctr_mlp without
 * dynamic_batching, so no batcher hold hides what the threads cost) or on
 * the echo; `c1_batched`: the same probe on ctr_mlp, whose lone request the
 * batcher holds for max_queue_delay_microseconds (hotpath only).
 */
export type ThreadsProbe = 'throughput' | 'c1' | 'c1_batched';

/** One h2load run. */
export interface ThreadsPoint {
  readonly contender: ThreadsContender;
  readonly threads: number;
  readonly round: number;
  readonly probe: ThreadsProbe;
  /** The model named in the request body (the echo answers any). */
  readonly model: string;
  /** h2load's -c and -m, as in its command line. */
  readonly load: string;
  readonly requests_per_s: number;
  /** h2load's measured requests (its warm-up left out). */
  readonly h2load_total: number;
  readonly h2load_failed: number;
  /** Mean round trip: h2load's own figure (throughput), or its per-request log's (c1 probes). */
  readonly mean_ms: number | null;
  /** c1 probes only: from h2load's per-request log (nearest rank). */
  readonly p50_ms?: number;
  readonly p99_ms?: number;
  /** hotpath only (ModelStatistics over the run, warm-up included): see bench/load/counted-run.ts. */
  readonly server_successes?: number;
  readonly uncounted?: number;
  readonly mean_batch?: number | null;
  /**
   * hotpath throughput runs only: the server process's CPU (every thread:
   * main, door threads, batcher, workers; /proc utime + stime) over the run,
   * per request it counted (server_successes). Where the load generator
   * shares the cores, req/s cannot show whether door threads would scale with
   * spare cores; CPU per request can: flat from 1 to T threads means T
   * threads do T times the work of 1 when T cores are free.
   */
  readonly server_cpu_us_per_request?: number | null;
  readonly command: string;
}

/** The best of the rounds for one contender at one thread count. */
export interface ThreadsBest {
  readonly contender: ThreadsContender;
  readonly threads: number;
  /** Highest req/s of the throughput runs. */
  readonly requests_per_s: number | null;
  /** Lowest mean and lowest median of the c1 runs (each its own best round). */
  readonly c1_mean_ms: number | null;
  readonly c1_p50_ms: number | null;
  /** The same for the c1_batched runs (hotpath; null for the echo). */
  readonly c1_batched_mean_ms: number | null;
  readonly c1_batched_p50_ms: number | null;
  /** Lowest server CPU per request of the throughput runs (hotpath; null for the echo). */
  readonly cpu_us_per_request: number | null;
}

/**
 * The targets, named as the figures are. `where` says on which
 * machine the issue sets it: a figure from another machine is reported
 * against it all the same, and the reader judges.
 */
export const THREADS_TARGETS = {
  ctr_t2_vs_t1: { min: 1.35, where: 'this machine (2 cores, the load generator shares them), -c 4 -m 16 -t 1, best of 2 rounds' },
  ctr_t2_vs_echo_t1: { min: 0.8, where: 'the same run; one thread today: 0.40 with h2load on one machine' },
  ctr_t8_vs_t1: { min: 5, where: 'a 16-core GPU node' },
  c1_latency_t2_vs_t1: { max: 1.05, where: 'one request at 1 stream (mean round trip, ctr_mlp_nb)' },
} as const;
export type ThreadsTargetName = keyof typeof THREADS_TARGETS;

export interface ThreadsVerdict {
  readonly value: number;
  readonly target: string;
  readonly where: string;
  readonly met: boolean;
}

export interface ThreadsFigures {
  /** Flat, named after the table: ctr_tT_vs_t1, echo_tT_vs_t1, ctr_tT_vs_echo_t1, ctr_tT_vs_echo_tT, c1_latency_tT_vs_t1, ... (README) */
  readonly figures: Record<string, number | null>;
  /** The targets whose figure this run has. */
  readonly verdicts: Partial<Record<ThreadsTargetName, ThreadsVerdict>>;
  readonly best: readonly ThreadsBest[];
  readonly checks: {
    /** h2load's requests to hotpath that ModelStatistics did not count as successes, all runs. */
    readonly uncounted_requests: number;
    /** h2load's failed + errored requests, all runs and both contenders. */
    readonly h2load_failed: number;
    readonly every_request_counted: boolean;
  };
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/** a / b to 3 decimals; null when either is missing or b is not positive. */
export function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || !(b > 0) || !Number.isFinite(a) ? null : round3(a / b);
}

function bestOf(points: readonly ThreadsPoint[], contender: ThreadsContender, threads: number): ThreadsBest {
  const mine = points.filter((p) => p.contender === contender && p.threads === threads);
  const lowest = (values: (number | null | undefined)[]): number | null => {
    const present = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    return present.length === 0 ? null : Math.min(...present);
  };
  const throughput = mine.filter((p) => p.probe === 'throughput').map((p) => p.requests_per_s);
  const c1 = mine.filter((p) => p.probe === 'c1');
  const batched = mine.filter((p) => p.probe === 'c1_batched');
  return {
    contender, threads,
    requests_per_s: throughput.length === 0 ? null : Math.max(...throughput),
    c1_mean_ms: lowest(c1.map((p) => p.mean_ms)),
    c1_p50_ms: lowest(c1.map((p) => p.p50_ms)),
    c1_batched_mean_ms: lowest(batched.map((p) => p.mean_ms)),
    c1_batched_p50_ms: lowest(batched.map((p) => p.p50_ms)),
    cpu_us_per_request: lowest(mine.filter((p) => p.probe === 'throughput').map((p) => p.server_cpu_us_per_request)),
  };
}

/** The figures of a sweep over `threads` (1 among them). */
export function threadsFigures(points: readonly ThreadsPoint[], threads: readonly number[]): ThreadsFigures {
  if (!threads.includes(1)) throw new Error(`threadsFigures: expected 1 among the thread counts, got [${threads.join(', ')}]`);
  const best = threads.flatMap((t) => [bestOf(points, 'hotpath', t), bestOf(points, 'echo', t)]);
  const at = (contender: ThreadsContender, t: number) => best.find((b) => b.contender === contender && b.threads === t)!;
  const ctr1 = at('hotpath', 1);
  const echo1 = at('echo', 1);
  const figures: Record<string, number | null> = {};
  for (const t of threads) {
    const ctr = at('hotpath', t);
    const echo = at('echo', t);
    figures[`ctr_t${t}_rps`] = ctr.requests_per_s;
    figures[`echo_t${t}_rps`] = echo.requests_per_s;
    figures[`ctr_t${t}_vs_echo_t1`] = ratio(ctr.requests_per_s, echo1.requests_per_s);
    figures[`ctr_t${t}_cpu_us_per_request`] = ctr.cpu_us_per_request;
    if (t === 1) continue;
    figures[`ctr_cpu_per_request_t${t}_vs_t1`] = ratio(ctr.cpu_us_per_request, ctr1.cpu_us_per_request);
    figures[`ctr_t${t}_vs_t1`] = ratio(ctr.requests_per_s, ctr1.requests_per_s);
    figures[`echo_t${t}_vs_t1`] = ratio(echo.requests_per_s, echo1.requests_per_s);
    figures[`ctr_t${t}_vs_echo_t${t}`] = ratio(ctr.requests_per_s, echo.requests_per_s);
    figures[`c1_latency_t${t}_vs_t1`] = ratio(ctr.c1_mean_ms, ctr1.c1_mean_ms);
    figures[`c1_median_latency_t${t}_vs_t1`] = ratio(ctr.c1_p50_ms, ctr1.c1_p50_ms);
    figures[`c1_batched_latency_t${t}_vs_t1`] = ratio(ctr.c1_batched_mean_ms, ctr1.c1_batched_mean_ms);
    figures[`c1_batched_median_latency_t${t}_vs_t1`] = ratio(ctr.c1_batched_p50_ms, ctr1.c1_batched_p50_ms);
    figures[`echo_c1_latency_t${t}_vs_t1`] = ratio(echo.c1_mean_ms, echo1.c1_mean_ms);
  }
  const verdicts: Partial<Record<ThreadsTargetName, ThreadsVerdict>> = {};
  for (const name of Object.keys(THREADS_TARGETS) as ThreadsTargetName[]) {
    const value = figures[name];
    if (value === undefined || value === null) continue;
    const target: { min?: number; max?: number; where: string } = THREADS_TARGETS[name];
    verdicts[name] = target.min !== undefined
      ? { value, target: `>= ${target.min}`, where: target.where, met: value >= target.min }
      : { value, target: `<= ${target.max}`, where: target.where, met: value <= target.max! };
  }
  const uncounted = points.reduce((n, p) => n + (p.uncounted ?? 0), 0);
  const failed = points.reduce((n, p) => n + p.h2load_failed, 0);
  const hotpathRuns = points.filter((p) => p.contender === 'hotpath');
  return {
    figures, verdicts, best,
    checks: {
      uncounted_requests: uncounted,
      h2load_failed: failed,
      every_request_counted: uncounted === 0 && failed === 0 && hotpathRuns.every((p) => p.server_successes !== undefined),
    },
  };
}

/** The h2load load of the throughput runs at `threads` door threads: at least 2 connections per thread and the issue's -c 4 -m 16 up to 2 threads. */
export function throughputLoad(threads: number): { connections: number; streams: number } {
  return { connections: Math.max(4, 2 * threads), streams: 16 };
}

/** The order of the thread counts in round `round` (1-based): rotated by one each round, so no count always runs first on a warming machine. */
export function roundOrder(threads: readonly number[], round: number): number[] {
  const shift = (round - 1) % threads.length;
  return [...threads.slice(shift), ...threads.slice(0, shift)];
}
