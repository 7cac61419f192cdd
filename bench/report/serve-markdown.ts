// Renders the serve suite's result as a markdown report: the four figures
// against their targets, the h2load agreement, the terms behind the figures,
// then one table per contender.
import { loadLabel, TARGETS, type FigureName, type ServeResult } from './serve-result.js';

const fixed = (x: number | null | undefined, digits: number) =>
  x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(digits);
const percent = (x: number | null | undefined) =>
  x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(1)}%`;

export function verdict(met: boolean | null): string {
  return met === null ? 'not measured' : met ? 'met' : 'missed';
}

/** One line on h2load: agreement, or why there is none. */
export function describeH2load(h2load: ServeResult['h2load']): string {
  if (h2load === 'not installed') return 'h2load: not installed';
  if ('error' in h2load) return `h2load: failed (${h2load.error})`;
  return `h2load ${h2load.h2load_rps.toFixed(0)} req/s vs own ${fixed(h2load.own_rps, 0)} req/s at ${h2load.streams} streams ` +
    `(${h2load.model}): difference ${percent(h2load.difference)} (target ${h2load.target}: ${verdict(h2load.met)})`;
}

export function renderServeMarkdown(result: ServeResult, heading: string): string {
  const lines = [`# ${heading}`, '', '## Figures (same run)', '', '| figure | measured | target | verdict |', '| --- | ---: | ---: | --- |'];
  for (const name of Object.keys(TARGETS) as FigureName[]) {
    const figure = result.figures[name];
    const digits = name.endsWith('_us_c1') ? 1 : 2;
    lines.push(`| \`${name}\`: ${TARGETS[name].meaning} | ${fixed(figure.value, digits)} | ${figure.target} | ${verdict(figure.met)} |`);
  }
  lines.push('', describeH2load(result.h2load), '', '## Terms', '', '| term | value |', '| --- | ---: |');
  for (const [term, value] of Object.entries(result.terms)) lines.push(`| \`${term}\` | ${value ?? '–'} |`);
  for (const contender of result.contenders) {
    lines.push('', `## ${contender.name}`, '', contender.description, '');
    if (contender.kind === 'raw') {
      lines.push('| load | runs/s | rows/s | mean ms | p50 ms | p99 ms | p99.9 ms |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const p of contender.points) {
        lines.push(`| ${loadLabel(p)} | ${fixed(p.throughput_rps, 0)} | ${fixed(p.rows_per_s, 0)} | ${fixed(p.mean_ms, 3)} | ${fixed(p.p50_ms, 3)} | ${fixed(p.p99_ms, 3)} | ${fixed(p.p999_ms, 3)} |`);
      }
      continue;
    }
    lines.push('| load | req/s | mean ms | p50 ms | p99 ms | p99.9 ms | mean batch | queued | server ms | errors |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const p of contender.points) {
      lines.push(`| ${loadLabel(p)} | ${fixed(p.throughput_rps, 0)} | ${fixed(p.mean_ms, 3)} | ${fixed(p.p50_ms, 3)} | ${fixed(p.p99_ms, 3)} | ${fixed(p.p999_ms, 3)} | ${fixed(p.mean_batch, 2)} | ${percent(p.queue_share)} | ${fixed(p.server_request_ms, 3)} | ${p.errors} |`);
    }
  }
  lines.push('', '`queued` is ModelStatistics queue ns / success ns over the point; `mean batch` is inference_count / execution_count;',
    '`server ms` is the server\'s mean receipt-to-response time. Round trips are the load generator\'s (headers sent to trailers received).', '');
  return lines.join('\n');
}
