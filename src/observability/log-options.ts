/**
 * The logging and metrics flags (options table, common/option-table.ts).
 *
 * Logs: hotpath's `--log-level` is a threshold (pino's); Triton's
 * `--log-verbose N`, `--log-info`, `--log-warning` and `--log-error` switch
 * levels on and off. They map onto the threshold: the lowest level switched
 * on is where logging starts (verbose 1 = debug, 2 and more = trace), and all
 * of them off is silent. `--log-level`, when given, wins over them.
 */
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import type { LevelWithSilent } from 'pino';
import { booleanFlag, choiceFlag, integerFlag, numberFlag, UsageError } from '../common/flag-values.js';
import { isBoolean, numberIn, option, type FlagValues, type OptionEntry } from '../common/option-table.js';
import type { LogFormat } from './logger.js';

export const LOG_LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
/** Triton's `--log-format` values are kinds of pretty: one readable line a record. */
const LOG_FORMATS = ['json', 'pretty', 'default', 'ISO8601'] as const;

export interface LogOptions {
  logLevel: LevelWithSilent;
  logFormat: LogFormat;
  /** `--log-file`: logs are appended to this file instead of stdout; undefined: stdout. */
  logFile: string | undefined;
  /** Fraction (0..1) of successful requests access-logged; failed ones always are. */
  accessLogSampleRate: number;
}

export interface MetricsOptions {
  /** `--metrics-tenant-labels`: false, and no metric names a tenant. */
  metricsTenantLabels: boolean;
  /** `--metrics-interval-ms`: the machine's CPU utilisation is sampled at most this often (scrapes in between read the last sample). */
  metricsIntervalMs: number;
}

const TRITON_SWITCHES = ['log-verbose', 'log-info', 'log-warning', 'log-error'] as const;

/** The threshold Triton's switches give: the lowest level switched on. */
function tritonLevel(values: FlagValues): LevelWithSilent {
  const verbose = integerFlag('--log-verbose', (values['log-verbose'] as string | undefined) ?? '0', 0, 1_000_000);
  if (verbose >= 2) return 'trace';
  if (verbose === 1) return 'debug';
  if (booleanFlag('--log-info', values['log-info'] as string | undefined, true)) return 'info';
  if (booleanFlag('--log-warning', values['log-warning'] as string | undefined, true)) return 'warn';
  if (booleanFlag('--log-error', values['log-error'] as string | undefined, true)) return 'error';
  return 'silent';
}

function parseLogs(values: FlagValues): Partial<LogOptions> {
  const out: Partial<LogOptions> = {};
  const level = values['log-level'] as string | undefined;
  const switches = TRITON_SWITCHES.some((flag) => values[flag] !== undefined);
  // Triton's switches are checked even when --log-level wins, so a typo in them still stops start-up.
  const fromSwitches = switches ? tritonLevel(values) : undefined;
  if (level !== undefined) out.logLevel = choiceFlag('--log-level', level, LOG_LEVELS);
  else if (fromSwitches !== undefined) out.logLevel = fromSwitches;
  const format = values['log-format'] as string | undefined;
  if (format !== undefined) out.logFormat = choiceFlag('--log-format', format, LOG_FORMATS) === 'json' ? 'json' : 'pretty';
  const file = values['log-file'] as string | undefined;
  if (file !== undefined) {
    if (file === '') throw new UsageError("--log-file: expected a file, got ''");
    out.logFile = path.resolve(file);
  }
  return out;
}

/** The log file can be appended to (created when missing): checked now, so a bad path stops start-up naming it. */
function logFileProblem(file: string): string | undefined {
  try {
    closeSync(openSync(file, 'a'));
    return undefined;
  } catch (err) {
    return `expected a file hotpath can append to (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
}

export const LOG_OPTIONS: readonly OptionEntry<object>[] = [
  {
    flags: [
      { name: 'log-level', arg: 'LEVEL', help: 'trace|debug|info|warn|error|fatal|silent (default info)' },
      { name: 'log-format', arg: 'FORMAT', help: 'json|pretty (default json); [T] default and ISO8601 mean pretty' },
      { name: 'log-file', arg: 'FILE', triton: true, help: 'append the logs to FILE instead of writing them to stdout' },
      { name: 'log-verbose', arg: 'N', triton: true, help: 'verbose logging: 1 = debug, 2 or more = trace (--log-level wins when given)' },
      { name: 'log-info', triton: true, help: 'info records (default true); false: from warn up' },
      { name: 'log-warning', triton: true, help: 'warnings (default true); with --log-info=false and this false: errors only' },
      { name: 'log-error', triton: true, help: 'errors (default true); all four off: silent' },
    ],
    defaults: (): Omit<LogOptions, 'accessLogSampleRate'> => ({ logLevel: 'info', logFormat: 'json', logFile: undefined }),
    parse: parseLogs,
    check: (o: Omit<LogOptions, 'accessLogSampleRate'>, name) => {
      if (!LOG_LEVELS.includes(o.logLevel)) throw new UsageError(`${name('logLevel')}: expected one of ${LOG_LEVELS.join('|')}, got '${o.logLevel}'`);
      if (o.logFormat !== 'json' && o.logFormat !== 'pretty') throw new UsageError(`${name('logFormat')}: expected json or pretty, got '${o.logFormat}'`);
      const problem = o.logFile === undefined ? undefined : logFileProblem(o.logFile);
      if (problem !== undefined) throw new UsageError(`${name('logFile')}: ${problem}, got '${o.logFile}'`);
    },
    fields: { 'log-level': 'logLevel', 'log-format': 'logFormat', 'log-file': 'logFile' },
    warn: (values) =>
      values['log-level'] !== undefined && TRITON_SWITCHES.some((flag) => values[flag] !== undefined)
        ? [`--log-level ${String(values['log-level'])} is given: it sets the threshold, and ${TRITON_SWITCHES.filter((f) => values[f] !== undefined).map((f) => `--${f}`).join(', ')} have no effect`]
        : [],
  },
  option({
    flag: 'access-log-sample-rate', field: 'accessLogSampleRate', arg: 'R', default: 0.01,
    help: 'fraction of successful requests access-logged, 0..1 (default 0.01); failed requests are always logged',
    parse: (raw, name) => numberFlag(name, raw, 0, 1),
    check: numberIn(0, 1),
  }),
  option({
    flag: 'metrics-tenant-labels', field: 'metricsTenantLabels', default: true,
    help: 'no metric names a tenant when false: model series carry an empty tenant label, per-tenant series are not exported (default true)',
    parse: (raw, name) => booleanFlag(name, raw, true),
    check: isBoolean,
  }),
  option({
    flag: 'metrics-interval-ms', field: 'metricsIntervalMs', arg: 'MS', default: 1000, triton: true,
    help: "how often the machine's CPU utilisation (nv_cpu_utilization) is sampled, in ms, fractions allowed; scrapes closer together read the last sample (default 1000). Other metrics are read at scrape time",
    parse: (raw, name) => numberFlag(name, raw, 0, 86_400_000),
    check: numberIn(0, 86_400_000),
  }),
];
