/**
 * Reads a request body under the one size limit both doors share
 * (`--max-message-size`): a declared Content-Length above it is refused
 * before a byte of the body is read, and a chunked body is counted as it
 * streams and refused at the first chunk that crosses the limit, so an
 * oversized body is never held in memory. A gzip or deflate body
 * (`Content-Encoding`, which tritonclient sends when asked to compress) is
 * inflated under the same limit.
 *
 * Every byte held, received and inflated, is charged as it arrives to the
 * door's process-wide budget (body-budget.ts, `--http-body-budget`) until the
 * answer is sent; past the budget the request is refused 503 with
 * Retry-After. Inflation streams (zlib in the thread pool, 64 KiB chunks), so
 * a bomb is stopped at the first chunk past either limit, not after it has
 * been inflated whole.
 *
 * Refusals are HttpFramingError 413 (too large), 503 (over the budget) or
 * ServingError 'invalid' (a body the server cannot read).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import { invalidArgument } from '../../common/serving-error.js';
import type { BodyBudget, BodyLease } from './body-budget.js';
import type { RefusalLog } from '../../observability/refusal-log.js';
import { HttpFramingError, sendError, type Exchange } from './http-reply.js';
import { JsonValueCounter, parseJson } from './json-body.js';
import type { JsonParser } from './json-parser.js';

/** What bounds one door's request bodies, and parses their JSON. */
export interface BodyLimits {
  /** --max-message-size: one body, as sent and as inflated. */
  readonly maxBytes: number;
  /** --http-body-budget: all bodies in flight together; undefined: no process-wide bound. */
  readonly budget?: BodyBudget | undefined;
  /** Large JSON off the event loop, under --http-json-queue; undefined: every body parses inline. */
  readonly json?: JsonParser | undefined;
  /** --body-idle-timeout: ms a body may go without a byte (then 408, connection closed); undefined: no limit. */
  readonly idleTimeoutMs?: number | undefined;
}

/** A body as read, and its bytes' charge to the budget. */
export interface HeldBody {
  readonly bytes: Buffer;
  /**
   * Returns every byte charged for the body (received and inflated) to the
   * budget now rather than when the answer is sent: for a body handed to
   * another server, which charges it again as it reads it. Later calls, and
   * the answer's, do nothing.
   */
  readonly release: () => void;
}

/**
 * Resolves with the whole body (an empty buffer when there is none); its
 * bytes stay charged to the budget until the answer is sent. `jsonBytes`:
 * how many leading bytes of the (inflated) body are JSON (Infinity: all);
 * their values are counted as they arrive (json-body.ts JsonValueCounter),
 * so a JSON bomb is refused 400 before the body is whole.
 */
export async function readBody(exchange: Exchange, limits: BodyLimits, jsonBytes = 0): Promise<Buffer> {
  return (await readHeldBody(exchange, limits, jsonBytes)).bytes;
}

/** readBody, with the means to release the body's charge before the answer is sent (HeldBody.release). */
export async function readHeldBody({ request, response }: Exchange, limits: BodyLimits, jsonBytes = 0): Promise<HeldBody> {
  const limitBytes = limits.maxBytes;
  const declared = declaredLength(request);
  if (declared !== undefined && declared > limitBytes) throw tooLarge(limitBytes, `a body of ${declared} bytes`);
  const lease = leaseFor(limits.budget, response);
  const scan = jsonScanner(jsonBytes);
  const release = () => lease?.release();
  try {
    const encoding = contentEncoding(request);
    const body = await collect(request, limitBytes, lease, limits.idleTimeoutMs, encoding === 'identity' ? scan : undefined);
    const bytes = encoding === 'identity' ? body : await inflate(encoding, body, limitBytes, lease, scan);
    return { bytes, release };
  } catch (err) {
    lease?.release();
    // Paused, not drained: the answer closes the connection (see sendError).
    if (err instanceof HttpFramingError) request.pause();
    throw err;
  }
}

/** A JSON body's value (parsed off the event loop when large); undefined when the body is empty. */
export async function readJsonBody(exchange: Exchange, limits: BodyLimits): Promise<unknown> {
  const body = await readBody(exchange, limits, Infinity);
  if (body.byteLength === 0) return undefined;
  return parseJsonBody(body, limits, true);
}

/** `bytes` as JSON, through the door's JsonParser when it has one; `owned`: the caller no longer needs `bytes` (they may be moved, not copied). */
export function parseJsonBody(bytes: Uint8Array, limits: BodyLimits, owned: boolean): Promise<unknown> {
  return limits.json?.parse(bytes, owned) ?? Promise.resolve().then(() => parseJson(bytes));
}

/** Feeds the first `jsonBytes` bytes of the decoded body to a JsonValueCounter; undefined when there are none. */
function jsonScanner(jsonBytes: number): ((chunk: Buffer) => void) | undefined {
  if (jsonBytes <= 0) return undefined;
  const counter = new JsonValueCounter();
  let seen = 0;
  return (chunk) => {
    if (seen >= jsonBytes) return;
    counter.feed(seen + chunk.byteLength <= jsonBytes ? chunk : chunk.subarray(0, jsonBytes - seen));
    seen += chunk.byteLength;
  };
}

function contentEncoding(request: IncomingMessage): 'identity' | 'gzip' | 'deflate' {
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return 'identity';
  if (encoding !== 'gzip' && encoding !== 'deflate') {
    throw invalidArgument(`unsupported Content-Encoding '${encoding.slice(0, 64)}'; expected gzip, deflate or identity`);
  }
  return encoding;
}

function leaseFor(budget: BodyBudget | undefined, response: ServerResponse): BodyLease | undefined {
  return budget?.lease(response);
}

/** The Content-Length header as a number; undefined when the body is chunked. */
export function declaredLength(request: IncomingMessage): number | undefined {
  const header = request.headers['content-length'];
  if (header === undefined) return undefined;
  // Node's parser has already rejected a malformed Content-Length.
  return Number(header);
}

/** 413, naming the limit, the flag that sets it, and what was sent. */
export function tooLarge(limitBytes: number, sent: string): HttpFramingError {
  return new HttpFramingError(
    413,
    `request body too large: ${sent} exceeds the limit of ${limitBytes} bytes (--max-message-size)`,
  );
}

function collect(
  request: IncomingMessage,
  limitBytes: number,
  lease: BodyLease | undefined,
  idleTimeoutMs: number | undefined,
  scan: ((chunk: Buffer) => void) | undefined,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    // Refreshed by every chunk: fires only when the body stops arriving (not a bound on a slow, steady upload).
    const idle = idleTimeoutMs === undefined || idleTimeoutMs <= 0
      ? undefined
      : setTimeout(() => {
          stop();
          reject(new HttpFramingError(408, `the request body stopped arriving: no byte for ${idleTimeoutMs} ms (--body-idle-timeout) after ${received} bytes`));
        }, idleTimeoutMs);
    const onData = (chunk: Buffer) => {
      idle?.refresh();
      received += chunk.byteLength;
      if (received > limitBytes) {
        stop();
        reject(tooLarge(limitBytes, `a chunked body of more than ${limitBytes} bytes`));
        return;
      }
      try {
        lease?.charge(chunk.byteLength);
        scan?.(chunk);
      } catch (err) {
        stop();
        reject(err);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    const onClose = () => {
      stop();
      reject(new Error('the client closed the connection before sending the whole body'));
    };
    const stop = () => {
      clearTimeout(idle);
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('close', onClose);
  });
}

/** Inflates `body` chunk by chunk, charging each chunk, stopping at the first past `limitBytes` or the budget. */
function inflate(
  encoding: 'gzip' | 'deflate',
  body: Buffer,
  limitBytes: number,
  lease: BodyLease | undefined,
  scan: ((chunk: Buffer) => void) | undefined,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const inflater = encoding === 'gzip' ? zlib.createGunzip({ chunkSize: 64 * 1024 }) : zlib.createInflate({ chunkSize: 64 * 1024 });
    const chunks: Buffer[] = [];
    let total = 0;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      chunks.length = 0;
      inflater.destroy();
      reject(err);
    };
    inflater.on('data', (chunk: Buffer) => {
      if (failed) return;
      total += chunk.byteLength;
      if (total > limitBytes) {
        fail(tooLarge(limitBytes, `a ${encoding} body that inflates to more than ${limitBytes} bytes`));
        return;
      }
      try {
        lease?.charge(chunk.byteLength);
        scan?.(chunk);
      } catch (err) {
        fail(err);
        return;
      }
      chunks.push(chunk);
    });
    inflater.on('error', (err) =>
      fail(invalidArgument(`the ${encoding} body cannot be inflated: ${err instanceof Error ? err.message : String(err)}`)),
    );
    inflater.on('end', () => {
      if (!failed) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
    });
    inflater.end(body);
  });
}

/**
 * A request with `Expect: 100-continue` (the server's 'checkContinue'): a
 * declared body above `maxBytes` gets its 413 before the client sends it,
 * logged through `refusals`; any other gets its 100 Continue and goes to
 * `handle`. The same on the main thread's REST server and a door thread's.
 */
export function answerExpectContinue(
  server: Server,
  maxBytes: number,
  refusals: RefusalLog,
  handle: (request: IncomingMessage, response: ServerResponse) => void,
): void {
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    const declared = declaredLength(request);
    if (declared !== undefined && declared > maxBytes) {
      const refusal = tooLarge(maxBytes, `a body of ${declared} bytes`);
      refusals.refused('http:413', { door: 'http', method: request.method, peer: request.socket.remoteAddress, status: 413, reason: refusal.message }, 'request refused');
      sendError(response, refusal);
      return;
    }
    response.writeContinue();
    handle(request, response);
  });
}
