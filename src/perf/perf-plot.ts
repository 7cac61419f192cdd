/**
 * `--plot FILE.svg|html`: latency percentiles (p50, p90, p95, p99, ms)
 * against throughput (inferences a second), one point per level, as a
 * self-contained SVG (an .html file wraps the same SVG in a page). No
 * plotting library: axes, ticks, four polylines and a legend. Pure.
 */
import type { LevelResult } from './perf-report.js';

const WIDTH = 720;
const HEIGHT = 440;
const MARGIN = { left: 70, right: 130, top: 30, bottom: 50 };
const SERIES = [
  { key: 'p50Us', label: 'p50', color: '#1b9e77' },
  { key: 'p90Us', label: 'p90', color: '#7570b3' },
  { key: 'p95Us', label: 'p95', color: '#d95f02' },
  { key: 'p99Us', label: 'p99', color: '#e7298a' },
] as const;

/** The plot for `file`: HTML when it ends in .html or .htm, SVG otherwise. */
export function plotFile(levels: readonly LevelResult[], title: string, file: string): string {
  const svg = latencyPlot(levels, title);
  if (!/\.html?$/i.test(file)) return svg;
  return `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${escape(title)}</title></head>\n<body>\n${svg}</body></html>\n`;
}

export function latencyPlot(levels: readonly LevelResult[], title: string): string {
  const points = [...levels].sort((a, b) => a.inferencesPerSecond - b.inferencesPerSecond);
  const xMax = niceCeiling(Math.max(1, ...points.map((l) => l.inferencesPerSecond)));
  const yMax = niceCeiling(Math.max(0.001, ...points.map((l) => l.p99Us / 1000)));
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (value: number) => MARGIN.left + (value / xMax) * plotW;
  const y = (ms: number) => MARGIN.top + plotH - (ms / yMax) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
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
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 10}" text-anchor="middle">throughput (inferences/s)</text>`,
    `<text x="16" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${MARGIN.top + plotH / 2})">latency (ms)</text>`,
  );
  SERIES.forEach((series, i) => {
    const coords = points.map((l) => `${x(l.inferencesPerSecond).toFixed(1)},${y(l[series.key] / 1000).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${series.color}" stroke-width="2" points="${coords.join(' ')}"/>`);
    for (const c of coords) {
      const [cx, cy] = c.split(',');
      out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${series.color}"/>`);
    }
    const ly = MARGIN.top + 16 + i * 18;
    out.push(
      `<line x1="${WIDTH - MARGIN.right + 16}" y1="${ly - 4}" x2="${WIDTH - MARGIN.right + 36}" y2="${ly - 4}" stroke="${series.color}" stroke-width="2"/>`,
      `<text x="${WIDTH - MARGIN.right + 42}" y="${ly}">${series.label}</text>`,
    );
  });
  out.push('</svg>\n');
  return out.join('\n');
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
