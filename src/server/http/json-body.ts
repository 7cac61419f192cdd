/**
 * Reading JSON request bodies, and describing what a client sent when it is
 * not what was expected. A malformed body is an 'invalid' ServingError (400)
 * naming the problem; the server carries on. Pure; main thread.
 */
import { invalidArgument } from '../../common/serving-error.js';

export type JsonObject = { readonly [key: string]: unknown };

/** Parses `bytes` as JSON (UTF-8). */
export function parseJson(bytes: Uint8Array): unknown {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidArgument(`malformed JSON in the request body: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** An optional JSON object body: `{}` when the body is empty (tritonclient sends none for index, load and unload). */
export function parseOptionalObject(bytes: Uint8Array, expected: string): JsonObject {
  if (bytes.byteLength === 0) return {};
  const value = parseJson(bytes);
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
