/**
 * The leak patrol's flags (options table, common/option-table.ts); the
 * patrol is off with `--patrol-interval 0`.
 */
import { byteSizeFlag, integerFlag, numberFlag, UsageError } from '../common/flag-values.js';
import type { FlagValues, OptionEntry } from '../common/option-table.js';

export interface PatrolSettings {
  readonly intervalMs: number;
  readonly leakThresholdBytes: number;
  readonly growthBytesPerSecond: number;
  readonly window: number;
  readonly maxRestarts: number;
}

export interface PatrolOptions {
  /** Undefined when --patrol-interval is 0. */
  patrol: PatrolSettings | undefined;
}

const DEFAULTS = { interval: '30', 'leak-threshold': '500MiB', 'growth-rate': '1MiB', window: '5', 'max-restarts': '3' } as const;

function settings(values: FlagValues): PatrolSettings | undefined {
  const raw = (name: keyof typeof DEFAULTS) => (values[`patrol-${name}`] as string | undefined) ?? DEFAULTS[name];
  const intervalS = numberFlag('--patrol-interval', raw('interval'), 0, 86400);
  if (intervalS === 0) return undefined;
  return {
    intervalMs: Math.max(1, Math.round(intervalS * 1000)),
    leakThresholdBytes: byteSizeFlag('--patrol-leak-threshold', raw('leak-threshold')),
    growthBytesPerSecond: byteSizeFlag('--patrol-growth-rate', raw('growth-rate')),
    window: integerFlag('--patrol-window', raw('window'), 2, 1000),
    maxRestarts: integerFlag('--patrol-max-restarts', raw('max-restarts'), 0, 1000),
  };
}

export const PATROL_OPTIONS: readonly OptionEntry<object>[] = [{
  flags: [
    { name: 'patrol-interval', arg: 'S', help: 'leak patrol sampling interval in seconds (default 30; 0 = off)' },
    { name: 'patrol-leak-threshold', arg: 'SIZE', help: 'a worker generation leaking more restarts its pool (default 500MiB)' },
    { name: 'patrol-growth-rate', arg: 'SIZE', help: 'sustained growth per second over the window that restarts it (default 1MiB)' },
    { name: 'patrol-window', arg: 'K', help: 'samples in the growth window (default 5)' },
    { name: 'patrol-max-restarts', arg: 'N', help: 'restarts before a model whose leak comes back is marked degraded (default 3)' },
  ],
  defaults: (): PatrolOptions => ({ patrol: settings({}) }),
  parse: (values): Partial<PatrolOptions> =>
    Object.keys(DEFAULTS).some((name) => values[`patrol-${name}`] !== undefined) ? { patrol: settings(values) } : {},
  check: (o: PatrolOptions, name) => {
    const p = o.patrol;
    if (p === undefined) return;
    const bad = (field: keyof PatrolSettings, ok: boolean) => {
      if (!ok) throw new UsageError(`${name('patrol')}.${field}: expected a positive number in range (see --help), got ${p[field]}`);
    };
    bad('intervalMs', Number.isInteger(p.intervalMs) && p.intervalMs >= 1);
    bad('leakThresholdBytes', p.leakThresholdBytes > 0);
    bad('growthBytesPerSecond', p.growthBytesPerSecond > 0);
    bad('window', Number.isInteger(p.window) && p.window >= 2 && p.window <= 1000);
    bad('maxRestarts', Number.isInteger(p.maxRestarts) && p.maxRestarts >= 0 && p.maxRestarts <= 1000);
  },
  fields: Object.fromEntries(Object.keys(DEFAULTS).map((name) => [`patrol-${name}`, 'patrol'])),
}];
