// The arena suite: builds the native benchmark (bench/native/arena_bench.cc)
// with plain CMake in build-bench/ (Release, -O2; CUDA when nvcc is found, so
// a GPU machine measures cudaMalloc as the baseline), runs it and reports its
// JSON: alloc+free latency against the raw backend, and the inference replay.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

import type { BenchSuite, SuiteContext, SuiteReport } from './suite.js';

type ArenaBenchJson = {
  suite: 'arena';
  backend: string;
  device: string;
  results: {
    alloc_free_p50_ns: number;
    alloc_free_p99_ns: number;
    baseline_alloc_free_p50_ns: number;
    baseline_alloc_free_p99_ns: number;
    baseline: string;
    speedup_p50: number;
    replay: {
      requests: number;
      backend_calls_steady_per_1k: number;
      external_frag_peak: number;
      cache_overhead_peak: number;
      internal_frag_peak: number;
      evictions: number;
    };
  };
};

function run(context: SuiteContext, command: string, args: string[]): string {
  const result = spawnSync(command, args, { cwd: context.root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}):\n${result.stdout}${result.stderr}`);
  }
  return result.stdout;
}

/** Configures build-bench/ once, then builds incrementally (a stale binary is never measured). */
export function buildArenaBench(context: SuiteContext): string {
  const dir = path.join(context.root, 'build-bench');
  if (!existsSync(path.join(dir, 'CMakeCache.txt'))) {
    context.log('arena: configuring build-bench/ (Release, -O2) ...');
    const ninja = spawnSync('ninja', ['--version']).status === 0 ? ['-G', 'Ninja'] : [];
    run(context, 'cmake', ['-S', context.root, '-B', dir, ...ninja, '-DCMAKE_BUILD_TYPE=Release',
      '-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG', '-DHOTPATH_BUILD_BENCH=ON']);
  }
  context.log('arena: building arena_bench ...');
  run(context, 'cmake', ['--build', dir, '--target', 'arena_bench', '--parallel', '2']);
  return path.join(dir, 'arena_bench');
}

const pct = (x: number) => `${(x * 100).toFixed(2)}%`;

export const arenaSuite: BenchSuite = {
  name: 'arena',
  description: 'memory ledger: alloc+free latency vs the raw backend, and an inference replay',
  async run(context: SuiteContext): Promise<SuiteReport> {
    const binary = buildArenaBench(context);
    context.log(`arena: running ${path.relative(context.root, binary)}${context.quick ? ' --quick' : ''} ...`);
    const json = JSON.parse(run(context, binary, context.quick ? ['--quick'] : [])) as ArenaBenchJson;
    const r = json.results;
    return {
      json,
      table: [
        ['backend', `${json.backend} (${json.device})`],
        ['arena alloc+free p50 / p99', `${r.alloc_free_p50_ns} ns / ${r.alloc_free_p99_ns} ns`],
        [`${r.baseline} p50 / p99`, `${r.baseline_alloc_free_p50_ns} ns / ${r.baseline_alloc_free_p99_ns} ns`],
        ['baseline / arena (p50)', `${r.speedup_p50}x`],
        ['replay requests', String(r.replay.requests)],
        ['backend calls per 1k requests (steady)', String(r.replay.backend_calls_steady_per_1k)],
        ['external fragmentation peak', pct(r.replay.external_frag_peak)],
        ['internal fragmentation peak', pct(r.replay.internal_frag_peak)],
        ['cache overhead peak', pct(r.replay.cache_overhead_peak)],
        ['model evictions', String(r.replay.evictions)],
      ],
    };
  },
};
