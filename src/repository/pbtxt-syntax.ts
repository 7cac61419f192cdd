/**
 * The syntax of the protobuf text format, without a schema. config.pbtxt is
 * read into a tree of fields that knows where each one is written, so that
 *
 * - a malformed file fails with the line and column of its first error, even
 *   inside a field this build does not know (protobuf-es's `fromText` reports
 *   no position, and skipping an unknown field by balancing brackets would
 *   swallow the rest of the file after a typo);
 * - a field the schema does not know can be cut out exactly (name, value and
 *   separator) before `fromText`, which decodes and type-checks the values
 *   but refuses unknown fields.
 *
 * The lexical rules follow protobuf-es's txtpb reader (itself protobuf-go's),
 * so whatever `fromText` accepts is accepted here. The grammar is the text
 * format's own: a scalar value needs ":" after its field name, a message or a
 * list of messages may omit it, and values are numbers, identifiers (enum
 * names, true, inf) or strings, a "-" only before a number. That is also how
 * protobuf C++ (Triton's parser) skips a field it does not know.
 */

/** A place in the text: 0-based offset, 1-based line and column (UTF-16 units). */
export interface TextPosition {
  readonly offset: number;
  readonly line: number;
  readonly column: number;
}

export class PbtxtSyntaxError extends Error {
  override readonly name = 'PbtxtSyntaxError';

  constructor(
    readonly position: TextPosition,
    readonly reason: string,
  ) {
    super(`${position.line}:${position.column}: ${reason}`);
  }
}

export type PbtxtValue =
  | { readonly kind: 'scalar' }
  | { readonly kind: 'message'; readonly fields: readonly PbtxtField[] }
  | { readonly kind: 'list'; readonly items: readonly PbtxtValue[] };

export interface PbtxtField {
  /** The field name as written: `max_batch_size`, or `[pkg.ext]` for an extension or Any type name. */
  readonly name: string;
  /** Where the name starts. */
  readonly at: TextPosition;
  readonly value: PbtxtValue;
  /** Offsets of the whole field: from its name to past its value and its "," or ";", if any. */
  readonly start: number;
  readonly end: number;
}

// Nesting deeper than this is refused, as protobuf-es's recursion limit does.
const MAX_DEPTH = 100;

type TokenType =
  | 'ident' | 'int' | 'float' | 'string' | 'eof'
  | '{' | '}' | '<' | '>' | '[' | ']' | ':' | ',' | ';' | '-';

interface Token {
  readonly type: TokenType;
  readonly start: number;
  readonly end: number;
}

const PUNCTUATION = new Set(['{', '}', '<', '>', '[', ']', ':', ',', ';']);
const CLOSE_OF: Readonly<Record<string, '}' | '>'>> = { '{': '}', '<': '>' };

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isOctal = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '7';
const isHex = (c: string | undefined): boolean => c !== undefined && /^[0-9a-fA-F]$/.test(c);
const isLetter = (c: string | undefined): boolean => c !== undefined && /^[A-Za-z_]$/.test(c);
const isLetterOrDigit = (c: string | undefined): boolean => isLetter(c) || isDigit(c);

/** Maps offsets to lines and columns. */
class LineMap {
  private readonly starts: number[] = [0];

  constructor(text: string) {
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) this.starts.push(i + 1);
  }

  position(offset: number): TextPosition {
    let low = 0;
    let high = this.starts.length - 1;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (this.starts[mid]! <= offset) low = mid;
      else high = mid - 1;
    }
    return { offset, line: low + 1, column: offset - this.starts[low]! + 1 };
  }
}

/** Position of `offset` in `text`. */
export function positionOf(text: string, offset: number): TextPosition {
  return new LineMap(text).position(offset);
}

/** Tokens on demand, one of lookahead, as the grammar needs: `[` opens a type name where a field name goes. */
class Lexer {
  private pos: number;
  private ahead: Token | undefined;
  /** End of the last token taken with `next()`: where an unexpected end of input is reported. */
  lastEnd = 0;

  constructor(
    readonly text: string,
    readonly lines: LineMap,
  ) {
    // A leading byte-order mark is not part of the text, as in protobuf-es.
    this.pos = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  }

  fail(offset: number, reason: string): never {
    throw new PbtxtSyntaxError(this.lines.position(offset), reason);
  }

  /** Fails at `tok`, or just past the last token when `tok` is the end of input. */
  failAt(tok: Token, reason: string): never {
    return this.fail(tok.type === 'eof' ? this.lastEnd : tok.start, reason);
  }

  peek(): Token {
    this.ahead ??= this.scan();
    return this.ahead;
  }

  next(): Token {
    const tok = this.peek();
    this.ahead = undefined;
    if (tok.type !== 'eof') this.lastEnd = tok.end;
    return tok;
  }

  describe(tok: Token): string {
    if (tok.type === 'eof') return 'end of input';
    if (tok.type === 'string') return 'a string';
    return `"${this.text.slice(tok.start, tok.end)}"`;
  }

  /** The name inside `[...]` in a field-name position; the "[" is already taken. */
  readBracketName(open: Token): Token {
    const start = open.start;
    for (;;) {
      this.skipSpace();
      const c = this.text[this.pos];
      if (c === undefined) this.fail(open.start, 'unterminated "[" in a field name');
      this.pos++;
      if (c === ']') break;
      // URL characters, "/" and percent escapes, as protobuf-es's readTypeName allows.
      if (!isLetterOrDigit(c) && !'-.~!$&()*+,;=/%'.includes(c)) this.fail(this.pos - 1, `unexpected "${c}" in a [...] name`);
    }
    const tok: Token = { type: 'ident', start, end: this.pos };
    this.lastEnd = tok.end;
    return tok;
  }

  private skipSpace(): void {
    for (;;) {
      const c = this.text[this.pos];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f') {
        this.pos++;
      } else if (c === '#') {
        while (this.pos < this.text.length && this.text[this.pos] !== '\n') this.pos++;
      } else {
        return;
      }
    }
  }

  private scan(): Token {
    this.skipSpace();
    const start = this.pos;
    const c = this.text[start];
    if (c === undefined) return { type: 'eof', start, end: start };
    if (PUNCTUATION.has(c)) {
      this.pos++;
      return { type: c as TokenType, start, end: this.pos };
    }
    if (c === '-') {
      // Glued to a letter it starts an identifier (-inf); otherwise it is a sign.
      if (isLetter(this.text[start + 1])) return this.scanIdentifier();
      this.pos++;
      return { type: '-', start, end: this.pos };
    }
    if (c === '"' || c === "'") return this.scanString(c);
    if (isDigit(c) || (c === '.' && isDigit(this.text[start + 1]))) return this.scanNumber();
    if (isLetter(c)) return this.scanIdentifier();
    const code = c.codePointAt(0) ?? 0;
    return this.fail(start, `unexpected ${code >= 0x20 && code <= 0x7e ? `"${c}"` : `U+${code.toString(16).toUpperCase().padStart(4, '0')}`}`);
  }

  private scanIdentifier(): Token {
    const start = this.pos;
    this.pos++;
    if (this.text[start] === '-') this.pos++;
    while (isLetterOrDigit(this.text[this.pos])) this.pos++;
    return { type: 'ident', start, end: this.pos };
  }

  private scanNumber(): Token {
    const start = this.pos;
    const text = this.text;
    let type: TokenType = 'int';
    if (text[start] === '0' && (text[start + 1] === 'x' || text[start + 1] === 'X')) {
      this.pos += 2;
      const digits = this.pos;
      while (isHex(text[this.pos])) this.pos++;
      if (this.pos === digits) this.fail(start, 'invalid hexadecimal number');
    } else if (text[start] === '0' && isOctal(text[start + 1])) {
      while (isOctal(text[this.pos])) this.pos++;
    } else {
      // A leading 0 stands alone: "09" is not a decimal number.
      if (text[this.pos] === '0') this.pos++;
      else while (isDigit(text[this.pos])) this.pos++;
      if (text[this.pos] === '.') {
        type = 'float';
        this.pos++;
        while (isDigit(text[this.pos])) this.pos++;
      }
      if (text[this.pos] === 'e' || text[this.pos] === 'E') {
        type = 'float';
        this.pos++;
        if (text[this.pos] === '+' || text[this.pos] === '-') this.pos++;
        const digits = this.pos;
        while (isDigit(text[this.pos])) this.pos++;
        if (this.pos === digits) this.fail(start, 'invalid number: an exponent needs digits');
      }
      if (text[this.pos] === 'f' || text[this.pos] === 'F') {
        type = 'float';
        this.pos++;
      }
    }
    const after = text[this.pos];
    if (isLetterOrDigit(after) || after === '-' || after === '+' || after === '.') {
      this.fail(start, `invalid number "${text.slice(start, this.pos + 1)}"`);
    }
    return { type, start, end: this.pos };
  }

  private scanString(quote: string): Token {
    const start = this.pos;
    this.pos++;
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) this.fail(start, 'unterminated string');
      if (c === quote) {
        this.pos++;
        return { type: 'string', start, end: this.pos };
      }
      if (c === '\n') this.fail(start, 'unterminated string (a string cannot span lines)');
      if (c === '\0') this.fail(this.pos, 'invalid NUL in string');
      if (c === '\\') this.scanEscape();
      else this.pos++;
    }
  }

  private scanEscape(): void {
    const at = this.pos;
    const c = this.text[at + 1];
    this.pos += 2;
    if (c !== undefined && 'abfnrtv?"\'\\'.includes(c)) return;
    if (c === 'x') {
      if (!isHex(this.text[this.pos])) this.fail(at, 'invalid escape \\x: expected hexadecimal digits');
      if (isHex(this.text[++this.pos])) this.pos++;
      return;
    }
    if (c === 'u' || c === 'U') {
      const hex = this.text.slice(this.pos, this.pos + (c === 'u' ? 4 : 8));
      const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === (c === 'u' ? 4 : 8) ? parseInt(hex, 16) : NaN;
      if (!(code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) this.fail(at, `invalid unicode escape \\${c}${hex}`);
      this.pos += hex.length;
      return;
    }
    if (isOctal(c)) {
      let end = at + 2;
      while (end < at + 4 && isOctal(this.text[end])) end++;
      if (parseInt(this.text.slice(at + 1, end), 8) > 0xff) this.fail(at, `octal escape \\${this.text.slice(at + 1, end)} is out of range`);
      this.pos = end;
      return;
    }
    this.fail(at, c === undefined ? 'unterminated string' : `invalid escape \\${c}`);
  }
}

/**
 * Parses `text` into its fields. Throws PbtxtSyntaxError at the first place
 * the text is not the protobuf text format.
 */
export function parsePbtxt(text: string): PbtxtField[] {
  const lex = new Lexer(text, new LineMap(text));
  return readFields(lex, undefined, 0);
}

/** The fields of a message up to its close (`open` is its "{" or "<"), or to the end of input at the top. */
function readFields(lex: Lexer, open: Token | undefined, depth: number): PbtxtField[] {
  if (depth > MAX_DEPTH) lex.failAt(open ?? lex.peek(), `messages are nested more than ${MAX_DEPTH} deep`);
  const close = open === undefined ? 'eof' : CLOSE_OF[lex.text.charAt(open.start)]!;
  const fields: PbtxtField[] = [];
  for (;;) {
    const tok = lex.peek();
    if (tok.type === close) {
      lex.next();
      return fields;
    }
    if (tok.type === 'eof' || tok.type === '}' || tok.type === '>' || tok.type === ']') {
      if (open === undefined) lex.failAt(tok, `unexpected ${lex.describe(tok)}: no "{" or "<" is open here`);
      const where = lex.lines.position(open.start);
      const expected = `expected "${close}" to close the "${lex.text.charAt(open.start)}" at line ${where.line}, column ${where.column}`;
      lex.failAt(tok, tok.type === 'eof' ? `unexpected end of input, ${expected}` : `${expected}, got ${lex.describe(tok)}`);
    }
    const field = readField(lex, depth);
    // One "," or ";" may follow a field; a second one is an error (not a field name).
    const sep = lex.peek();
    if (sep.type === ',' || sep.type === ';') {
      lex.next();
      fields.push({ ...field, end: sep.end });
    } else {
      fields.push(field);
    }
  }
}

function readField(lex: Lexer, depth: number): PbtxtField {
  const nameTok = lex.next();
  let name: Token = nameTok;
  if (nameTok.type === '[') name = lex.readBracketName(nameTok);
  else if (nameTok.type === 'int') lex.failAt(nameTok, `expected a field name, got ${lex.describe(nameTok)} (fields cannot be named by number)`);
  else if (nameTok.type !== 'ident') lex.failAt(nameTok, `expected a field name, got ${lex.describe(nameTok)}`);
  const fieldName = lex.text.slice(name.start, name.end);
  const hasColon = lex.peek().type === ':';
  if (hasColon) lex.next();
  const value = readValue(lex, fieldName, hasColon, depth, true);
  return { name: fieldName, at: lex.lines.position(name.start), value, start: name.start, end: lex.lastEnd };
}

/** A field's value: a message, a list (when `listAllowed`), or a scalar, which needs the colon. */
function readValue(lex: Lexer, field: string, hasColon: boolean, depth: number, listAllowed: boolean): PbtxtValue {
  const tok = lex.peek();
  if (tok.type === '{' || tok.type === '<') {
    lex.next();
    return { kind: 'message', fields: readFields(lex, tok, depth + 1) };
  }
  if (tok.type === '[' && listAllowed) {
    lex.next();
    const items: PbtxtValue[] = [];
    if (lex.peek().type === ']') {
      lex.next();
      return { kind: 'list', items };
    }
    for (;;) {
      items.push(readValue(lex, field, hasColon, depth, false));
      const sep = lex.next();
      if (sep.type === ']') return { kind: 'list', items };
      if (sep.type !== ',') lex.failAt(sep, `expected "," or "]" in the list of field "${field}", got ${lex.describe(sep)}`);
    }
  }
  if (!hasColon) {
    lex.failAt(tok, `expected ":" after field name "${field}" (only a message value may go without), got ${lex.describe(tok)}`);
  }
  const first = lex.next();
  if (first.type === '-') {
    const number = lex.next();
    if (number.type !== 'int' && number.type !== 'float') {
      lex.failAt(number, `expected a number after "-" in field "${field}", got ${lex.describe(number)}`);
    }
  } else if (first.type === 'string') {
    // Adjacent strings are one value: "ab" "cd".
    while (lex.peek().type === 'string') lex.next();
  } else if (first.type !== 'ident' && first.type !== 'int' && first.type !== 'float') {
    lex.failAt(first, `expected a value for field "${field}", got ${lex.describe(first)}`);
  }
  return { kind: 'scalar' };
}

/**
 * `text` with the given [start, end) spans replaced by spaces, newlines kept,
 * so every later offset, line and column is unchanged. Spans must not overlap.
 */
export function blankSpans(text: string, spans: ReadonlyArray<{ start: number; end: number }>): string {
  let out = '';
  let from = 0;
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    out += text.slice(from, span.start) + text.slice(span.start, span.end).replace(/[^\n]/g, ' ');
    from = span.end;
  }
  return out + text.slice(from);
}

/** The first field named `name` in source order, at any depth. */
export function findField(fields: readonly PbtxtField[], name: string): PbtxtField | undefined {
  for (const field of fields) {
    if (field.name === name) return field;
    const inner = findInValue(field.value, name);
    if (inner !== undefined) return inner;
  }
  return undefined;
}

function findInValue(value: PbtxtValue, name: string): PbtxtField | undefined {
  if (value.kind === 'message') return findField(value.fields, name);
  if (value.kind === 'list') {
    for (const item of value.items) {
      const inner = findInValue(item, name);
      if (inner !== undefined) return inner;
    }
  }
  return undefined;
}

/**
 * Where the token that ends at or spans `offset` starts, in text that parses.
 * For pointing at a value protobuf-es refused, given where its refusal begins.
 */
export function tokenStartAt(text: string, offset: number): TextPosition {
  const lex = new Lexer(text, new LineMap(text));
  let start = 0;
  try {
    for (let tok = lex.next(); tok.type !== 'eof' && tok.start < offset; tok = lex.next()) start = tok.start;
  } catch {
    // A "[...]" name is not a run of tokens; the last token before it will do.
  }
  return lex.lines.position(start);
}
