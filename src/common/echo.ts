/**
 * Bounded echoes of request-supplied text (model, version, input, output,
 * datatype and parameter names and values) in error messages and log fields.
 *
 * A client controls these strings, so they are shown cut and escaped:
 *   - at most ECHO_MAX_CHARS characters of the (escaped) text are shown; the
 *     rest is replaced by a marker saying how many characters were cut,
 *     `…(+102144 chars)`, counted in Unicode code points of the original;
 *   - characters that could break a log line or a terminal are escaped:
 *     `\n`, `\r` and `\t` as those two-character escapes, other C0 controls,
 *     DEL and C1 controls as `\xNN`, and the invisible Unicode formatting
 *     characters that can reorder or split a line (U+2028/U+2029 line and
 *     paragraph separators, the bidirectional marks and overrides U+200E,
 *     U+200F, U+202A–U+202E, U+2066–U+2069) and lone surrogates as `\uNNNN`;
 *   - a backslash is doubled and, in the quoted form, a `'` is escaped, so an
 *     echo can always be read back unambiguously;
 *   - every other character, non-ASCII letters and emoji included, is shown
 *     as it is.
 *
 * Without this, a 100 KB model name made a 100 KB error message, which grpc-js
 * cannot fit in the response's metadata (the client saw RESOURCE_EXHAUSTED
 * instead of NOT_FOUND), and a 200 KB access-log line.
 *
 * Pure; safe in any thread.
 */

/** The most characters of a request-supplied string an error or log field shows. */
export const ECHO_MAX_CHARS = 256;

/**
 * The most characters of a whole error message a client is sent. Each echoed
 * name is already bounded; this backstop keeps a message that lists many
 * things (a model's inputs, say) well inside gRPC's 8 KiB metadata limit.
 */
export const MESSAGE_MAX_CHARS = 4096;

/** The most names a message lists (available models, say); the rest are counted, not named. */
export const LIST_MAX_NAMES = 16;

/**
 * `a, b, c` of the first LIST_MAX_NAMES `names`, each as `echoField` shows it,
 * then `… (+N more)` for the rest; `none` when there are none. A registry with
 * thousands of names (or a few huge ones) still makes a short message.
 */
export function echoList(names: Iterable<string>, none = '(none)'): string {
  const shown: string[] = [];
  let more = 0;
  for (const name of names) {
    if (shown.length < LIST_MAX_NAMES) shown.push(echoField(name));
    else more += 1;
  }
  if (shown.length === 0) return none;
  return more === 0 ? shown.join(', ') : `${shown.join(', ')}, … (+${more} more)`;
}

/** `'value'`, escaped, cut to ECHO_MAX_CHARS with a `…(+N chars)` marker after the closing quote. */
export function echo(value: string): string {
  const { text, cut } = bounded(value, true);
  return `'${text}'${cutMarker(cut)}`;
}

/** The same bounded, escaped form without quotes: for log fields, which the log format delimits. */
export function echoField(value: string): string;
export function echoField(value: string | undefined): string | undefined;
export function echoField(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const { text, cut } = bounded(value, false);
  return text + cutMarker(cut);
}

/**
 * A whole message cut to MESSAGE_MAX_CHARS (names in it are already echoed,
 * so it is only cut, not escaped), never inside a surrogate pair.
 */
export function boundMessage(message: string): string {
  if (message.length <= MESSAGE_MAX_CHARS) return message;
  let end = MESSAGE_MAX_CHARS;
  if (isHighSurrogate(message.charCodeAt(end - 1))) end -= 1;
  const rest = message.slice(end);
  return message.slice(0, end) + cutMarker(codePointCount(rest));
}

function cutMarker(cut: number): string {
  return cut === 0 ? '' : `…(+${cut} chars)`;
}

function bounded(value: string, quoted: boolean): { text: string; cut: number } {
  let text = '';
  let shownUnits = 0;
  for (const char of value) {
    const piece = escapeChar(char, quoted);
    if (text.length + piece.length > ECHO_MAX_CHARS) {
      return { text, cut: codePointCount(value.slice(shownUnits)) };
    }
    text += piece;
    shownUnits += char.length;
  }
  return { text, cut: 0 };
}

const NAMED_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

function escapeChar(char: string, quoted: boolean): string {
  const named = NAMED_ESCAPES[char];
  if (named !== undefined) return named;
  if (quoted && char === "'") return "\\'";
  const code = char.codePointAt(0)!;
  if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return `\\x${hex(code, 2)}`;
  if (isInvisibleFormat(code) || (code >= 0xd800 && code <= 0xdfff)) return `\\u${hex(code, 4)}`;
  return char;
}

/** Line/paragraph separators and bidirectional controls: they split or reorder a line without showing. */
function isInvisibleFormat(code: number): boolean {
  return (
    code === 0x2028 || code === 0x2029 || code === 0x200e || code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069)
  );
}

function hex(code: number, width: number): string {
  return code.toString(16).toUpperCase().padStart(width, '0');
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function codePointCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    count += 1;
    if (isHighSurrogate(text.charCodeAt(i)) && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i += 1;
    }
  }
  return count;
}
