/**
 * How the HTTP door answers: JSON bodies (and the binary tensor extension's
 * JSON-then-bytes bodies) always with a Content-Length, so keep-alive
 * connections stay reusable, and every failure as `{"error": "..."}` with the
 * HTTP status of its kind (common/error-kinds.ts, the one table).
 *
 * Two statuses belong to HTTP framing alone and have no error kind: 405 (a
 * known path, the wrong method) and 413 (a body above --max-message-size,
 * where gRPC's own transport answers RESOURCE_EXHAUSTED before any handler
 * runs). They travel as HttpFramingError, as does the body budget's 503
 * (body-budget.ts), which carries Retry-After.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { classifyError } from '../../common/serving-error.js';
import { httpStatusOf } from '../../common/error-kinds.js';
import { boundMessage } from '../../common/echo.js';

/** One request and its response, as the router hands them to an endpoint. */
export interface Exchange {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
}

export class HttpFramingError extends Error {
  override readonly name = 'HttpFramingError';
  constructor(
    readonly status: 405 | 408 | 413 | 503,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** Sends `value` as a JSON body. */
export function sendJson(response: ServerResponse, status: number, value: unknown): void {
  sendBody(response, status, 'application/json', [Buffer.from(JSON.stringify(value))]);
}

/** Sends `parts` back to back as one body, with their total as Content-Length (no copy into one buffer). */
export function sendBody(
  response: ServerResponse,
  status: number,
  contentType: string,
  parts: readonly Uint8Array[],
  headers: Readonly<Record<string, string>> = {},
): void {
  if (response.headersSent || response.destroyed) return;
  const length = parts.reduce((sum, part) => sum + part.byteLength, 0);
  response.writeHead(status, { ...headers, 'content-type': contentType, 'content-length': String(length) });
  response.cork();
  for (const part of parts) if (part.byteLength > 0) response.write(part);
  response.end();
  response.uncork();
}

/** The status a failure is answered with. */
export function statusOf(err: unknown): number {
  return err instanceof HttpFramingError ? err.status : httpStatusOf(classifyError(err).kind);
}

/**
 * Answers a failure as `{"error": message}`. A 413 also closes the
 * connection: the rest of the oversized body is never read, so the socket
 * cannot carry another request.
 */
export function sendError(response: ServerResponse, err: unknown): void {
  if (response.headersSent) {
    // Nothing sensible can follow a started body; the client sees the connection end.
    response.destroy();
    return;
  }
  const message = err instanceof HttpFramingError ? err.message : classifyError(err).message;
  const headers = err instanceof HttpFramingError ? { ...err.headers } : {};
  // 413, and 503 for the body budget: the rest of the body may be unread.
  if (err instanceof HttpFramingError && err.status !== 405) headers['connection'] = 'close';
  sendBody(response, statusOf(err), 'application/json', [Buffer.from(JSON.stringify({ error: boundMessage(message) }))], headers);
}
