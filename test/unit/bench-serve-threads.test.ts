// The serve suite's front-door threads sweep (`npm run bench -- serve
// --threads 1,2`): its command line, h2load's per-request log, the count
// check against ModelStatistics and the figures of issue 20's target table.
// The sweep itself starts servers and runs h2load, so it is run by hand
// (bench/README.md), not here.
import { describe, expect, it } from 'vitest';
import { countedRun } from '../../bench/load/counted-run.js';
import { h2loadArgs, parseH2loadLog } from '../../bench/load/h2load.js';
import type { StatisticsSnapshot } from '../../bench/load/infer-client.js';
import { roundOrder, threadsFigures, throughputLoad, type ThreadsPoint } from '../../bench/report/threads-figures.js';
import { parseRunArgs, usage } from '../../bench/run-args.js';
import type { BenchSuite } from '../../bench/suites/suite.js';

const suite = (name: string, options?: BenchSuite['options']): [string, BenchSuite] =>
  [name, { name, description: `${name} suite`, ...(options ? { options } : {}), run: () => Promise.reject(new Error('not run here')) }];
const suites = new Map([suite('serve', ['threads', 'rounds']), suite('arena')]);

describe('bench runner arguments', () => {
  it('takes --threads and --rounds for a suite that lists them, the counts sorted', () => {
    expect(parseRunArgs(['serve', '--threads', '2,1', '--rounds', '3', '--quick', '--json', 'x.json'], suites)).toEqual({
      suite: 'serve', quick: true, json: 'x.json', threads: [1, 2], rounds: 3,
    });
    expect(parseRunArgs(['arena'], suites)).toEqual({ suite: 'arena', quick: false, json: undefined, threads: undefined, rounds: undefined });
  });

  it('refuses thread lists without 1, with repeats or with values out of range, naming the value', () => {
    expect(() => parseRunArgs(['serve', '--threads', '2,4'], suites)).toThrow(/--threads: expected 1 among the counts .*got '2,4'/);
    expect(() => parseRunArgs(['serve', '--threads', '1,2,2'], suites)).toThrow(/--threads: each count once, got 2 twice in '1,2,2'/);
    expect(() => parseRunArgs(['serve', '--threads', '1,0'], suites)).toThrow(/--threads: expected comma-separated integers in 1\.\.64, got '0' in '1,0'/);
    expect(() => parseRunArgs(['serve', '--threads', '1,65'], suites)).toThrow(/got '65'/);
    expect(() => parseRunArgs(['serve', '--threads', '1,two'], suites)).toThrow(/got 'two'/);
    expect(() => parseRunArgs(['serve', '--threads'], suites)).toThrow(/--threads needs a value/);
  });

  it('refuses bad --rounds and options a suite does not take', () => {
    expect(() => parseRunArgs(['serve', '--threads', '1', '--rounds', '0'], suites)).toThrow(/--rounds: expected an integer in 1\.\.20, got '0'/);
    expect(() => parseRunArgs(['serve', '--rounds', '1.5'], suites)).toThrow(/got '1\.5'/);
    expect(() => parseRunArgs(['arena', '--threads', '1,2'], suites)).toThrow(/--threads: the arena suite does not take it/);
    expect(() => parseRunArgs(['arena', '--bogus'], suites)).toThrow(/unknown option --bogus/);
    expect(() => parseRunArgs(['--quick'], suites)).toThrow(/no suite given/);
  });

  it('lists the extra options per suite in the usage', () => {
    expect(usage(suites)).toMatch(/serve\s+serve suite \(also --threads, --rounds\)/);
    expect(usage(suites)).not.toMatch(/arena suite \(also/);
  });
});

describe('h2load for the threads sweep', () => {
  it('reads the round trips of its per-request log in ms', () => {
    expect([...parseH2loadLog('1796219821256894\t200\t177\n1796219821257134\t200\t1400\n')]).toEqual([0.177, 1.4]);
    expect(parseH2loadLog('').length).toBe(0);
    expect(() => parseH2loadLog('1796219821256894\t200\n')).toThrow(/h2load log line 1: expected 'start_us<TAB>status<TAB>duration_us', got '1796219821256894\t200'/);
  });

  it('passes its threads and the log file on the command line', () => {
    const args = h2loadArgs({ address: '127.0.0.1:1', path: '/p', body: new Uint8Array(), connections: 8, streams: 16, threads: 2, warmupS: 1, durationS: 5 }, 'b', 'log');
    expect(args.slice(0, 8)).toEqual(['-c', '8', '-m', '16', '-t', '2', '--log-file', 'log']);
    expect(h2loadArgs({ address: 'a', path: '/p', body: new Uint8Array(), streams: 1, warmupS: 0, durationS: 1 }, 'b')).not.toContain('--log-file');
  });

  it('loads with at least 2 connections per thread, the issue\'s -c 4 -m 16 up to 2 threads', () => {
    expect([1, 2, 3, 8].map(throughputLoad)).toEqual([
      { connections: 4, streams: 16 }, { connections: 4, streams: 16 }, { connections: 6, streams: 16 }, { connections: 16, streams: 16 },
    ]);
  });

  it('rotates the thread counts each round', () => {
    expect([1, 2, 3].map((r) => roundOrder([1, 2, 4], r))).toEqual([[1, 2, 4], [2, 4, 1], [4, 1, 2]]);
  });
});

describe('counted runs', () => {
  const snapshot = (successCount: number, inferenceCount: number, executionCount: number): StatisticsSnapshot => ({
    successCount, inferenceCount, executionCount, successNs: 0, queueNs: 0, computeInferNs: 0, computeInferCount: 0,
  });

  it('counts h2load requests the server did not count as successes', () => {
    // The server counts h2load's warm-up too: more successes than h2load's total is all counted.
    expect(countedRun(snapshot(100, 100, 10), snapshot(1300, 1300, 110), 1000)).toEqual({ server_successes: 1200, uncounted: 0, mean_batch: 12 });
    expect(countedRun(snapshot(0, 0, 0), snapshot(990, 990, 99), 1000)).toEqual({ server_successes: 990, uncounted: 10, mean_batch: 10 });
    expect(countedRun(snapshot(5, 5, 5), snapshot(5, 5, 5), 0).mean_batch).toBeNull();
  });
});

describe('threads sweep figures', () => {
  const point = (fields: Partial<ThreadsPoint> & Pick<ThreadsPoint, 'contender' | 'threads' | 'round' | 'probe'>): ThreadsPoint => ({
    model: fields.probe === 'c1' && fields.contender === 'hotpath' ? 'ctr_mlp_nb' : 'ctr_mlp',
    load: fields.probe === 'throughput' ? '-c 4 -m 16' : '-c 1 -m 1', requests_per_s: 0, h2load_total: 100, h2load_failed: 0, mean_ms: null, command: 'h2load ...',
    ...(fields.contender === 'hotpath' ? { server_successes: 120, uncounted: 0, mean_batch: 4 } : {}),
    ...fields,
  });
  const points: ThreadsPoint[] = [
    point({ contender: 'hotpath', threads: 1, round: 1, probe: 'throughput', requests_per_s: 9000, server_cpu_us_per_request: 110 }),
    point({ contender: 'hotpath', threads: 1, round: 2, probe: 'throughput', requests_per_s: 10_000, server_cpu_us_per_request: 100 }),
    point({ contender: 'hotpath', threads: 1, round: 1, probe: 'c1', requests_per_s: 5000, mean_ms: 0.2, p50_ms: 0.18 }),
    point({ contender: 'hotpath', threads: 1, round: 2, probe: 'c1', requests_per_s: 4000, mean_ms: 0.25, p50_ms: 0.17 }),
    point({ contender: 'hotpath', threads: 1, round: 1, probe: 'c1_batched', mean_ms: 0.4, p50_ms: 0.38 }),
    point({ contender: 'echo', threads: 1, round: 1, probe: 'throughput', requests_per_s: 25_000 }),
    point({ contender: 'echo', threads: 1, round: 1, probe: 'c1', mean_ms: 0.1, p50_ms: 0.09 }),
    point({ contender: 'hotpath', threads: 2, round: 1, probe: 'throughput', requests_per_s: 14_000, server_cpu_us_per_request: 115 }),
    point({ contender: 'hotpath', threads: 2, round: 1, probe: 'c1', mean_ms: 0.21, p50_ms: 0.2 }),
    point({ contender: 'hotpath', threads: 2, round: 1, probe: 'c1_batched', mean_ms: 0.5, p50_ms: 0.38 }),
    point({ contender: 'echo', threads: 2, round: 1, probe: 'throughput', requests_per_s: 40_000 }),
    point({ contender: 'echo', threads: 2, round: 1, probe: 'c1', mean_ms: 0.12, p50_ms: 0.1 }),
  ];

  it('takes the best round of each figure and names the ratios after the issue\'s table', () => {
    const result = threadsFigures(points, [1, 2]);
    expect(result.best.find((b) => b.contender === 'hotpath' && b.threads === 1)).toEqual({
      contender: 'hotpath', threads: 1, requests_per_s: 10_000, c1_mean_ms: 0.2, c1_p50_ms: 0.17, c1_batched_mean_ms: 0.4, c1_batched_p50_ms: 0.38,
      cpu_us_per_request: 100,
    });
    expect(result.best.find((b) => b.contender === 'echo' && b.threads === 2)).toMatchObject({ c1_mean_ms: 0.12, c1_batched_mean_ms: null });
    expect(result.figures).toMatchObject({
      ctr_t1_rps: 10_000, echo_t1_rps: 25_000, ctr_t1_vs_echo_t1: 0.4,
      ctr_t2_rps: 14_000, ctr_t2_vs_t1: 1.4, echo_t2_vs_t1: 1.6, ctr_t2_vs_echo_t1: 0.56, ctr_t2_vs_echo_t2: 0.35,
      c1_latency_t2_vs_t1: 1.05, c1_median_latency_t2_vs_t1: 1.176, echo_c1_latency_t2_vs_t1: 1.2,
      c1_batched_latency_t2_vs_t1: 1.25, c1_batched_median_latency_t2_vs_t1: 1,
      ctr_t1_cpu_us_per_request: 100, ctr_t2_cpu_us_per_request: 115, ctr_cpu_per_request_t2_vs_t1: 1.15,
    });
    expect(result.verdicts).toEqual({
      ctr_t2_vs_t1: expect.objectContaining({ value: 1.4, target: '>= 1.35', met: true }),
      ctr_t2_vs_echo_t1: expect.objectContaining({ value: 0.56, target: '>= 0.8', met: false }),
      c1_latency_t2_vs_t1: expect.objectContaining({ value: 1.05, target: '<= 1.05', met: true }),
    });
    expect(result.checks).toEqual({ uncounted_requests: 0, h2load_failed: 0, every_request_counted: true });
  });

  it('judges the 8-thread target only when 8 threads ran, and reports missing figures as null', () => {
    const eight = threadsFigures([...points, point({ contender: 'hotpath', threads: 8, round: 1, probe: 'throughput', requests_per_s: 52_000 })], [1, 2, 8]);
    expect(eight.verdicts.ctr_t8_vs_t1).toEqual(expect.objectContaining({ value: 5.2, target: '>= 5', met: true }));
    expect(eight.figures['echo_t8_vs_t1']).toBeNull();
    expect(eight.figures['c1_latency_t8_vs_t1']).toBeNull();
  });

  it('flags requests that were not counted successes or that h2load saw fail', () => {
    const bad = threadsFigures([...points, point({ contender: 'hotpath', threads: 2, round: 2, probe: 'throughput', uncounted: 3, h2load_failed: 1 })], [1, 2]);
    expect(bad.checks).toEqual({ uncounted_requests: 3, h2load_failed: 1, every_request_counted: false });
  });

  it('needs the one-thread baseline', () => {
    expect(() => threadsFigures(points, [2])).toThrow(/expected 1 among the thread counts, got \[2\]/);
  });
});
