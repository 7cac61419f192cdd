/**
 * The options table: what `hotpath serve` takes, one entry per option (or per
 * group of flags that build one setting together, such as a door's TLS
 * files), in piscina's manner: a default, a parser of the command line's
 * text, a check of the typed value, and the help line.
 *
 *   - the command line reads its flags with `readFlags` (Triton's getopt_long
 *     rules: `--flag=V`, `--flag V`, an unambiguous prefix of a long flag),
 *     then each entry's `parse` turns its flags' text into typed fields;
 *   - `createServer` starts from each entry's `defaults` and takes typed
 *     fields from its caller;
 *   - both then run every entry's `check` on the filled options, so an
 *     embedded server is checked as the command line is;
 *   - `usage` writes the help text from the same entries.
 *
 * The entries live beside their features (security/tls-options.ts...); this
 * file knows none of them.
 */
import { UsageError } from './flag-values.js';

/** The command line's text per flag name (no `--`): a string, or every value of a repeatable flag. */
export type FlagValues = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface FlagSpec {
  /** The long name, without `--`. */
  readonly name: string;
  /** The value's placeholder in the usage (`N`, `DIR`); absent for a boolean flag (bare `--flag` = true). */
  readonly arg?: string;
  /** Repeatable: every value is kept, in order. */
  readonly repeatable?: boolean;
  /** The help text, one paragraph; the usage wraps it. */
  readonly help: string;
  /** Triton's name for the flag (marked [T] in the usage). */
  readonly triton?: boolean;
  /** Another spelling of that flag: its values go with the other's, in command-line order (`--model-store`). */
  readonly aliasOf?: string;
}

/**
 * How a check names what it checks: the flag as the command line spells it
 * (`--grpc-port`), or the option as createServer's caller wrote it (`grpcPort`).
 */
export type OptionNamer = (field: string) => string;

/**
 * One table entry: the flags it reads, the typed fields it fills.
 * `T` is the slice of the options the entry owns; its check sees them (and,
 * where it needs another entry's field, declares that field in `T` too).
 */
export interface OptionEntry<T extends object> {
  readonly flags: readonly FlagSpec[];
  /** The fields' defaults, typed as createServer takes them. */
  readonly defaults: () => T;
  /** The command line's text → the fields it sets (a flag not given leaves its default). Throws UsageError. */
  readonly parse: (values: FlagValues) => Partial<T>;
  /**
   * Checks of the filled fields, for the command line and createServer alike. Throws UsageError.
   * (A method, so the table can hold entries of different slices: the table passes the whole options.)
   */
  check?(options: T, name: OptionNamer): void;
  /** The field each flag sets, for naming it in a check (`--grpc-port` ↔ `grpcPort`). */
  readonly fields?: Readonly<Record<string, string>>;
  /** One-line warnings the given flags deserve (no effect here, and why); logged once at start-up. */
  readonly warn?: (values: FlagValues) => string[];
}

/**
 * One option, one flag, one field: `{flag, default, parse, check, help}`.
 * `parse` reads the text (message format: common/flag-values.ts); `check`
 * answers the problem with a typed value (`expected an integer in 0..9`), or undefined.
 */
export function option<K extends string, V>(spec: {
  readonly flag: string;
  readonly field: K;
  readonly default: V | (() => V);
  readonly parse: (raw: string, flag: string) => V;
  readonly check?: (value: V) => string | undefined;
  readonly arg?: string;
  readonly help: string;
  readonly triton?: boolean;
}): OptionEntry<Record<K, V>> {
  const { flag, field } = spec;
  return {
    flags: [{ name: flag, arg: spec.arg, help: spec.help, triton: spec.triton }],
    defaults: () => ({ [field]: typeof spec.default === 'function' ? (spec.default as () => V)() : spec.default }) as Record<K, V>,
    parse: (values) => {
      const raw = values[flag];
      if (raw === undefined) return {};
      return { [field]: spec.parse(raw as string, `--${flag}`) } as Partial<Record<K, V>>;
    },
    check: spec.check === undefined ? undefined : (options, name) => {
      const value = options[field];
      const problem = spec.check!(value);
      if (problem !== undefined) throw new UsageError(`${name(field)}: ${problem}, got ${describe(value)}`);
    },
    fields: { [flag]: field },
  };
}

/** A value as a check's message quotes it. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (Array.isArray(value)) return `[${value.map(describe).join(', ')}]`;
  return String(value);
}

/** A check of an integer in min..max (a typed value: createServer's, or one parsed already). */
export function integerIn(min: number, max: number): (value: number) => string | undefined {
  return (value) => (Number.isInteger(value) && value >= min && value <= max ? undefined : `expected an integer in ${min}..${max}`);
}

/** A check of a finite number in min..max. */
export function numberIn(min: number, max: number): (value: number) => string | undefined {
  return (value) => (typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max ? undefined : `expected a number in ${min}..${max}`);
}

export function isBoolean(value: boolean): string | undefined {
  return typeof value === 'boolean' ? undefined : 'expected true or false';
}

// ---------------------------------------------------------------------------
// The command line: Triton's getopt_long rules

/** Triton's spellings of a boolean value. */
const BOOLEAN_WORDS = new Set(['true', 'false', '1', '0', 'on', 'off']);

/** A flag that no entry has, nor is a prefix of one; its message names the nearest known flag. */
export class UnknownFlagError extends UsageError {
  constructor(
    readonly flag: string,
    readonly nearest: string | undefined,
  ) {
    super(`unknown option ${flag}${nearest === undefined ? '' : `; did you mean ${nearest}?`}`);
  }
}

export interface ReadFlags {
  /** The text per flag name, as FlagValues. */
  readonly values: Record<string, string | string[]>;
  /** Each flag given, as the user wrote it (a prefix, say), by its full name. */
  readonly written: ReadonlyMap<string, string>;
}

/**
 * Reads `argv` against `specs`:
 * - `--flag=VALUE`, `--flag VALUE`; a boolean flag alone means true, and
 *   takes a following true|false|1|0|on|off as its value;
 * - an unambiguous prefix of a long flag is that flag (`--model-repo`), as
 *   tritonserver's getopt_long takes it; an exact name always wins;
 * - a repeatable flag keeps every value; another flag given twice keeps the last;
 * - anything else is a UsageError: an unknown flag (UnknownFlagError, naming
 *   the nearest known one), an ambiguous prefix, a missing value, a stray word.
 */
export function readFlags(argv: readonly string[], specs: readonly FlagSpec[]): ReadFlags {
  const byName = new Map(specs.map((spec) => [spec.name, spec]));
  const values: Record<string, string | string[]> = {};
  const written = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 1) {
    const token = argv[i]!;
    // `--` ends the options, and serve takes no other arguments: only a trailing one is allowed.
    if (token === '--' && i === argv.length - 1) break;
    if (!token.startsWith('--') || token === '--') {
      throw new UsageError(`unexpected argument '${token}'; every option starts with --`);
    }
    const eq = token.indexOf('=');
    const given = eq < 0 ? token.slice(2) : token.slice(2, eq);
    const spec = resolveFlag(given, byName);
    let value: string;
    if (eq >= 0) {
      value = token.slice(eq + 1);
    } else if (spec.arg === undefined) {
      const next = argv[i + 1];
      // `--flag false` is Triton's form as much as `--flag=false`.
      if (next !== undefined && BOOLEAN_WORDS.has(next.toLowerCase())) {
        value = next;
        i += 1;
      } else {
        value = 'true';
      }
    } else {
      const next = argv[i + 1];
      if (next === undefined) throw new UsageError(`--${spec.name}: expected a value (${spec.arg}), got none`);
      value = next;
      i += 1;
    }
    const name = spec.aliasOf ?? spec.name;
    written.set(name, `--${given}`);
    if (spec.repeatable) {
      const list = (values[name] ??= []) as string[];
      list.push(value);
    } else {
      values[name] = value;
    }
  }
  return { values, written };
}

function resolveFlag(given: string, byName: ReadonlyMap<string, FlagSpec>): FlagSpec {
  const exact = byName.get(given);
  if (exact !== undefined) return exact;
  const candidates = given === '' ? [] : [...byName.keys()].filter((name) => name.startsWith(given));
  if (candidates.length === 1) return byName.get(candidates[0]!)!;
  if (candidates.length > 1) {
    const shown = candidates.slice(0, 4).map((name) => `--${name}`).join(', ');
    throw new UsageError(`ambiguous option --${given}: it begins ${shown}${candidates.length > 4 ? ', ...' : ''}; write more of it`);
  }
  throw new UnknownFlagError(`--${given}`, nearestFlag(given, [...byName.keys()]));
}

/** The known flag nearest to `given` by edit distance (a swap of two letters counts one), when near enough to be a typo. */
export function nearestFlag(given: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of names) {
    const distance = editDistance(given, name);
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  // Beyond about a third of the word, a suggestion is noise.
  return best !== undefined && bestDistance <= Math.max(2, Math.ceil(given.length / 3)) ? `--${best}` : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  for (let i = 0; i < rows; i += 1) d[i * cols] = i;
  for (let j = 0; j < cols; j += 1) d[j] = j;
  for (let i = 1; i < rows; i += 1) {
    for (let j = 1; j < cols; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(d[(i - 1) * cols + j]! + 1, d[i * cols + j - 1]! + 1, d[(i - 1) * cols + j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, d[(i - 2) * cols + j - 2]! + 1);
      d[i * cols + j] = value;
    }
  }
  return d[rows * cols - 1]!;
}

// ---------------------------------------------------------------------------
// The usage text

const FLAG_COLUMN = 31;
const WIDTH = 104;

/** The usage lines of `flags`: `  --flag ARG` in a column, the help wrapped beside it. */
export function usageLines(flags: readonly FlagSpec[]): string {
  let out = '';
  for (const flag of flags) {
    const head = `  --${flag.name}${flag.arg === undefined ? ' BOOL' : ` ${flag.arg}`}`;
    const text = `${flag.triton ? '[T] ' : ''}${flag.help}`;
    const lines = wrap(text, WIDTH - FLAG_COLUMN);
    if (head.length < FLAG_COLUMN) {
      out += `${head.padEnd(FLAG_COLUMN)}${lines[0] ?? ''}\n`;
      lines.shift();
    } else {
      out += `${head}\n`;
    }
    for (const line of lines) out += `${' '.repeat(FLAG_COLUMN)}${line}\n`;
  }
  return out;
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}
