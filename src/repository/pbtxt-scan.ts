/**
 * A small, forgiving scanner for the protobuf text format, used only to edit
 * and locate things in config.pbtxt around protobuf-es's `fromText`:
 *
 * - `blankField` erases one field (name, value and separator) so a config with
 *   a field this build does not know can still be parsed;
 * - `findFieldNameLine` finds the line where a field name is written, for
 *   warnings about fields that parse but are ignored.
 *
 * It is not a parser: it only needs to find token boundaries (strings with
 * escapes, `#` comments, balanced `{}`/`<>`/`[]`). Erased text is replaced by
 * spaces with newlines kept, so every later offset and line number is
 * unchanged and errors still point into the user's file.
 */

type TokenKind = 'ident' | 'number' | 'string' | 'punct';

interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;
const NUMBER_PART = /[A-Za-z0-9_.]/;

/** Splits `text` into tokens, skipping whitespace and `#` comments. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text.charAt(i);
    if (c === '#') {
      while (i < text.length && text.charAt(i) !== '\n') i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '"' || c === "'") {
      const start = i;
      i = skipString(text, i);
      tokens.push({ kind: 'string', text: text.slice(start, i), start, end: i });
    } else if (IDENT_START.test(c)) {
      const start = i;
      while (i < text.length && IDENT_PART.test(text.charAt(i))) i++;
      tokens.push({ kind: 'ident', text: text.slice(start, i), start, end: i });
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(text.charAt(i + 1)))) {
      const start = i;
      while (i < text.length) {
        const d = text.charAt(i);
        const prev = text.charAt(i - 1);
        // An exponent sign belongs to the number (1e-3), any other sign does not.
        const exponentSign = (d === '-' || d === '+') && (prev === 'e' || prev === 'E');
        if (!NUMBER_PART.test(d) && !exponentSign) break;
        i++;
      }
      tokens.push({ kind: 'number', text: text.slice(start, i), start, end: i });
    } else {
      tokens.push({ kind: 'punct', text: c, start: i, end: i + 1 });
      i++;
    }
  }
  return tokens;
}

/** Returns the offset just past the string literal starting at `start`. */
function skipString(text: string, start: number): number {
  const quote = text.charAt(start);
  let i = start + 1;
  while (i < text.length) {
    const c = text.charAt(i);
    if (c === '\\') {
      i += 2;
      continue;
    }
    // Text-format strings cannot span lines; stop there so an unterminated
    // string does not swallow the rest of the file.
    if (c === quote || c === '\n') return i + 1;
    i++;
  }
  return text.length;
}

const OPEN_TO_CLOSE: Readonly<Record<string, string>> = { '{': '}', '<': '>', '[': ']' };

/** Index of the token after the balanced group opened at `tokens[open]`. */
function skipGroup(tokens: readonly Token[], open: number): number {
  const stack: string[] = [];
  let i = open;
  while (i < tokens.length) {
    const t = tokens[i]!;
    if (t.kind === 'punct') {
      const close = OPEN_TO_CLOSE[t.text];
      if (close !== undefined) {
        stack.push(close);
      } else if (t.text === stack[stack.length - 1]) {
        stack.pop();
        if (stack.length === 0) return i + 1;
      }
    }
    i++;
  }
  return tokens.length;
}

/**
 * Index of the token after the value of the field whose name is `tokens[name]`,
 * including an optional ":" before it and one "," or ";" after it.
 */
function skipFieldValue(tokens: readonly Token[], name: number): number {
  let i = name + 1;
  if (tokens[i]?.text === ':') i++;
  const first = tokens[i];
  if (first === undefined) return i;
  if (first.kind === 'punct' && OPEN_TO_CLOSE[first.text] !== undefined) {
    i = skipGroup(tokens, i);
  } else if (first.kind === 'string') {
    // Adjacent string literals concatenate: "ab" "cd".
    while (tokens[i]?.kind === 'string') i++;
  } else {
    if (first.text === '-') i++;
    i++;
  }
  const sep = tokens[i];
  if (sep !== undefined && sep.kind === 'punct' && (sep.text === ',' || sep.text === ';')) i++;
  return i;
}

/**
 * Erases the field whose name token ends exactly at offset `nameEnd`: its
 * name, value and trailing separator become spaces (newlines kept). Returns
 * undefined when no field name ends there.
 */
export function blankField(text: string, nameEnd: number): string | undefined {
  const tokens = tokenize(text);
  const name = tokens.findIndex((t) => t.kind === 'ident' && t.end === nameEnd);
  if (name < 0) return undefined;
  const after = skipFieldValue(tokens, name);
  const start = tokens[name]!.start;
  // `after` is past the name at least, so tokens[after - 1] is the last token erased.
  const end = tokens[after - 1]!.end;
  const erased = text.slice(start, end).replace(/[^\n]/g, ' ');
  return text.slice(0, start) + erased + text.slice(end);
}

/** Whether `tokens[i]` is an identifier written where a field name goes. */
function isFieldName(tokens: readonly Token[], i: number): boolean {
  const next = tokens[i + 1];
  if (tokens[i]?.kind !== 'ident' || next === undefined || next.kind !== 'punct') return false;
  return next.text === ':' || next.text === '{' || next.text === '<' || next.text === '[';
}

/**
 * 1-based line of the first place `field` is written as a field name, or
 * undefined. Only the name is matched, not its enclosing message: good enough
 * to point a warning at the right place in a hand-written config.
 */
export function findFieldNameLine(text: string, field: string): number | undefined {
  const tokens = tokenize(text);
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i]!.text === field && isFieldName(tokens, i)) {
      return lineOfOffset(text, tokens[i]!.start);
    }
  }
  return undefined;
}

/** 1-based line number of `offset` in `text`. */
export function lineOfOffset(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) line++;
  }
  return line;
}

/** Offset just past the end of 1-based `line` (before its newline). */
export function endOfLine(text: string, line: number): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', offset);
    if (nl < 0) return text.length;
    offset = nl + 1;
  }
  const nl = text.indexOf('\n', offset);
  return nl < 0 ? text.length : nl;
}

/** 1-based number of the last line that has anything but whitespace or a comment. */
export function lastContentLine(text: string): number {
  const tokens = tokenize(text);
  const last = tokens[tokens.length - 1];
  return last === undefined ? 1 : lineOfOffset(text, last.start);
}
