// h2load (nghttp2's C HTTP/2 load generator, Debian's nghttp2-client) as a
// cross-check of the suite's own generator: where it is installed, the suite
// runs it once against the batched server with the same pre-encoded body and
// reports how far apart the two are. h2load only sees HTTP statuses, so the
// suite counts the server's successes (ModelStatistics) over its run as well.
// The targets suite and the serve suite's threads sweep load with it alone.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { track } from './child-process.js';
import { GRPC_REQUEST_HEADERS } from '../../src/perf/grpc-frames.js';
import { summarize, type LatencySummary } from '../report/latency.js';

/** `h2load --version`'s first line, or undefined when it is not on PATH. */
export function h2loadVersion(): string | undefined {
  const probe = spawnSync('h2load', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) return undefined;
  return probe.stdout.split('\n')[0]?.trim() || 'h2load';
}

export interface H2loadSummary {
  readonly requests_per_s: number;
  readonly total: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly errored: number;
  readonly status_2xx: number;
  /** h2load's mean "time for request", ms; null when it printed none. */
  readonly mean_ms: number | null;
}

const UNIT_MS: Readonly<Record<string, number>> = { us: 1e-3, ms: 1, s: 1000 };

/** The figures of h2load's summary text; throws when the summary lines are missing. */
export function parseH2loadOutput(text: string): H2loadSummary {
  const finished = /finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(text);
  const requests = /requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(text);
  if (finished === null || requests === null) throw new Error(`h2load printed no summary:\n${text.slice(-2000)}`);
  const status = /status codes: (\d+) 2xx/.exec(text);
  const time = /time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\b/.exec(text);
  return {
    requests_per_s: Number(finished[1]),
    total: Number(requests[1]),
    succeeded: Number(requests[2]),
    failed: Number(requests[3]),
    errored: Number(requests[4]),
    status_2xx: status === null ? 0 : Number(status[1]),
    mean_ms: time === null ? null : Number(time[1]) * UNIT_MS[time[2]!]!,
  };
}

export interface H2loadRun {
  readonly address: string;
  readonly path: string;
  readonly body: Uint8Array;
  /** Connections (-c), default 1. */
  readonly connections?: number;
  /** Streams per connection (-m). */
  readonly streams: number;
  readonly warmupS: number;
  readonly durationS: number;
  /** h2load's own threads (-t), default 1. */
  readonly threads?: number;
  /**
   * Also have h2load write one line per request (--log-file) and summarise
   * them: h2load prints a mean but no median. It logs the measured window
   * only (not the warm-up), one line per request in `total`.
   */
  readonly logLatencies?: boolean;
}

/**
 * The round trips in h2load's --log-file text: tab-separated lines of start
 * time (µs since the epoch), HTTP status and µs until the response ended;
 * returned in ms. Throws on a line that is not of that form.
 */
export function parseH2loadLog(text: string): Float64Array {
  const lines = text.split('\n').filter((line) => line !== '');
  const out = new Float64Array(lines.length);
  lines.forEach((line, i) => {
    const fields = line.split('\t');
    const us = Number(fields[2]);
    if (fields.length < 3 || fields[2] === '' || !Number.isFinite(us) || us < 0) {
      throw new Error(`h2load log line ${i + 1}: expected 'start_us<TAB>status<TAB>duration_us', got '${line.slice(0, 80)}'`);
    }
    out[i] = us / 1000;
  });
  return out;
}

/** The command line the suite runs (body file given). */
export function h2loadArgs(run: H2loadRun, bodyFile: string, logFile?: string): string[] {
  return [
    '-c', String(run.connections ?? 1), '-m', String(run.streams), '-t', String(run.threads ?? 1),
    ...(logFile === undefined ? [] : ['--log-file', logFile]),
    '--warm-up-time', `${Math.round(run.warmupS * 1000)}ms`, '-D', `${Math.round(run.durationS * 1000)}ms`,
    '-d', bodyFile,
    ...Object.entries(GRPC_REQUEST_HEADERS).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
    `http://${run.address}${run.path}`,
  ];
}

export interface H2loadResult extends H2loadSummary {
  readonly command: string;
  /** With `logLatencies`: the measured requests' round trips (h2load's log, nearest-rank percentiles). */
  readonly latency?: LatencySummary;
}

/** Runs h2load once (bounded by a kill after warm-up + duration + 30 s) and parses its summary. */
export async function runH2load(run: H2loadRun): Promise<H2loadResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hotpath-bench-h2load-'));
  try {
    const bodyFile = path.join(dir, 'body.bin');
    writeFileSync(bodyFile, run.body);
    const logFile = run.logLatencies === true ? path.join(dir, 'requests.log') : undefined;
    const args = h2loadArgs(run, bodyFile, logFile);
    const child = spawn('h2load', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), (run.warmupS + run.durationS + 30) * 1000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    clearTimeout(timer);
    if (code !== 0) throw new Error(`h2load exited with ${code}:\n${output.slice(-2000)}`);
    const command = `h2load ${args.map((a) => (a.includes(' ') ? `'${a}'` : a)).join(' ')}`.replace(` --log-file ${logFile}`, '');
    const summary = parseH2loadOutput(output);
    return logFile === undefined ? { ...summary, command } : { ...summary, command, latency: summarize(parseH2loadLog(readFileSync(logFile, 'utf8'))) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
