/**
 * `hotpath tune`'s report: one row per candidate (its settings, the level
 * and throughput it scored within the budget, its p50/p99 there, how its
 * search ended), the JSON of every candidate and level, and the plot of p99
 * against throughput, one line per candidate, under the budget line. Pure.
 */
import { linePlot, svgOrHtml, type PlotSeries } from './perf-plot.js';
import type { LevelResult } from './perf-report.js';
import type { BatchingSettings } from './tune-grid.js';

export interface CandidateResult {
  /** 0: the model's current config; 1...: the grid's candidates. */
  readonly index: number;
  readonly settings: BatchingSettings;
  readonly levels: readonly LevelResult[];
  /** The best level within the budget, if any. */
  readonly best: LevelResult | undefined;
  /** Why the candidate has no levels (a load the server refused), or undefined. */
  readonly failure: string | undefined;
  /** Seconds the candidate took, load included. */
  readonly seconds: number;
}

export function settingsLabel(s: BatchingSettings): string {
  return `mbs ${s.maxBatchSize}, pref [${s.preferredBatchSizes.join(',')}], delay ${s.maxQueueDelayUs}us, x${s.instanceCount}`;
}

/** Why the search stopped after its last level. */
function ending(result: CandidateResult, budgetUs: number, maxConcurrency: number): string {
  if (result.failure !== undefined) return `load failed: ${result.failure}`;
  const last = result.levels[result.levels.length - 1];
  if (last === undefined) return 'not measured';
  if (last.errors > 0) return `errors at c=${last.concurrency}`;
  if (last.p99Us > budgetUs) return `over budget at c=${last.concurrency}`;
  if ((last.concurrency ?? 0) >= maxConcurrency) return `reached c=${last.concurrency}`;
  return `plateau at c=${last.concurrency}`;
}

export function tuneTable(results: readonly CandidateResult[], chosen: number, budgetUs: number, maxConcurrency: number): string {
  const header = ['#', 'max_batch', 'preferred', 'delay us', 'inst', 'best c', 'infer/s', 'p50 ms', 'p99 ms', 'levels', 'search ended', ''];
  const rows = results.map((r) => {
    // Nothing within the budget: the first level's figures, starred, say by how much it missed.
    const shown = r.best ?? r.levels[0];
    const star = r.best === undefined ? '*' : '';
    return [
    r.index === 0 ? 'current' : String(r.index),
    String(r.settings.maxBatchSize),
    r.settings.preferredBatchSizes.length === 0 ? '-' : r.settings.preferredBatchSizes.join(','),
    String(r.settings.maxQueueDelayUs),
    String(r.settings.instanceCount),
    shown === undefined ? '-' : `${shown.concurrency}${star}`,
    shown === undefined ? '-' : `${shown.inferencesPerSecond.toFixed(1)}${star}`,
    shown === undefined ? '-' : `${(shown.p50Us / 1000).toFixed(3)}${star}`,
    shown === undefined ? '-' : `${(shown.p99Us / 1000).toFixed(3)}${star}`,
    String(r.levels.length),
    ending(r, budgetUs, maxConcurrency),
    r.index === chosen ? '<- BEST' : shown !== undefined && !shown.stable ? '(unstable)' : '',
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, i) => (i >= 9 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd();
  const note = results.some((r) => r.best === undefined && r.levels.length > 0) ? '* over the budget: the lowest level measured, not a score\n' : '';
  return `${[line(header), ...rows.map(line)].join('\n')}\n${note}`;
}

const COLORS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#666666'];
const DASHES = [undefined, '6 3', '2 3', '8 3 2 3'];

export function tunePlot(results: readonly CandidateResult[], title: string, budgetUs: number, file: string): string {
  const series: PlotSeries[] = results.filter((r) => r.levels.length > 0).map((r, i) => ({
    label: `${r.index === 0 ? 'current' : `#${r.index}`}: ${r.settings.maxBatchSize}/${r.settings.preferredBatchSizes.join(',') || '-'}/${r.settings.maxQueueDelayUs}us/x${r.settings.instanceCount}`,
    color: COLORS[i % COLORS.length]!,
    ...(DASHES[Math.floor(i / COLORS.length) % DASHES.length] === undefined ? {} : { dash: DASHES[Math.floor(i / COLORS.length) % DASHES.length]! }),
    points: r.levels.map((l) => ({ x: l.inferencesPerSecond, y: l.p99Us / 1000 })),
  }));
  return svgOrHtml(linePlot(series, `${title} (p99; legend: max_batch/preferred/delay/instances)`, budgetUs / 1000), title, file);
}
