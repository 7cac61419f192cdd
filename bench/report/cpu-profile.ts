// Where a server's main thread spends its time per request, from a V8 CPU
// profile (`node --cpu-prof`). Self time of every sampled frame is summed by
// where the frame's code lives (node core, grpc-js, protobuf-es, prom-client,
// hotpath's own folders, GC, V8/native) and divided by the number of requests
// the run served, so two runs of different lengths compare directly.
//
//   node dist/bench/report/cpu-profile.js PROFILE.cpuprofile --requests N
//        [--from US --to US] [--top N] [--json]
//
// --from/--to keep only the samples taken in that window, in the profile's own
// clock (CLOCK_MONOTONIC in µs, as Python's time.monotonic() * 1e6 reads it),
// so start-up and warm-up do not count against the measured requests.
// Idle time ('(idle)') is left out of the per-request figures and reported as
// the share of the profile the thread was idle. Pure function + a small CLI.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

export interface ProfileBreakdown {
  /** Microseconds of the main thread per request, by category, largest first. */
  readonly perRequestUs: readonly { readonly category: string; readonly us: number }[];
  /** The sum of perRequestUs: busy main-thread time per request. */
  readonly busyUsPerRequest: number;
  /** Fraction of the profile the thread was idle. */
  readonly idleShare: number;
  readonly profileMs: number;
  /** Self time per function (name, file:line, category), µs per request, largest first. */
  readonly functions: readonly { readonly fn: string; readonly category: string; readonly us: number }[];
}

/** The category of a frame: where its code lives. */
export function categoryOf(functionName: string, url: string): string {
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)' || url === '') return 'V8/native';
  if (url.startsWith('node:')) return 'node core';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (modules !== null) {
    const name = modules[1]!;
    if (name === '@grpc/grpc-js') return 'grpc-js';
    if (name === '@bufbuild/protobuf') return 'protobuf';
    if (name === 'prom-client') return 'prom-client';
    if (name === 'pino' || name.startsWith('pino-') || name === 'sonic-boom') return 'logging';
    return `other module (${name})`;
  }
  const own = /\/dist\/src\/([^/]+)(\/|\.js)/.exec(url);
  if (own !== null) return `hotpath ${own[1]}${own[2] === '/' ? '/' : ''}`;
  return 'other';
}

export function breakdown(profile: CpuProfile, requests: number, window?: { readonly fromUs: number; readonly toUs: number }): ProfileBreakdown {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const totals = new Map<string, number>();
  const perFunction = new Map<string, { category: string; us: number }>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    if (window !== undefined && (at < window.fromUs || at > window.toUs)) return;
    const category = node === undefined ? 'other' : categoryOf(node.callFrame.functionName, node.callFrame.url);
    totals.set(category, (totals.get(category) ?? 0) + us);
    if (node !== undefined && category !== 'idle') {
      const frame = node.callFrame as ProfileNode['callFrame'] & { readonly lineNumber?: number };
      const where = frame.url === '' ? '' : ` ${frame.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${(frame.lineNumber ?? -1) + 1}`;
      const key = `${frame.functionName || '(anonymous)'}${where}`;
      const entry = perFunction.get(key) ?? { category, us: 0 };
      entry.us += us;
      perFunction.set(key, entry);
    }
  });
  const idle = totals.get('idle') ?? 0;
  totals.delete('idle');
  const all = [...totals.values()].reduce((a, b) => a + b, 0) + idle;
  const perRequestUs = [...totals.entries()]
    .map(([category, us]) => ({ category, us: us / Math.max(1, requests) }))
    .sort((a, b) => b.us - a.us);
  return {
    perRequestUs,
    busyUsPerRequest: perRequestUs.reduce((sum, row) => sum + row.us, 0),
    idleShare: all === 0 ? 0 : idle / all,
    profileMs: window === undefined ? (profile.endTime - profile.startTime) / 1000 : (window.toUs - window.fromUs) / 1000,
    functions: [...perFunction.entries()]
      .map(([fn, { category, us }]) => ({ fn, category, us: us / Math.max(1, requests) }))
      .sort((a, b) => b.us - a.us),
  };
}

function main(argv: readonly string[]): void {
  const file = argv[0];
  const requestsAt = argv.indexOf('--requests');
  const requests = requestsAt < 0 ? Number.NaN : Number(argv[requestsAt + 1]);
  if (file === undefined || !Number.isSafeInteger(requests) || requests <= 0) {
    console.error('usage: cpu-profile PROFILE.cpuprofile --requests N [--from US --to US] [--top N] [--json]');
    process.exit(2);
  }
  const flag = (name: string) => {
    const at = argv.indexOf(name);
    return at < 0 ? undefined : Number(argv[at + 1]);
  };
  const fromUs = flag('--from');
  const toUs = flag('--to');
  const window = fromUs !== undefined && toUs !== undefined ? { fromUs, toUs } : undefined;
  const result = breakdown(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, requests, window);
  if (argv.includes('--json')) {
    console.log(JSON.stringify(result));
    return;
  }
  console.log(`${requests} requests, profile ${result.profileMs.toFixed(0)} ms, idle ${(result.idleShare * 100).toFixed(1)}%`);
  console.log(`main thread busy per request: ${result.busyUsPerRequest.toFixed(1)} µs`);
  for (const row of result.perRequestUs) if (row.us >= 0.05) console.log(`  ${row.us.toFixed(2).padStart(7)} µs  ${row.category}`);
  const top = flag('--top') ?? 0;
  if (top > 0) {
    console.log(`top ${top} functions by self time, µs per request:`);
    for (const row of result.functions.slice(0, top)) console.log(`  ${row.us.toFixed(2).padStart(7)} µs  ${row.fn}  [${row.category}]`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
