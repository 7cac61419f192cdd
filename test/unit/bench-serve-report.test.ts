import { describe, expect, it } from 'vitest';
import { renderServeMarkdown } from '../../bench/report/serve-markdown.js';
import { computeRatios } from '../../bench/report/serve-ratios.js';
import { TARGETS, type ServeContender, type ServePoint, type ServeResult } from '../../bench/report/serve-result.js';
import { escapeXml, logTicks, renderServeSvg } from '../../bench/report/serve-svg.js';

function point(fields: Partial<ServePoint>): ServePoint {
  return {
    throughput_rps: 100, rows_per_s: 100, p50_ms: 1, p90_ms: 2, p99_ms: 3, p999_ms: 4, mean_ms: 1.2, max_ms: 5,
    mean_batch: 1, requests: 100, errors: 0, ...fields,
  };
}

const raw: ServeContender = {
  name: 'ort-raw', kind: 'raw', description: 'raw',
  points: [point({ batch: 1, rows_per_s: 5000, p50_ms: 0.1 }), point({ batch: 64, throughput_rps: 800, rows_per_s: 51_200, mean_batch: 64 })],
};
const unbatched: ServeContender = {
  name: 'hotpath-unbatched', kind: 'hotpath', description: 'off',
  points: [point({ concurrency: 1, p50_ms: 0.5 }), point({ concurrency: 64, throughput_rps: 2000, rows_per_s: 2000, queue_share: 0.9 })],
};
const batched: ServeContender = {
  name: 'hotpath-batched', kind: 'hotpath', description: 'on',
  points: [
    point({ concurrency: 1, p50_ms: 0.45 }),
    point({ concurrency: 64, throughput_rps: 8000, rows_per_s: 8000, mean_batch: 12.5, queue_share: 0.4 }),
    point({ rate: 500, throughput_rps: 499, rows_per_s: 499, dropped: 0 }),
  ],
};

describe('bench serve ratios', () => {
  it('computes each ratio against the baseline of the same run', () => {
    expect(computeRatios(batched, unbatched, raw)).toEqual({
      batched_vs_unbatched_c64: 4,
      batched_vs_raw_best: 0.156,
      p50_overhead_ms_c1: 0.35,
    });
  });

  it('reports a ratio whose inputs are missing as null', () => {
    expect(computeRatios(batched, undefined, undefined)).toEqual({
      batched_vs_unbatched_c64: null, batched_vs_raw_best: null, p50_overhead_ms_c1: null,
    });
  });
});

describe('bench serve report rendering', () => {
  const result: ServeResult = {
    suite: 'serve', model: 'ranker_mlp', contenders: [raw, unbatched, batched],
    ratios: computeRatios(batched, unbatched, raw), targets: TARGETS, settings: {},
  };

  it('renders ratios with targets and verdicts, and one table per contender', () => {
    const markdown = renderServeMarkdown(result, 'serve test');
    expect(markdown).toMatch(/^# serve test\n/);
    expect(markdown).toMatch(/\| `batched_vs_unbatched_c64`.* \| 4\.00 \| >= 3 \| met \|/);
    expect(markdown).toMatch(/\| `batched_vs_raw_best`.* \| 0\.16 \| >= 0\.7 \| missed \|/);
    expect(markdown).toMatch(/\| `p50_overhead_ms_c1`.* \| 0\.350 \| <= 0\.5 \| met \|/);
    expect(markdown).toMatch(/## hotpath-batched[\s\S]*\| c=64 \| 8000 \| 8000 \| 1\.000 \| 2\.000 \| 3\.000 \| 4\.000 \| 12\.50 \| 40\.0% \| 0 \| 0 \|/);
    expect(markdown).toMatch(/\| λ=500\/s \| 499 \|/);
    expect(markdown).toMatch(/## ort-raw[\s\S]*\| batch 64 \| 800 \| 51200 \|/);
  });

  it('draws an SVG with axes, a legend entry per contender and a mark per point', () => {
    const svg = renderServeSvg(result.contenders, 'latency <vs> throughput');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('latency &lt;vs&gt; throughput');
    expect(svg).toContain('throughput, rows/s (log scale');
    expect(svg).toContain('latency, ms (log scale)');
    for (const name of ['ort-raw', 'hotpath-unbatched', 'hotpath-batched']) expect(svg).toContain(`>${name}</text>`);
    // p50 and p99 for each swept point (2 + 2 + 2) as circles; the open-loop point as squares, plus the legend's marks.
    expect(svg.match(/<circle /g)).toHaveLength(2 * 6 + 1);
    expect(svg.match(/<rect x=/g)!.length).toBe(1 + 2 + 1);
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it('picks readable ticks', () => {
    expect(logTicks(0.1, 30)).toEqual([0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]);
    expect(escapeXml(`a<b & "c"`)).toBe('a&lt;b &amp; &quot;c&quot;');
  });
});
