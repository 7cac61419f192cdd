// Renders the serve suite's result as a markdown report: the three ratios
// against their targets, then one table per contender.
import { loadLabel, meetsTarget, TARGETS, type RatioName, type ServeResult } from './serve-result.js';

const fixed = (x: number | null | undefined, digits: number) =>
  x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits);
const percent = (x: number | null | undefined) =>
  x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(1)}%`;

export function ratioVerdict(name: RatioName, value: number | null): string {
  const met = meetsTarget(name, value);
  return met === null ? 'not measured' : met ? 'met' : 'missed';
}

export function renderServeMarkdown(result: ServeResult, heading: string): string {
  const lines = [`# ${heading}`, '', '## Ratios (same run)', '', '| ratio | measured | target | verdict |', '| --- | ---: | ---: | --- |'];
  for (const name of Object.keys(TARGETS) as RatioName[]) {
    const target = TARGETS[name];
    const value = result.ratios[name];
    lines.push(`| \`${name}\`: ${target.meaning} | ${fixed(value, name === 'p50_overhead_ms_c1' ? 3 : 2)} | ${target.op} ${target.value} | ${ratioVerdict(name, value)} |`);
  }
  for (const contender of result.contenders) {
    lines.push('', `## ${contender.name}`, '', contender.description, '');
    if (contender.kind === 'raw') {
      lines.push('| load | runs/s | rows/s | p50 ms | p90 ms | p99 ms | p99.9 ms | rows/run |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const p of contender.points) {
        lines.push(`| ${loadLabel(p)} | ${fixed(p.throughput_rps, 0)} | ${fixed(p.rows_per_s, 0)} | ${fixed(p.p50_ms, 3)} | ${fixed(p.p90_ms, 3)} | ${fixed(p.p99_ms, 3)} | ${fixed(p.p999_ms, 3)} | ${fixed(p.mean_batch, 0)} |`);
      }
      continue;
    }
    lines.push('| load | req/s | rows/s | p50 ms | p90 ms | p99 ms | p99.9 ms | mean batch | queued | errors | dropped |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const p of contender.points) {
      lines.push(`| ${loadLabel(p)} | ${fixed(p.throughput_rps, 0)} | ${fixed(p.rows_per_s, 0)} | ${fixed(p.p50_ms, 3)} | ${fixed(p.p90_ms, 3)} | ${fixed(p.p99_ms, 3)} | ${fixed(p.p999_ms, 3)} | ${fixed(p.mean_batch, 2)} | ${percent(p.queue_share)} | ${p.errors} | ${p.dropped ?? 0} |`);
    }
  }
  lines.push('', '`queued` is ModelStatistics queue ns / success ns over the point; `mean batch` is inference_count / execution_count.',
    'Open-loop (λ) latencies count from each request\'s scheduled send time.', '');
  return lines.join('\n');
}
