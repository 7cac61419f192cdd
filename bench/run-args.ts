// The benchmark runner's command line (bench/run.ts): `<suite> [--quick]
// [--json FILE]`, and the options only some suites take (`--threads 1,2,...`,
// `--rounds N`), each refused for a suite that does not list it. Pure, so the
// rules are unit-tested (test/unit/bench-run-args.test.ts).
import { MAX_FRONT_DOOR_THREADS } from '../src/server/door-options.js';
import type { BenchSuite, SuiteOption } from './suites/suite.js';

export interface RunArgs {
  readonly suite: string;
  readonly quick: boolean;
  readonly json: string | undefined;
  /** `--threads`: ascending, distinct, 1 included (every ratio is taken against one thread). */
  readonly threads: readonly number[] | undefined;
  readonly rounds: number | undefined;
}

/** The most rounds one run takes: each round restarts every contender, so more only costs time. */
export const MAX_ROUNDS = 20;

export function usage(suites: ReadonlyMap<string, BenchSuite>): string {
  const names = [...suites.values()]
    .map((s) => `  ${s.name.padEnd(10)} ${s.description}${s.options?.length ? ` (also ${s.options.map((o) => `--${o}`).join(', ')})` : ''}`)
    .join('\n');
  return `usage: npm run bench -- <suite> [--quick] [--json FILE] [--threads 1,2,...] [--rounds N]\nsuites:\n${names}`;
}

/** `--threads` LIST: comma-separated thread counts in 1..MAX_FRONT_DOOR_THREADS, no repeats, 1 among them. */
export function parseThreadList(raw: string): number[] {
  const parts = raw.split(',').map((part) => part.trim());
  const counts = parts.map((part) => {
    const n = /^\d+$/.test(part) ? Number(part) : Number.NaN;
    if (!(n >= 1 && n <= MAX_FRONT_DOOR_THREADS)) {
      throw new Error(`--threads: expected comma-separated integers in 1..${MAX_FRONT_DOOR_THREADS}, got '${part}' in '${raw}'`);
    }
    return n;
  });
  const repeated = counts.find((n, i) => counts.indexOf(n) !== i);
  if (repeated !== undefined) throw new Error(`--threads: each count once, got ${repeated} twice in '${raw}'`);
  if (!counts.includes(1)) throw new Error(`--threads: expected 1 among the counts (the baseline of every ratio), got '${raw}'`);
  return counts.sort((a, b) => a - b);
}

export function parseRounds(raw: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= MAX_ROUNDS)) throw new Error(`--rounds: expected an integer in 1..${MAX_ROUNDS}, got '${raw}'`);
  return n;
}

/** Throws an Error whose message says what is wrong (empty for --help). */
export function parseRunArgs(argv: readonly string[], suites: ReadonlyMap<string, BenchSuite>): RunArgs {
  let suite = '';
  let quick = false;
  let json: string | undefined;
  let threads: number[] | undefined;
  let rounds: number | undefined;
  const used: SuiteOption[] = [];
  const valueOf = (i: number, flag: string): string => {
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value`);
    return value;
  };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === '--quick') quick = true;
    else if (arg === '--json') {
      json = valueOf(i, '--json');
      i += 1;
    } else if (arg === '--threads') {
      threads = parseThreadList(valueOf(i, '--threads'));
      used.push('threads');
      i += 1;
    } else if (arg === '--rounds') {
      rounds = parseRounds(valueOf(i, '--rounds'));
      used.push('rounds');
      i += 1;
    } else if (arg === '--help' || arg === '-h') throw new Error('');
    else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}`);
    else if (suite) throw new Error(`one suite at a time (got ${suite} and ${arg})`);
    else suite = arg;
  }
  if (!suite) throw new Error('no suite given');
  const chosen = suites.get(suite);
  if (chosen === undefined) throw new Error(`unknown suite '${suite}'`);
  for (const option of used) {
    if (!(chosen.options ?? []).includes(option)) throw new Error(`--${option}: the ${suite} suite does not take it`);
  }
  return { suite, quick, json, threads, rounds };
}
