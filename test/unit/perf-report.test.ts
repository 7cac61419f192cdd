import { describe, expect, it } from 'vitest';
import type { WindowRecord } from '../../src/perf/load-loop.js';
import { CSV_HEADER, RATE_CSV_HEADER, isStable, percentile, summarise, toCsv, toTable, type Measurement } from '../../src/perf/perf-report.js';
import type { ServerSplit } from '../../src/perf/server-stats.js';
import { latencyPlot, plotFile } from '../../src/perf/perf-plot.js';

const window = (latenciesUs: number[], elapsedMs = 1000, errors = 0, clientCpu = 0.2): WindowRecord => ({
  latenciesUs: Float64Array.from(latenciesUs),
  errors,
  errorSamples: new Map(errors > 0 ? [['HTTP 200, grpc-status 13', errors]] : []),
  elapsedMs,
  clientCpu,
});

const server = (successCount: number, queueUs = 100): ServerSplit => ({
  successCount, failCount: 0, queueUs, computeInputUs: 10, computeInferUs: 200, computeOutputUs: 5,
});

describe('percentile', () => {
  it('takes the nearest rank, and 0 for no values', () => {
    const sorted = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(sorted, 0.5), percentile(sorted, 0.9), percentile(sorted, 0.99), percentile(sorted, 1)]).toEqual([50, 90, 99, 100]);
    expect(percentile(new Float64Array(0), 0.5)).toBe(0);
  });
});

describe('isStable', () => {
  it('needs three windows whose throughput and latency are within ±P% of their mean', () => {
    const steady = [window([1000, 1000]), window([1000, 1000]), window([1050, 1050])];
    expect(isStable(steady.slice(0, 2), 10, undefined)).toBe(false);
    expect(isStable(steady, 10, undefined)).toBe(true);
    expect(isStable(steady, 1, undefined)).toBe(false);
    // Same latency, throughput halves in the last window.
    expect(isStable([window([1000, 1000]), window([1000, 1000]), window([1000])], 10, undefined)).toBe(false);
    // A window without a successful request is never stable.
    expect(isStable([window([1000]), window([1000]), window([])], 10, undefined)).toBe(false);
  });

  it('follows --percentile when given', () => {
    const tails = [window([100, 100, 100, 5000]), window([100, 100, 100, 100]), window([100, 100, 100, 100])];
    expect(isStable(tails, 10, 50)).toBe(true);
    expect(isStable(tails, 10, 99)).toBe(false);
  });
});

describe('summarise', () => {
  it('reports inferences (requests × batch), percentiles, the weighted server split and the rest as network', () => {
    const windows: Measurement[] = [
      { client: window([1000, 2000], 500), server: server(2, 100) },
      { client: window([3000, 4000], 500, 1), server: server(2, 300) },
    ];
    const level = summarise({ kind: 'concurrency', value: 4 }, 8, windows, true, 5);
    expect(level).toMatchObject({
      concurrency: 4, requestsPerSecond: 4, inferencesPerSecond: 32, clientRequests: 4, serverRequests: 4, errors: 1,
      avgUs: 2500, p50Us: 2000, p99Us: 4000, queueUs: 200, computeInferUs: 200, networkUs: 2500 - 200 - 10 - 200 - 5,
      stable: true, trials: 5, windows: 2, clientBound: false,
    });
    expect(level.errorSamples).toEqual({ 'HTTP 200, grpc-status 13': 1 });
  });

  it('marks a level where the generator used most of its core as client-bound', () => {
    expect(summarise({ kind: 'concurrency', value: 1 }, 1, [{ client: window([10], 1000, 0, 0.95), server: server(1) }], true, 3).clientBound).toBe(true);
  });
});

describe('output', () => {
  const level = summarise({ kind: 'concurrency', value: 2 }, 1, [{ client: window([1000, 3000], 1000), server: server(2) }], false, 10);

  it("writes perf_analyzer's header and one row of 13 columns per level, in µs", () => {
    const lines = toCsv([level]).trimEnd().split('\n');
    expect(lines[0]).toBe(CSV_HEADER);
    expect(lines[1]).toBe('2,2.00,0,1685,100,10,200,5,0,1000,3000,3000,3000');
  });

  it("puts perf_analyzer's Request Rate first in rate mode", () => {
    const rate = summarise({ kind: 'rate', value: 250 }, 1, [{ client: window([1000], 1000), server: server(1) }], true, 3);
    expect(RATE_CSV_HEADER).toBe(CSV_HEADER.replace(/^Concurrency,/, 'Request Rate,'));
    const lines = toCsv([rate]).trimEnd().split('\n');
    expect(lines[0]).toBe(RATE_CSV_HEADER);
    expect(lines[1]!.split(',')[0]).toBe('250');
    expect([rate.concurrency, rate.requestRate]).toEqual([null, 250]);
    expect(toTable([rate])).toMatch(/^request rate\s+infer\/s/);
  });

  it('marks an unstable level and shows its errors under the table', () => {
    const table = toTable([level]);
    expect(table).toMatch(/^\s+2\s+2\.0\s+2\.000.*UNSTABLE$/m);
    expect(table).toMatch(/concurrency 2: not stable within --max-trials \(10 windows\); the last 1 are reported/);
  });
});

describe('plot', () => {
  const levels = [1, 4, 8].map((c, i) =>
    summarise({ kind: 'concurrency', value: c }, 1, [{ client: window([1000 * (i + 1), 2000 * (i + 1)], 1000 / (c * 10)), server: server(2) }], true, 3));

  it('draws one polyline per percentile with a point per level, and a legend', () => {
    const svg = latencyPlot(levels, 'ctr <test>');
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg.match(/<polyline /g)).toHaveLength(4);
    expect(svg.match(/<circle /g)).toHaveLength(12);
    for (const label of ['p50', 'p90', 'p95', 'p99']) expect(svg).toContain(`>${label}</text>`);
    expect(svg).toContain('ctr &lt;test&gt;');
  });

  it('wraps the SVG in a page for an .html file', () => {
    expect(plotFile(levels, 't', 'out.html')).toMatch(/^<!DOCTYPE html>[\s\S]*<svg [\s\S]*<\/svg>\n<\/body><\/html>\n$/);
    expect(plotFile(levels, 't', 'out.svg')).toMatch(/^<svg /);
  });
});
