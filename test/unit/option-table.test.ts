/**
 * The options table's command-line reader (common/option-table.ts): the
 * forms of a flag, Triton's getopt_long prefix rule, the one-line refusal of
 * an unknown flag with the nearest known one, and the usage it writes.
 */
import { describe, expect, it } from 'vitest';
import { editDistance, nearestFlag, readFlags, UnknownFlagError, usageLines, type FlagSpec } from '../../src/common/option-table.js';
import { UsageError } from '../../src/common/flag-values.js';

const SPECS: FlagSpec[] = [
  { name: 'model-repository', arg: 'DIR', repeatable: true, help: 'the repository' },
  { name: 'model-control-mode', arg: 'MODE', help: 'mode' },
  { name: 'http-port', arg: 'N', help: 'port' },
  { name: 'http-port-extra', arg: 'N', help: 'a flag whose name extends another' },
  { name: 'allow-http', help: 'boolean' },
];

describe('readFlags', () => {
  it('takes --flag=V and --flag V, keeps every value of a repeatable flag and the last of another', () => {
    const { values } = readFlags(['--model-repository=/a', '--model-repository', '/b', '--http-port', '1', '--http-port=2'], SPECS);
    expect(values).toEqual({ 'model-repository': ['/a', '/b'], 'http-port': '2' });
  });

  it('reads a boolean bare, with =V, or with a following true|false|1|0|on|off', () => {
    expect(readFlags(['--allow-http'], SPECS).values).toEqual({ 'allow-http': 'true' });
    expect(readFlags(['--allow-http=false'], SPECS).values).toEqual({ 'allow-http': 'false' });
    expect(readFlags(['--allow-http', 'OFF', '--http-port', '3'], SPECS).values).toEqual({ 'allow-http': 'OFF', 'http-port': '3' });
    expect(readFlags(['--allow-http', '--http-port', '3'], SPECS).values).toEqual({ 'allow-http': 'true', 'http-port': '3' });
  });

  it('takes an unambiguous prefix of a long flag, as getopt_long does, and says how it was written', () => {
    const read = readFlags(['--model-repo', '/m', '--model-c=explicit', '--allow-h'], SPECS);
    expect(read.values).toEqual({ 'model-repository': ['/m'], 'model-control-mode': 'explicit', 'allow-http': 'true' });
    expect(read.written.get('model-repository')).toBe('--model-repo');
    // An exact name wins over the longer flags it begins.
    expect(readFlags(['--http-port', '5'], SPECS).values).toEqual({ 'http-port': '5' });
  });

  it('refuses an ambiguous prefix, naming the flags it begins', () => {
    expect(() => readFlags(['--model', 'x'], SPECS)).toThrow(/^ambiguous option --model: it begins --model-repository, --model-control-mode; write more of it$/);
  });

  it('refuses an unknown flag in one line naming the nearest known flag', () => {
    let caught: unknown;
    try {
      readFlags(['--model-reposiotry', '/m'], SPECS);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(UnknownFlagError);
    expect((caught as Error).message).toBe('unknown option --model-reposiotry; did you mean --model-repository?');
    expect(() => readFlags(['--completely-different-thing'], SPECS)).toThrow(/^unknown option --completely-different-thing$/);
  });

  it('refuses a missing value and a stray word', () => {
    expect(() => readFlags(['--http-port'], SPECS)).toThrow(UsageError);
    expect(() => readFlags(['--http-port'], SPECS)).toThrow(/^--http-port: expected a value \(N\), got none$/);
    expect(() => readFlags(['models'], SPECS)).toThrow(/^unexpected argument 'models'/);
    // `--` ends the options; nothing may follow it.
    expect(readFlags(['--http-port=1', '--'], SPECS).values).toEqual({ 'http-port': '1' });
    expect(() => readFlags(['--', '--http-port=1'], SPECS)).toThrow(/^unexpected argument '--'/);
  });
});

describe('nearestFlag', () => {
  it('counts a swap of two letters as one edit, and suggests nothing for a word far from every flag', () => {
    expect(editDistance('reposiotry', 'repository')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(nearestFlag('http-prot', SPECS.map((s) => s.name))).toBe('--http-port');
    expect(nearestFlag('zzz', SPECS.map((s) => s.name))).toBeUndefined();
  });
});

describe('usageLines', () => {
  it('writes each flag with its value and Triton mark, its help wrapped in a column', () => {
    const text = usageLines([
      { name: 'grpc-port', arg: 'N', triton: true, help: 'KServe V2 / Triton gRPC port (default 8001)' },
      { name: 'a-very-long-flag-name-indeed', arg: 'VALUE', help: 'x '.repeat(60) },
    ]);
    expect(text).toMatch(/^ {2}--grpc-port N {16}\[T\] KServe V2 \/ Triton gRPC port \(default 8001\)\n/);
    // A head longer than the column goes on its own line; every line stays within 104 columns.
    expect(text).toMatch(/\n {2}--a-very-long-flag-name-indeed VALUE\n {31}x x/);
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(104);
  });
});
