/**
 * `--plot FILE.svg|html`: latency percentiles (p50, p90, p95, p99, ms)
 * against throughput (inferences a second), one point per level, as a
 * self-contained SVG (an .html file wraps the same SVG in a page). No
 * plotting library: axes, ticks, polylines and a legend; `linePlot` also
 * draws tune's one line per candidate under its budget line. Pure.
 */
import type { LevelResult } from './perf-report.js';

const WIDTH = 720;
const HEIGHT = 440;
const MARGIN = { left: 70, right: 190, top: 30, bottom: 50 };
const SERIES = [
  { key: 'p50Us', label: 'p50', color: '#1b9e77' },
  { key: 'p90Us', label: 'p90', color: '#7570b3' },
  { key: 'p95Us', label: 'p95', color: '#d95f02' },
  { key: 'p99Us', label: 'p99', color: '#e7298a' },
] as const;

/** The plot for `file`: HTML when it ends in .html or .htm, SVG otherwise. */
export function plotFile(levels: readonly LevelResult[], title: string, file: string): string {
  return svgOrHtml(latencyPlot(levels, title), title, file);
}

export function latencyPlot(levels: readonly LevelResult[], title: string): string {
  const points = [...levels].sort((a, b) => a.inferencesPerSecond - b.inferencesPerSecond);
  return linePlot(
    SERIES.map((series) => ({ label: series.label, color: series.color, points: points.map((l) => ({ x: l.inferencesPerSecond, y: l[series.key] / 1000 })) })),
    title,
  );
}

/** One line of a plot: its legend label, colour and points (throughput, latency in ms). */
export interface PlotSeries {
  readonly label: string;
  readonly color: string;
  readonly points: readonly { readonly x: number; readonly y: number }[];
  /** Dash pattern (SVG stroke-dasharray), to tell apart more lines than colours. */
  readonly dash?: string;
}

/**
 * Latency (ms) against throughput (inferences/s) for any number of lines, with
 * an optional dashed horizontal line (a latency budget), as SVG. Shared by
 * perf's percentile plot and tune's plot of every candidate.
 */
export function linePlot(series: readonly PlotSeries[], title: string, budgetMs?: number): string {
  const all = series.flatMap((s) => s.points);
  const xMax = niceCeiling(Math.max(1, ...all.map((p) => p.x)));
  const yMax = niceCeiling(Math.max(0.001, budgetMs ?? 0, ...all.map((p) => p.y)));
  const height = Math.max(HEIGHT, MARGIN.top + 30 + series.length * 18);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const x = (value: number) => MARGIN.left + (value / xMax) * plotW;
  const y = (ms: number) => MARGIN.top + plotH - (ms / yMax) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="18" font-size="14">${escape(title)}</text>`,
  ];
  for (let i = 0; i <= 5; i += 1) {
    const xv = (xMax * i) / 5;
    const yv = (yMax * i) / 5;
    out.push(
      `<line x1="${x(xv)}" y1="${MARGIN.top}" x2="${x(xv)}" y2="${MARGIN.top + plotH}" stroke="#eee"/>`,
      `<text x="${x(xv)}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${format(xv)}</text>`,
      `<line x1="${MARGIN.left}" y1="${y(yv)}" x2="${MARGIN.left + plotW}" y2="${y(yv)}" stroke="#eee"/>`,
      `<text x="${MARGIN.left - 8}" y="${y(yv) + 4}" text-anchor="end">${format(yv)}</text>`,
    );
  }
  out.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${height - 10}" text-anchor="middle">throughput (inferences/s)</text>`,
    `<text x="16" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${MARGIN.top + plotH / 2})">latency (ms)</text>`,
  );
  if (budgetMs !== undefined) {
    out.push(
      `<line x1="${MARGIN.left}" y1="${y(budgetMs)}" x2="${MARGIN.left + plotW}" y2="${y(budgetMs)}" stroke="#c00" stroke-dasharray="6 4"/>`,
      `<text x="${MARGIN.left + plotW - 4}" y="${y(budgetMs) - 4}" text-anchor="end" fill="#c00">budget ${format(budgetMs)} ms</text>`,
    );
  }
  series.forEach((line, i) => {
    const coords = [...line.points].sort((a, b) => a.x - b.x).map((p) => `${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${line.color}" stroke-width="2"${line.dash ? ` stroke-dasharray="${line.dash}"` : ''} points="${coords.join(' ')}"/>`);
    for (const c of coords) {
      const [cx, cy] = c.split(',');
      out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${line.color}"/>`);
    }
    const ly = MARGIN.top + 16 + i * 18;
    out.push(
      `<line x1="${WIDTH - MARGIN.right + 16}" y1="${ly - 4}" x2="${WIDTH - MARGIN.right + 36}" y2="${ly - 4}" stroke="${line.color}" stroke-width="2"${line.dash ? ` stroke-dasharray="${line.dash}"` : ''}/>`,
      `<text x="${WIDTH - MARGIN.right + 42}" y="${ly}">${escape(line.label)}</text>`,
    );
  });
  out.push('</svg>\n');
  return out.join('\n');
}

/** An SVG, or the same SVG in an HTML page when `file` ends in .html or .htm. */
export function svgOrHtml(svg: string, title: string, file: string): string {
  if (!/\.html?$/i.test(file)) return svg;
  return `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${escape(title)}</title></head>\n<body>\n${svg}</body></html>\n`;
}

/** 1, 2 or 5 times a power of ten, at least `value`. */
function niceCeiling(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function format(value: number): string {
  return value >= 100 ? String(Math.round(value)) : String(Number(value.toPrecision(3)));
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
