import { describe, expect, it } from 'vitest';
import { renderServeMarkdown } from '../../bench/report/serve-markdown.js';
import { computeFigures, figureReport, h2loadDifference } from '../../bench/report/serve-ratios.js';
import type { ServeContender, ServePoint, ServeResult } from '../../bench/report/serve-result.js';
import { escapeXml, logTicks, renderServeSvg } from '../../bench/report/serve-svg.js';

function point(fields: Partial<ServePoint>): ServePoint {
  return {
    throughput_rps: 100, rows_per_s: 100, p50_ms: 1, p90_ms: 2, p99_ms: 3, p999_ms: 4, mean_ms: 1.2, max_ms: 5,
    mean_batch: 1, requests: 100, errors: 0, ...fields,
  };
}

function contender(name: string, kind: ServeContender['kind'], points: ServePoint[]): ServeContender {
  return { name, kind, model: name.replace(/^[a-z-]+?-(?=ctr|ranker)/, ''), description: name, points };
}

const echoCtr = contender('echo-ctr_mlp', 'echo', [
  point({ concurrency: 1, mean_ms: 0.031 }), point({ concurrency: 64, throughput_rps: 40_000, rows_per_s: 40_000 }),
]);
const echoRanker = contender('echo-ranker_mlp', 'echo', [
  point({ concurrency: 1, mean_ms: 0.035 }), point({ concurrency: 64, throughput_rps: 50_000, rows_per_s: 50_000 }),
]);
const ctr = contender('hotpath-ctr_mlp', 'hotpath', [
  point({ concurrency: 1, mean_ms: 0.535 }),
  point({ concurrency: 64, throughput_rps: 20_000, rows_per_s: 20_000, mean_batch: 12.5, queue_share: 0.4, server_request_ms: 0.9 }),
]);
const ctrNb = contender('hotpath-ctr_mlp_nb', 'hotpath', [point({ concurrency: 1, mean_ms: 0.137 }), point({ concurrency: 64 })]);
const ranker = contender('hotpath-ranker_mlp', 'hotpath', [point({ concurrency: 64, throughput_rps: 15_000, rows_per_s: 15_000 })]);
const rawCtr = contender('ort-raw-ctr_mlp', 'raw', [point({ batch: 1, mean_ms: 0.007, rows_per_s: 140_000 })]);
const rawRanker = contender('ort-raw-ranker_mlp', 'raw', [
  point({ batch: 1, rows_per_s: 12_000 }), point({ batch: 64, throughput_rps: 1171.875, rows_per_s: 75_000, mean_batch: 64 }),
  point({ batch: 128, rows_per_s: 70_000 }),
]);
const all = { echoCtr, echoRanker, ctr, ctrUnbatched: ctrNb, ranker, rawCtr, rawRanker, ctrMaxQueueDelayUs: 200 };

describe('bench serve figures', () => {
  it('computes each figure against the echo and raw contenders of the same run', () => {
    const { figures, terms } = computeFigures(all);
    // limit = 1 / (1/50000 + 1/75000) = 30000 req/s
    expect(terms.limit_rps).toBe(30_000);
    expect(terms.raw_best_rows_per_s).toBe(75_000);
    expect(terms.raw_best_batch).toBe(64);
    expect(figures).toEqual({
      batched_vs_echo_c64: 0.5,
      batched_vs_limit_c64: 0.5,
      overhead_us_c1: 99, // 137 - 31 - 7
      batched_overhead_us_c1: 297, // 535 - 31 - 7 - 200
    });
  });

  it('reports a figure whose inputs are missing as null', () => {
    const { figures, terms } = computeFigures({ ctr, ctrMaxQueueDelayUs: null });
    expect(figures).toEqual({ batched_vs_echo_c64: null, batched_vs_limit_c64: null, overhead_us_c1: null, batched_overhead_us_c1: null });
    expect(terms.ctr_c64_rps).toBe(20_000);
    expect(terms.limit_rps).toBeNull();
  });

  it('ignores points without successful requests', () => {
    const failed = contender('echo-ctr_mlp', 'echo', [point({ concurrency: 64, requests: 0, errors: 10 })]);
    expect(computeFigures({ ...all, echoCtr: failed }).figures.batched_vs_echo_c64).toBeNull();
  });

  it('puts the targets and verdicts next to the figures', () => {
    const report = figureReport(computeFigures(all).figures);
    expect(report.batched_vs_echo_c64).toEqual({ value: 0.5, target: '>= 0.6', met: false });
    expect(report.batched_vs_limit_c64).toEqual({ value: 0.5, target: '>= 0.8', met: false });
    expect(report.overhead_us_c1).toEqual({ value: 99, target: '<= 50', met: false });
    expect(report.batched_overhead_us_c1).toEqual({ value: 297, target: '<= 80', met: false });
    expect(figureReport({ batched_vs_echo_c64: 0.6, batched_vs_limit_c64: null, overhead_us_c1: 50, batched_overhead_us_c1: 80 }))
      .toMatchObject({ batched_vs_echo_c64: { met: true }, batched_vs_limit_c64: { met: null }, overhead_us_c1: { met: true }, batched_overhead_us_c1: { met: true } });
  });

  it('measures the distance to h2load', () => {
    expect(h2loadDifference(9000, 10_000)).toEqual({ difference: 0.1, met: true });
    expect(h2loadDifference(12_000, 10_000)).toEqual({ difference: 0.2, met: false });
    expect(h2loadDifference(null, 10_000)).toEqual({ difference: null, met: null });
  });
});

describe('bench serve report rendering', () => {
  const { figures, terms } = computeFigures(all);
  const result: ServeResult = {
    suite: 'serve', models: ['ctr_mlp', 'ctr_mlp_nb', 'ranker_mlp'], contenders: [echoCtr, echoRanker, ctr, ctrNb, ranker, rawCtr, rawRanker],
    figures: figureReport(figures), terms, h2load: 'not installed', settings: {},
  };

  it('renders figures with targets and verdicts, the terms, and one table per contender', () => {
    const markdown = renderServeMarkdown(result, 'serve test');
    expect(markdown).toMatch(/^# serve test\n/);
    expect(markdown).toMatch(/\| `batched_vs_echo_c64`.* \| 0\.50 \| >= 0\.6 \| missed \|/);
    expect(markdown).toMatch(/\| `overhead_us_c1`.* \| 99\.0 \| <= 50 \| missed \|/);
    expect(markdown).toContain('h2load: not installed');
    expect(markdown).toMatch(/\| `limit_rps` \| 30000 \|/);
    expect(markdown).toMatch(/## hotpath-ctr_mlp\n[\s\S]*\| c=64 \| 20000 \| 1\.200 \| 1\.000 \| 3\.000 \| 4\.000 \| 12\.50 \| 40\.0% \| 0\.900 \| 0 \|/);
    expect(markdown).toMatch(/## ort-raw-ranker_mlp[\s\S]*\| batch 64 \| 1172 \| 75000 \|/);
    const agreed = renderServeMarkdown({
      ...result,
      h2load: {
        version: 'h2load nghttp2/1.52.0', command: 'h2load ...', model: 'ctr_mlp', streams: 64, h2load_rps: 20_000, h2load_mean_ms: 3.2,
        h2load_failed: 0, server_successes: 60_000, own_rps: 19_000, own_runs_rps: [18_000, 20_000], own_errors: 0,
        difference: 0.05, target: '<= 0.15', met: true,
      },
    }, 'serve test');
    expect(agreed).toContain('h2load 20000 req/s vs own 19000 req/s at 64 streams (ctr_mlp): difference 5.0% (target <= 0.15: met)');
  });

  it('draws an SVG with axes, a legend entry per contender and a mark per point', () => {
    const svg = renderServeSvg(result.contenders, 'latency <vs> throughput');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('latency &lt;vs&gt; throughput');
    for (const c of result.contenders) expect(svg).toContain(`>${c.name}</text>`);
    const points = result.contenders.reduce((n, c) => n + c.points.length, 0);
    // p50 and p99 for each point as circles, plus the legend's closed-loop mark.
    expect(svg.match(/<circle /g)).toHaveLength(2 * points + 1);
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it('picks readable ticks', () => {
    expect(logTicks(0.1, 30)).toEqual([0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]);
    expect(escapeXml(`a<b & "c"`)).toBe('a&lt;b &amp; &quot;c&quot;');
  });
});
