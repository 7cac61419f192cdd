import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  blankSpans,
  findField,
  parsePbtxt,
  PbtxtSyntaxError,
  tokenStartAt,
  type PbtxtField,
} from '../../src/repository/pbtxt-syntax.js';

function syntaxError(text: string): PbtxtSyntaxError {
  try {
    parsePbtxt(text);
  } catch (err) {
    expect(err).toBeInstanceOf(PbtxtSyntaxError);
    return err as PbtxtSyntaxError;
  }
  throw new Error('expected a syntax error');
}

/** "line:column: reason" of the error `text` fails with. */
const failure = (text: string): string => syntaxError(text).message;

describe('parsePbtxt', () => {
  it('reads fields with where they are written, their values and their spans', () => {
    const text = 'name: "a"\n  batch { size: 4, list: [1, -2.5e3, 0x1F] };\nnote: "x" \'y\'';
    const fields = parsePbtxt(text);
    expect(fields.map((f) => [f.name, f.at.line, f.at.column, f.value.kind])).toEqual([
      ['name', 1, 1, 'scalar'],
      ['batch', 2, 3, 'message'],
      ['note', 3, 1, 'scalar'],
    ]);
    // A field's span runs from its name to past its value and its separator.
    expect(text.slice(fields[1]!.start, fields[1]!.end)).toBe('batch { size: 4, list: [1, -2.5e3, 0x1F] };');
    const batch = fields[1]!.value as { readonly fields: readonly PbtxtField[] };
    expect(batch.fields.map((f) => text.slice(f.start, f.end))).toEqual(['size: 4,', 'list: [1, -2.5e3, 0x1F]']);
    expect(findField(fields, 'list')?.at).toEqual({ offset: 29, line: 2, column: 20 });
  });

  it('accepts what protobuf-es accepts: <> blocks, optional colons before messages, lists of messages, comments, -inf', () => {
    const text = [
      '\ufeff# a comment { not a brace',
      'a < b: 1 >',
      'c: { d [ { e: t }, < f: 1.5f > ] }',
      'g: -inf; h: - 7, i: .5',
      "j: 'it\\'s \\x41\\101\\u00e9' k: []",
      '[type.googleapis.com/pkg.Msg] { l: 1 }',
      'm: nan',
    ].join('\n');
    expect(parsePbtxt(text).map((f) => f.name)).toEqual(['a', 'c', 'g', 'h', 'i', 'j', 'k', '[type.googleapis.com/pkg.Msg]', 'm']);
  });

  it('parses every config.pbtxt in the sample repository', () => {
    const models = path.join(import.meta.dirname, '..', '..', 'models');
    const configs = readdirSync(models, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => path.join(models, e.name, 'config.pbtxt'))
      .filter((file) => { try { readFileSync(file); return true; } catch { return false; } });
    expect(configs.length).toBeGreaterThan(2);
    for (const file of configs) expect(parsePbtxt(readFileSync(file, 'utf8')).length).toBeGreaterThan(0);
  });

  it('reports an unclosed block at the end of the last token, naming where it opened', () => {
    expect(failure('name: "m"\nplatfrom_typo {\nmax_batch_size: 64\n\n')).toBe(
      '3:19: unexpected end of input, expected "}" to close the "{" at line 2, column 15',
    );
  });

  it('reports stray and mismatched brackets where they are', () => {
    expect(failure('a: 1\ngarbage {{{\n')).toBe('2:10: expected a field name, got "{"');
    expect(failure('a { b: 1 >')).toBe('1:10: expected "}" to close the "{" at line 1, column 3, got ">"');
    expect(failure('a: 1 }')).toBe('1:6: unexpected "}": no "{" or "<" is open here');
    expect(failure('a [ { b: [1] ]')).toBe('1:14: expected "}" to close the "{" at line 1, column 5, got "]"');
    expect(failure('a: [1, 2')).toBe('1:9: expected "," or "]" in the list of field "a", got end of input');
    expect(failure('a: [[1]]')).toBe('1:5: expected a value for field "a", got "["');
  });

  it('requires ":" before a scalar value, but not before a message', () => {
    expect(failure('future_knob 5')).toBe('1:13: expected ":" after field name "future_knob" (only a message value may go without), got "5"');
    expect(failure('dims [1]')).toMatch(/^1:7: expected ":" after field name "dims"/);
    expect(failure('a: }')).toBe('1:4: expected a value for field "a", got "}"');
    expect(parsePbtxt('a [ { b: 1 } ] c {} d: []').map((f) => f.value.kind)).toEqual(['list', 'message', 'list']);
  });

  it('allows one separator after a field, not two', () => {
    expect(failure('a: 1;; b: 2')).toBe('1:6: expected a field name, got ";"');
    expect(failure('a: 1,\n;')).toBe('2:1: expected a field name, got ";"');
  });

  it('allows "-" only before a number', () => {
    expect(failure('a: - "x"')).toBe('1:6: expected a number after "-" in field "a", got a string');
    expect(failure('a: - b')).toBe('1:6: expected a number after "-" in field "a", got "b"');
  });

  it('refuses fields named by number', () => {
    expect(failure('a { 3: 1 }')).toBe('1:5: expected a field name, got "3" (fields cannot be named by number)');
  });

  it('reports bad tokens at their first character', () => {
    expect(failure('a: "never closed\nb: 1')).toBe('1:4: unterminated string (a string cannot span lines)');
    expect(failure('a: "bad \\q escape"')).toBe('1:9: invalid escape \\q');
    expect(failure('a: "\\uD800"')).toBe('1:5: invalid unicode escape \\uD800');
    expect(failure('a: "\\477"')).toBe('1:5: octal escape \\477 is out of range');
    expect(failure('a: 09')).toBe('1:4: invalid number "09"');
    expect(failure('a: 1.2.3')).toBe('1:4: invalid number "1.2."');
    expect(failure('a: 5bar')).toBe('1:4: invalid number "5b"');
    expect(failure('a: 1e')).toBe('1:4: invalid number: an exponent needs digits');
    expect(failure('a: 0x')).toBe('1:4: invalid hexadecimal number');
    expect(failure('a: 1\n  b: @')).toBe('2:6: unexpected "@"');
    expect(failure('a: 1 \u00a0')).toBe('1:6: unexpected U+00A0');
    expect(failure('[pkg.Ext\n')).toBe('1:1: unterminated "[" in a field name');
  });

  it('refuses nesting deeper than 100, without exhausting the stack', () => {
    expect(failure('a '.concat('{ a '.repeat(101)))).toMatch(/^1:\d+: messages are nested more than 100 deep$/);
    expect(failure('a '.concat('{ a '.repeat(100000)))).toMatch(/nested more than 100 deep/);
    expect(parsePbtxt(`a ${'{ a '.repeat(99)}{}${' }'.repeat(99)}`)).toHaveLength(1);
  });

  it('counts columns from 1 and lines across \\r\\n', () => {
    expect(failure('a: 1\r\nb: @')).toBe('2:4: unexpected "@"');
  });
});

describe('blankSpans', () => {
  it('blanks fields with their separators, keeping every newline, offset and line', () => {
    const text = 'a: 1\nfuture { x: "}"\n y: 2 },\nb: 2\n';
    const fields = parsePbtxt(text);
    const blanked = blankSpans(text, [fields[1]!]);
    expect(blanked).toBe('a: 1\n               \n        \nb: 2\n');
    expect(parsePbtxt(blanked).map((f) => [f.name, f.at.line, f.at.offset])).toEqual([['a', 1, 0], ['b', 4, 30]]);
  });

  it('blanks several spans in any order', () => {
    expect(blankSpans('abcdef', [{ start: 4, end: 5 }, { start: 1, end: 2 }])).toBe('a cd f');
  });
});

describe('tokenStartAt', () => {
  it('finds the start of the token an offset falls in or ends', () => {
    const text = 'name: "ranker"\nmax_batch_size: "eight"\n';
    expect(tokenStartAt(text, text.indexOf('"eight"') + 7)).toMatchObject({ line: 2, column: 17 });
    expect(tokenStartAt(text, text.indexOf('batch'))).toMatchObject({ line: 2, column: 1 });
  });
});
