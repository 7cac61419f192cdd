/**
 * The command line's value parsers, one message format each (the serve
 * options' table, common/option-table.ts, and the tools' own commands beside
 * their features): `--flag: expected <what>, got '<value>'`. A UsageError
 * exits 2 with its one line.
 *
 * Boolean flags take every form Triton's and hotpath's users write: the bare
 * `--flag`, `--flag=true|false` and `--flag true|false` (readFlags in
 * option-table.ts reads the forms; `booleanFlag` reads the value).
 */
import { ByteSizeError, parseByteSize } from './byte-size.js';

export class UsageError extends Error {}

/** Triton's spellings of a boolean value. */
const TRUE_WORDS = new Set(['true', '1', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'off']);

/** A boolean flag's value (as written by withBooleanValues); `fallback` when absent. */
export function booleanFlag(flag: string, raw: string | undefined, fallback: boolean): boolean;
export function booleanFlag(flag: string, raw: string | undefined, fallback: undefined): boolean | undefined;
export function booleanFlag(flag: string, raw: string | undefined, fallback: boolean | undefined): boolean | undefined {
  if (raw === undefined) return fallback;
  const word = raw.toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  throw new UsageError(`${flag}: expected true or false (also 1|0|on|off, or the bare ${flag} for true), got '${raw}'`);
}

export function integerFlag(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${flag}: expected an integer in ${min}..${max}, got '${raw}'`);
  }
  return value;
}

export function numberFlag(flag: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < min || value > max) {
    throw new UsageError(`${flag}: expected a number in ${min}..${max}, got '${raw}'`);
  }
  return value;
}

/** A byte size (`4096`, `512MiB`, `512Mi`, `2GiB`, `100MB`) of at most `max` bytes. */
export function byteSizeFlag(flag: string, raw: string, max = Number.MAX_SAFE_INTEGER): number {
  let bytes: number;
  try {
    bytes = parseByteSize(raw, flag);
  } catch (err) {
    if (err instanceof ByteSizeError) throw new UsageError(err.message);
    throw err;
  }
  if (bytes > max) throw new UsageError(`${flag}: expected a size of at most ${max} bytes, got '${raw}' (${bytes} bytes)`);
  return bytes;
}

/** One of `choices`, compared case-insensitively; answers the choice as written in `choices`. */
export function choiceFlag<T extends string>(flag: string, raw: string, choices: readonly T[]): T {
  const found = choices.find((choice) => choice.toLowerCase() === raw.toLowerCase());
  if (found === undefined) throw new UsageError(`${flag}: expected one of ${choices.join('|')}, got '${raw}'`);
  return found;
}

/**
 * The value of a flag that has a second name (Triton's spelling): either one,
 * or an error when both are given with different values.
 */
export function aliasedFlag(
  values: Readonly<Record<string, unknown>>,
  name: string,
  alias: string,
): string | undefined {
  const primary = values[name] as string | undefined;
  const other = values[alias] as string | undefined;
  if (primary !== undefined && other !== undefined && primary !== other) {
    throw new UsageError(`--${name} and --${alias} are the same flag; expected one value, got '${primary}' and '${other}'`);
  }
  return primary ?? other;
}
