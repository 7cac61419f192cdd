/**
 * Per-call identity for logs: `request_id` from the `x-request-id` metadata
 * (or generated, and returned in the trailing metadata) and `trace_id` from a
 * W3C `traceparent` header. Neither ever becomes a metric label.
 */
import { randomBytes } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import { epochMs } from '../common/epoch-ms.js';

export const REQUEST_ID_HEADER = 'x-request-id';
export const TRACEPARENT_HEADER = 'traceparent';

export type { RequestContext } from '../inference/infer-context.js';
import type { RequestContext } from '../inference/infer-context.js';

// Printable ASCII, bounded, so a hostile id cannot bloat or break log lines.
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
// version-traceid-parentid-flags; version ff is invalid, as are all-zero ids.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

export function requestContextFrom(metadata: Metadata, deadline?: Date | number): RequestContext {
  return { requestId: requestIdOf(metadata), traceId: traceIdOf(metadata), deadlineMs: deadlineMsOf(deadline) };
}

/** The caller's `x-request-id` when it is a valid one, else a generated one (generatedRequestId). */
export function requestIdOf(metadata: Metadata): string {
  const given = firstString(metadata, REQUEST_ID_HEADER);
  return given !== undefined && REQUEST_ID.test(given) ? given : generatedRequestId();
}

/**
 * A request id for a call that brought none: a UUID in RFC 9562's version 8
 * (vendor-specific) layout, `pppppppp-pppp-8ppp-vppp-cccccccccccc`: 74 bits
 * drawn at random once per thread (p; v is the variant), then a 48-bit
 * counter (c). Unique within the thread by the counter, across threads,
 * processes and restarts by the random part (74 bits), which is what a log
 * correlation id needs; nothing relies on it being unguessable (it is not a
 * secret, nor part of the cache key).
 *
 * Why not randomUUID: it costs a string built from 16 byte lookups per call
 * plus a getrandom refill every 128 ids, about 0.7 µs a request in the
 * server's --cpu-prof (more under load; issue 19). This is one counter
 * formatted and one concatenation.
 */
export function generatedRequestId(): string {
  if (idCounter === ID_COUNTER_LIMIT) {
    idPrefix = randomIdPrefix();
    idCounter = 0;
  }
  idCounter += 1;
  return idPrefix + idCounter.toString(16).padStart(12, '0');
}

const ID_COUNTER_LIMIT = 2 ** 48 - 1;
let idPrefix = randomIdPrefix();
let idCounter = 0;

/** `pppppppp-pppp-8ppp-vppp-`: 74 random bits, version 8, variant 10. */
function randomIdPrefix(): string {
  const bytes = randomBytes(10);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`;
}

/** The trace id of the call's `traceparent`, when it has a valid one. */
export function traceIdOf(metadata: Metadata): string | undefined {
  const traceparent = firstString(metadata, TRACEPARENT_HEADER);
  return traceparent === undefined ? undefined : parseTraceparent(traceparent);
}

/** A grpc-js deadline as epoch ms; undefined for none (Infinity). */
export function deadlineMsOf(deadline: Date | number | undefined): number | undefined {
  const deadlineMs = deadline === undefined ? Infinity : deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(deadlineMs) ? deadlineMs : undefined;
}

/** The trace id of a W3C traceparent, or undefined when it is malformed. */
export function parseTraceparent(value: string): string | undefined {
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (match === null) return undefined;
  const [, version, traceId, parentId] = match;
  if (version === 'ff' || /^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return undefined;
  // Version 00 has exactly four fields; later versions may append more.
  if (version === '00' && match[5] !== undefined) return undefined;
  return traceId;
}

/**
 * Watches a grpc-js call for the client's cancellation, for
 * RequestContext.cancelledAtMs. grpc-js emits 'cancelled' also when the call's
 * deadline passes; that one is the deadline's failure, not the client's
 * cancellation, so it is not recorded.
 */
export function watchCancellation(call: {
  on(event: 'cancelled', listener: () => void): unknown;
  getDeadline(): Date | number;
}): () => number | undefined {
  let cancelledAtMs: number | undefined;
  // `on`, not `once`: no wrapper per call; the first cancellation is the one kept.
  call.on('cancelled', () => {
    if (cancelledAtMs !== undefined) return;
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
    if (Date.now() < deadlineMs) cancelledAtMs = epochMs();
  });
  return () => cancelledAtMs;
}

/**
 * The trailing metadata every inference call ends with. `context.requestId`
 * must come from requestIdOf (every gRPC context's does, infer-handlers.ts
 * contextOf), which makes it a legal header value.
 */
export function trailersFor(context: RequestContext): Metadata {
  return new RequestIdTrailers(context.requestId);
}

/**
 * Metadata holding only `x-request-id`, set without `Metadata.set`'s checks.
 * Why: set() lower-cases the key and runs two regular expressions over key
 * and value on every call; on a generated id (a string built of pieces) the
 * value's check also flattens it first: about 0.25 µs a call in-process on
 * a randomUUID id, 0.9 µs a request in the server's --cpu-prof (issue 19).
 * Both checks are known to pass: the key is a lower-case constant, and
 * requestIdOf only returns printable ASCII (REQUEST_ID, a subset of the
 * " "-"~" grpc-js allows) or a generated UUID. `internalRepr` is Metadata's protected
 * store, open to a subclass by design; everything else (toHttp2Headers,
 * clone, get) is Metadata's own.
 */
class RequestIdTrailers extends Metadata {
  constructor(requestId: string) {
    super();
    this.internalRepr.set(REQUEST_ID_HEADER, [requestId]);
  }
}

/** The first value of a metadata key when it is a string (binary `-bin` values are not). */
export function firstString(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}
