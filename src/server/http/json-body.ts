/**
 * Reading JSON request bodies, and describing what a client sent when it is
 * not what was expected. A malformed body is an 'invalid' ServingError (400)
 * naming the problem; the server carries on. Pure; any thread (the JSON
 * parse worker uses it too).
 */
import { invalidArgument } from '../../common/serving-error.js';

export type JsonObject = { readonly [key: string]: unknown };

/**
 * The most values a JSON body may hold: twice the typed elements a gRPC
 * request may (server/infer-request-prescan.ts), leaving room for keys and
 * small values. A large tensor belongs in the binary tensor extension, where
 * it is one buffer, not one value per element. Checked before JSON.parse, so
 * a body of millions of `{}` never becomes millions of objects.
 */
export const JSON_MAX_VALUES = 1 << 21;

/**
 * Counts the values of a JSON text fed in pieces (commas and opening brackets
 * outside strings; one pass, no allocation) and refuses (400) the piece that
 * takes it past `limit`. The HTTP door feeds a body's JSON part as it arrives
 * and inflates (body-reader.ts), so a bomb is refused before it is whole.
 */
export class JsonValueCounter {
  private values = 1;
  private inString = false;
  private escaped = false;

  constructor(private readonly limit = JSON_MAX_VALUES) {}

  feed(bytes: Uint8Array): void {
    let { values, inString, escaped } = this;
    for (let i = 0; i < bytes.length; i += 1) {
      const byte = bytes[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === 0x5c) escaped = true; // a backslash escapes the next byte
        else if (byte === 0x22) inString = false;
      } else if (byte === 0x22) {
        inString = true;
      } else if (byte === 0x2c || byte === 0x5b || byte === 0x7b) {
        values += 1;
        if (values > this.limit) {
          throw invalidArgument(
            `the JSON body holds more than ${this.limit} values; send large tensors as binary data (the binary tensor extension, Inference-Header-Content-Length)`,
          );
        }
      }
    }
    this.values = values;
    this.inString = inString;
    this.escaped = escaped;
  }
}

/** Refuses (400) a JSON text with more than `limit` values (JsonValueCounter over the whole text). */
export function checkJsonValues(bytes: Uint8Array, limit = JSON_MAX_VALUES): void {
  new JsonValueCounter(limit).feed(bytes);
}

/** Parses `bytes` as JSON (UTF-8), after checkJsonValues. On the calling thread: large bodies go through JsonParser (json-parser.ts). */
export function parseJson(bytes: Uint8Array): unknown {
  checkJsonValues(bytes);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidArgument(`malformed JSON in the request body: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** An optional JSON object body: `{}` when the body is empty (tritonclient sends none for index, load and unload). */
export function parseOptionalObject(bytes: Uint8Array, expected: string): JsonObject {
  return optionalObject(bytes.byteLength === 0 ? undefined : parseJson(bytes), expected);
}

/** A parsed optional body (undefined: there was none) as an object; 400 for anything else. */
export function optionalObject(value: unknown, expected: string): JsonObject {
  if (value === undefined) return {};
  if (!isObject(value)) throw invalidArgument(`the request body must be a JSON object (${expected}); got ${kindOf(value)}`);
  return value;
}

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** What a JSON value is, for "expected X; got Y" messages. */
export function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${show(value)}`;
}

/** A JSON value as a message shows it, cut short (it is the client's). */
export function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= 64 ? text : `${text.slice(0, 64)}…`;
}
