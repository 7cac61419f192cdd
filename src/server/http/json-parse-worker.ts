/**
 * The JSON parse worker (json-parser.ts): parses request bodies off the
 * event loop. Receives `{id, bytes}` (the bytes transferred, not copied) and
 * answers `{id, value}` or `{id, error: {kind, message}}`. Holds no state
 * between jobs; the same checks as an inline parse (json-body.ts parseJson).
 */
import { parentPort } from 'node:worker_threads';
import { classifyError } from '../../common/serving-error.js';
import { parseJson } from './json-body.js';

export interface JsonJob {
  readonly id: number;
  readonly bytes: Uint8Array;
}

export type JsonResult = { readonly id: number; readonly value: unknown } | { readonly id: number; readonly error: { kind: string; message: string } };

parentPort?.on('message', ({ id, bytes }: JsonJob) => {
  let result: JsonResult;
  try {
    result = { id, value: parseJson(bytes) };
  } catch (err) {
    const { kind, message } = classifyError(err);
    result = { id, error: { kind, message } };
  }
  parentPort!.postMessage(result);
});
