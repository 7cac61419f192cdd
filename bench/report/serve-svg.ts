// A plain-SVG plot of latency (p50 solid, p99 dashed) against throughput
// (rows/s) for each contender of the serve suite, both axes log scale: the
// server and raw onnxruntime can be orders of magnitude apart. Closed-loop and
// raw batch-size points are joined in sweep order; open-loop points are
// squares. Hand-written SVG text: no plotting dependency.
import { loadLabel, type ServeContender, type ServePoint } from './serve-result.js';

const WIDTH = 880;
const HEIGHT = 520;
const PLOT = { left: 70, top: 50, right: 640, bottom: 450 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#7f7f7f'];

/** Ticks at 1, 2 and 5 x each power of ten from below `min` to above `max`. */
export function logTicks(min: number, max: number): number[] {
  const lo = Math.floor(Math.log10(Math.max(min, 1e-6)));
  const hi = Math.ceil(Math.log10(Math.max(max, min, 1e-6) * 1.0001));
  const ticks: number[] = [];
  for (let k = lo; k <= hi; k += 1) for (const m of [1, 2, 5]) ticks.push(Number((m * 10 ** k).toPrecision(6)));
  return ticks.filter((t) => t <= 10 ** hi);
}

export function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c] as string);
}

const num = (x: number) => Number(x.toFixed(1));
const tickLabel = (t: number) => (t >= 1000 ? `${t / 1000}k` : String(t));

export function renderServeSvg(contenders: readonly ServeContender[], title: string): string {
  const usable = (p: ServePoint) => p.rows_per_s > 0 && p.p50_ms > 0 && p.p99_ms > 0;
  const points = contenders.flatMap((c) => c.points.filter(usable));
  const xTicks = logTicks(Math.min(...points.map((p) => p.rows_per_s), 100), Math.max(...points.map((p) => p.rows_per_s), 1000));
  const yTicks = logTicks(Math.min(...points.map((p) => p.p50_ms), 1), Math.max(...points.map((p) => p.p99_ms), 1));
  const scale = (ticks: number[], from: number, to: number) => {
    const [lo, hi] = [Math.log10(ticks[0]!), Math.log10(ticks.at(-1)!)];
    return (v: number) => num(from + ((Math.log10(v) - lo) / (hi - lo)) * (to - from));
  };
  const x = scale(xTicks, PLOT.left, PLOT.right);
  const y = scale(yTicks, PLOT.bottom, PLOT.top);

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`,
  ];
  for (const t of xTicks) {
    const major = Number.isInteger(Math.log10(t));
    out.push(`<line x1="${x(t)}" y1="${PLOT.top}" x2="${x(t)}" y2="${PLOT.bottom}" stroke="${major ? '#d0d0d0' : '#f0f0f0'}"/>`,
      `<text x="${x(t)}" y="${PLOT.bottom + 18}" text-anchor="middle">${tickLabel(t)}</text>`);
  }
  for (const t of yTicks) {
    const major = Number.isInteger(Math.log10(t));
    out.push(`<line x1="${PLOT.left}" y1="${y(t)}" x2="${PLOT.right}" y2="${y(t)}" stroke="${major ? '#d0d0d0' : '#f0f0f0'}"/>`,
      `<text x="${PLOT.left - 6}" y="${y(t) + 4}" text-anchor="end">${t}</text>`);
  }
  out.push(
    `<rect x="${PLOT.left}" y="${PLOT.top}" width="${PLOT.right - PLOT.left}" height="${PLOT.bottom - PLOT.top}" fill="none" stroke="#333"/>`,
    `<text x="${(PLOT.left + PLOT.right) / 2}" y="${PLOT.bottom + 40}" text-anchor="middle">throughput, rows/s (log scale; hotpath: 1 row per request)</text>`,
    `<text transform="translate(18 ${(PLOT.top + PLOT.bottom) / 2}) rotate(-90)" text-anchor="middle">latency, ms (log scale)</text>`,
  );

  let legendY = PLOT.top + 8;
  contenders.forEach((contender, index) => {
    const colour = COLOURS[index % COLOURS.length]!;
    const swept = contender.points.filter((p) => usable(p) && p.rate === undefined);
    const open = contender.points.filter((p) => usable(p) && p.rate !== undefined);
    for (const [key, dash] of [['p50_ms', ''], ['p99_ms', ' stroke-dasharray="6 4"']] as const) {
      if (swept.length > 0) {
        const path = swept.map((p) => `${x(p.rows_per_s)},${y(p[key])}`).join(' ');
        out.push(`<polyline points="${path}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`);
      }
      for (const p of swept) {
        out.push(`<circle cx="${x(p.rows_per_s)}" cy="${y(p[key])}" r="3" fill="${key === 'p50_ms' ? colour : 'white'}" stroke="${colour}"><title>${escapeXml(`${contender.name} ${loadLabel(p)} ${key.replace('_ms', '')} ${p[key]} ms @ ${Math.round(p.rows_per_s)} rows/s`)}</title></circle>`);
      }
      for (const p of open) {
        out.push(`<rect x="${x(p.rows_per_s) - 4}" y="${y(p[key]) - 4}" width="8" height="8" fill="${key === 'p50_ms' ? colour : 'white'}" stroke="${colour}"><title>${escapeXml(`${contender.name} ${loadLabel(p)} ${key.replace('_ms', '')} ${p[key]} ms @ ${Math.round(p.rows_per_s)} rows/s`)}</title></rect>`);
      }
    }
    for (const p of [...swept, ...open]) {
      const label = p.concurrency !== undefined ? `c${p.concurrency}` : p.rate !== undefined ? `λ${p.rate}` : `b${p.batch}`;
      out.push(`<text x="${x(p.rows_per_s) + 5}" y="${y(p.p50_ms) + 12}" font-size="9" fill="${colour}">${label}</text>`);
    }
    const lx = PLOT.right + 20;
    out.push(`<line x1="${lx}" y1="${legendY}" x2="${lx + 24}" y2="${legendY}" stroke="${colour}" stroke-width="2"/>`,
      `<text x="${lx + 30}" y="${legendY + 4}">${escapeXml(contender.name)}</text>`);
    legendY += 20;
  });
  const lx = PLOT.right + 20;
  out.push(
    `<line x1="${lx}" y1="${legendY + 10}" x2="${lx + 24}" y2="${legendY + 10}" stroke="#333" stroke-width="2"/>`,
    `<text x="${lx + 30}" y="${legendY + 14}">p50</text>`,
    `<line x1="${lx}" y1="${legendY + 30}" x2="${lx + 24}" y2="${legendY + 30}" stroke="#333" stroke-width="2" stroke-dasharray="6 4"/>`,
    `<text x="${lx + 30}" y="${legendY + 34}">p99</text>`,
    `<circle cx="${lx + 12}" cy="${legendY + 50}" r="3" fill="#333"/>`,
    `<text x="${lx + 30}" y="${legendY + 54}">closed loop (c) / raw batch</text>`,
    `<rect x="${lx + 8}" y="${legendY + 66}" width="8" height="8" fill="#333"/>`,
    `<text x="${lx + 30}" y="${legendY + 74}">open-loop Poisson (λ)</text>`,
    '</svg>',
    '',
  );
  return out.join('\n');
}
