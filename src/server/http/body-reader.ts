/**
 * Reads a request body under the one size limit both doors share
 * (`--max-message-size`): a declared Content-Length above it is refused
 * before a byte of the body is read, and a chunked body is counted as it
 * streams and refused at the first chunk that crosses the limit, so an
 * oversized body is never held in memory. A gzip or deflate body
 * (`Content-Encoding`, which tritonclient sends when asked to compress) is
 * inflated under the same limit.
 *
 * Refusals are HttpFramingError 413 (too large) or ServingError 'invalid'
 * (a body the server cannot read).
 */
import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { invalidArgument } from '../../common/serving-error.js';
import { HttpFramingError } from './http-reply.js';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);

/** Resolves with the whole body (an empty buffer when there is none). */
export async function readBody(request: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = declaredLength(request);
  if (declared !== undefined && declared > limitBytes) throw tooLarge(limitBytes, `a body of ${declared} bytes`);
  const body = await collect(request, limitBytes);
  return decode(request, body, limitBytes);
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

function collect(request: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.byteLength;
      if (received > limitBytes) {
        stop();
        // Paused, not drained: the answer closes the connection (see sendError).
        request.pause();
        reject(tooLarge(limitBytes, `a chunked body of more than ${limitBytes} bytes`));
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

async function decode(request: IncomingMessage, body: Buffer, limitBytes: number): Promise<Buffer> {
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return body;
  if (encoding !== 'gzip' && encoding !== 'deflate') {
    throw invalidArgument(`unsupported Content-Encoding '${encoding.slice(0, 64)}'; expected gzip, deflate or identity`);
  }
  try {
    return await (encoding === 'gzip' ? gunzip : inflate)(body, { maxOutputLength: limitBytes });
  } catch (err) {
    if (err instanceof RangeError || (err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw tooLarge(limitBytes, `a ${encoding} body that inflates to more than ${limitBytes} bytes`);
    }
    throw invalidArgument(`the ${encoding} body cannot be inflated: ${err instanceof Error ? err.message : String(err)}`);
  }
}
