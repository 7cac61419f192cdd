/**
 * The gRPC door's body-idle timeout (--body-idle-timeout, the same flag and
 * value as the HTTP door's; issue 21): a call whose request stops arriving
 * part way is ended, so a client that sends headers and half a message and
 * then nothing cannot make the server hold the call, its decoder's buffered
 * bytes and its stream slot for ever.
 *
 * What counts as "owed" bytes, per call:
 * - unary and server-streaming calls owe their one message and the
 *   half-close (END_STREAM) from the moment their headers arrive: grpc-js
 *   runs the handler only once both are in (server.ts handleUnary);
 * - client- and bidi-streaming calls owe bytes only while a message is part
 *   way through (its 5-byte length prefix said more than has arrived): a
 *   stream may rightly wait as long as it likes between two requests.
 * While bytes are owed, a quiet spell of the timeout ends the call. Every
 * DATA byte restarts the spell. A spell in which the server itself is not
 * reading (grpc-js pauses the HTTP/2 stream while the handler has not asked
 * for the next message: stream backpressure) does not count: the client
 * cannot send what the server's flow-control window does not let in.
 *
 * How it ends: status DEADLINE_EXCEEDED ("the request message stopped
 * arriving...", naming the flag, the bytes received and the bytes the
 * message declared), then RST_STREAM(NO_ERROR), which RFC 9113 §8.1 provides
 * for exactly this: a server that has answered tells the client to stop
 * sending. DEADLINE_EXCEEDED because it is the server's deadline for the
 * request's bytes that passed (HTTP answers the same case 408 Request
 * Timeout; gRPC has no closer status), and gRPC clients treat it as final
 * rather than retrying it as they would UNAVAILABLE. The reset closes the
 * stream, so grpc-js drops the call and its decoder with the partial message
 * at once; the connection and its other calls are untouched.
 *
 * The same rule bounds a call answered before its request was complete (a
 * refusal at admission, an early error): a client that ignores the status
 * and neither finishes nor resets its half of the stream has the timeout to
 * do so, then the stream is reset.
 *
 * Why at the HTTP/2 stream: grpc-js hands interceptors whole messages only,
 * so progress inside a message is visible on the stream's 'data' events
 * alone. This interceptor must be the first of the Server's interceptors:
 * the first one is given grpc-js's BaseServerInterceptingCall, which holds
 * the call's ServerHttp2Stream as `stream` (grpc-js 1.14's
 * server-interceptors.ts; not a public field). If a later grpc-js moves it,
 * `streamOf` finds nothing, the gRPC door runs without the limit, and
 * `onUnsupported` says so once (test/e2e/grpc-body-idle.test.ts fails).
 *
 * One timer per call while bytes are owed, re-armed lazily (a chunk only
 * stamps the time). Main thread (the door's thread); plain fields.
 */
import http2 from 'node:http2';
import {
  Metadata,
  ServerInterceptingCall,
  status,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServerMethodDefinition,
} from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { RefusalLog } from '../observability/refusal-log.js';

/** gRPC's length prefix: one flag byte, then the message's length (4 bytes, big-endian). */
const PREFIX_BYTES = 5;

/**
 * Follows gRPC's length-prefixed framing over a request stream's DATA bytes,
 * to tell whether a message is part way through. Reads only prefixes; never
 * copies a payload.
 */
export class MessageFraming {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixHave = 0;
  private payloadLeft = 0;
  /** Bytes of the message now part way through, its prefix included (0 between messages). */
  received = 0;
  /** The payload length the part-way message's prefix declared (undefined until its prefix is in). */
  declared: number | undefined;
  /** Whole messages seen. */
  messages = 0;

  /** True while a message has begun and not ended. */
  get partial(): boolean {
    return this.prefixHave > 0 || this.payloadLeft > 0;
  }

  feed(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.payloadLeft > 0) {
        const n = Math.min(this.payloadLeft, chunk.length - at);
        this.payloadLeft -= n;
        this.received += n;
        at += n;
        if (this.payloadLeft === 0) this.endMessage();
        continue;
      }
      const n = Math.min(PREFIX_BYTES - this.prefixHave, chunk.length - at);
      chunk.copy(this.prefix, this.prefixHave, at, at + n);
      this.prefixHave += n;
      this.received += n;
      at += n;
      if (this.prefixHave < PREFIX_BYTES) break;
      this.prefixHave = 0;
      this.declared = this.prefix.readUInt32BE(1);
      this.payloadLeft = this.declared;
      if (this.payloadLeft === 0) this.endMessage();
    }
  }

  private endMessage(): void {
    this.messages += 1;
    this.received = 0;
    this.declared = undefined;
  }
}

/** What an interceptor call of grpc-js's exposes when it is the base call (see the file comment). */
function streamOf(call: ServerInterceptingCallInterface): http2.ServerHttp2Stream | undefined {
  const stream = (call as unknown as { stream?: unknown }).stream;
  if (typeof stream !== 'object' || stream === null) return undefined;
  const candidate = stream as Partial<http2.ServerHttp2Stream>;
  return typeof candidate.close === 'function' && typeof candidate.on === 'function' && 'rstCode' in candidate
    ? (stream as http2.ServerHttp2Stream)
    : undefined;
}

export interface BodyIdleEvent {
  readonly path: string;
  readonly peer: string;
  /** 'message': the request stopped part way; 'after-status': the call was answered and the client kept its half open. */
  readonly reason: 'message' | 'after-status';
  readonly receivedBytes: number;
  readonly declaredBytes: number | undefined;
}

export interface GrpcBodyIdleOptions {
  /** --body-idle-timeout in ms (> 0). */
  readonly timeoutMs: number;
  /** Called for each call this ends (the server logs it rate-limited). */
  readonly onIdle: (event: BodyIdleEvent) => void;
  /** Called once if grpc-js's base call has no HTTP/2 stream to watch (the limit is then off on gRPC). */
  readonly onUnsupported: () => void;
}

/** The interceptor; put it first in `new Server({interceptors})`. */
export function grpcBodyIdleInterceptor(options: GrpcBodyIdleOptions): ServerInterceptor {
  let warned = false;
  return (descriptor: ServerMethodDefinition<unknown, unknown>, call: ServerInterceptingCallInterface) => {
    const stream = streamOf(call);
    if (stream === undefined) {
      if (!warned) options.onUnsupported();
      warned = true;
      return new ServerInterceptingCall(call);
    }
    const watch = new BodyIdleWatch(stream, call, descriptor, options);
    // The half-close is seen on the stream's 'end' (BodyIdleWatch), which is
    // where grpc-js's own onReceiveHalfClose comes from, never later.
    return new ServerInterceptingCall(call, {
      sendStatus: (callStatus, pass) => {
        watch.answered();
        pass(callStatus);
      },
    });
  };
}

/**
 * The Server's body-idle interceptors for --body-idle-timeout `timeoutMs`:
 * none when it is 0. Calls it ends are logged (component 'connections')
 * rate-limited with counts, like the HTTP door's 408s.
 */
export function grpcBodyIdleInterceptors(timeoutMs: number, logger: Logger): ServerInterceptor[] {
  if (timeoutMs <= 0) return [];
  const log = logger.child({ component: 'connections' });
  const refusals = new RefusalLog(log);
  return [
    grpcBodyIdleInterceptor({
      timeoutMs,
      onIdle: (event) =>
        refusals.refused(
          `grpc:body_idle_${event.reason}`,
          { door: 'grpc', rpc: event.path, peer: event.peer, received_bytes: event.receivedBytes, declared_bytes: event.declaredBytes, timeout_ms: timeoutMs },
          event.reason === 'message'
            ? 'call ended: its request stopped arriving (--body-idle-timeout)'
            : 'stream reset: the client neither finished nor reset its request after the call was answered (--body-idle-timeout)',
        ),
      onUnsupported: () => log.warn("--body-idle-timeout is not enforced on gRPC: this grpc-js does not give its first interceptor the call's HTTP/2 stream"),
    }),
  ];
}

/** One call's watch; lives as long as its stream (listeners and timer go with it). */
class BodyIdleWatch {
  private readonly framing = new MessageFraming();
  /** Unary and server-streaming: the request (message and END_STREAM) is still owed. */
  private requestOwed: boolean;
  /** A status was sent: only the client's END_STREAM or reset is owed. */
  private answeredAt: number | undefined;
  private lastByteAt = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly call: ServerInterceptingCallInterface,
    private readonly descriptor: ServerMethodDefinition<unknown, unknown>,
    private readonly options: GrpcBodyIdleOptions,
  ) {
    this.requestOwed = !descriptor.requestStream;
    // Added after grpc-js's own 'data' listener, to a stream grpc-js has paused: this does not start the flow.
    stream.on('data', (chunk: Buffer) => {
      this.lastByteAt = performance.now();
      this.framing.feed(chunk);
      this.update();
    });
    // `on`, not `once` (no wrapper per call): a stream emits each of these once.
    stream.on('end', () => this.halfClosed());
    stream.on('close', () => {
      this.closed = true;
      this.disarm();
    });
    this.update();
  }

  private halfClosed(): void {
    this.requestOwed = false;
    this.update();
  }

  answered(): void {
    if (this.answeredAt !== undefined) return;
    this.answeredAt = performance.now();
    // After a status the spell runs from the status, whatever arrives: the server wants nothing more.
    this.update();
  }

  /** Bytes the client still owes, by the rules in the file comment. */
  private owed(): boolean {
    if (this.closed) return false;
    if (this.answeredAt !== undefined) return !this.stream.readableEnded;
    return this.requestOwed || this.framing.partial;
  }

  private update(): void {
    if (!this.owed()) this.disarm();
    else if (this.timer === undefined) this.arm(this.options.timeoutMs);
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.fire(), Math.max(1, ms));
    // A quiet stream must not keep the process alive on its own.
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private fire(): void {
    this.timer = undefined;
    if (!this.owed()) return;
    const now = performance.now();
    if (this.answeredAt !== undefined) {
      const left = this.answeredAt + this.options.timeoutMs - now;
      if (left > 0) return this.arm(left);
      this.end('after-status');
      return;
    }
    // The server is not reading (backpressure): the client is not the one keeping the bytes back.
    if (this.stream.readableFlowing !== true) this.lastByteAt = now;
    const left = this.lastByteAt + this.options.timeoutMs - now;
    if (left > 0) return this.arm(left);
    this.end('message');
  }

  private end(reason: BodyIdleEvent['reason']): void {
    const event: BodyIdleEvent = {
      path: this.descriptor.path,
      peer: this.call.getPeer(),
      reason,
      receivedBytes: this.framing.partial ? this.framing.received : 0,
      declaredBytes: this.framing.partial ? this.framing.declared : undefined,
    };
    if (reason === 'message') {
      // Response headers already sent (a stream that answered earlier requests): the status goes in
      // trailers, which grpc-js submits on 'wantTrailers', after the end of the stream's DATA.
      const inTrailers = this.stream.headersSent;
      this.call.sendStatus({ code: status.DEADLINE_EXCEEDED, details: this.details(), metadata: new Metadata() });
      if (inTrailers) {
        // Registered after grpc-js's own listener, so it runs once the trailers are submitted.
        this.stream.once('wantTrailers', () => this.resetSoon());
        // A peer that does not take the trailers (its window full) is reset by force a spell later.
        this.timer = setTimeout(() => this.stream.destroy(), this.options.timeoutMs);
        this.timer.unref();
        this.options.onIdle(event);
        return;
      }
    }
    this.resetSoon();
    this.options.onIdle(event);
  }

  /**
   * Sends RST_STREAM(NO_ERROR) after the status's frames: the client stops
   * sending and the stream is freed. On the next turn of the loop, because
   * Node writes submitted frames from an immediate of its own, queued when
   * the status was submitted: a reset submitted in the same turn can reach
   * the socket first, and the client then never sees the status (observed
   * with trailers on Node 20).
   */
  private resetSoon(): void {
    setImmediate(() => this.reset());
  }

  private reset(): void {
    if (this.stream.destroyed) return;
    // A stream HTTP/2 has closed already but whose unread data keeps it alive is destroyed instead.
    if (this.stream.closed) this.stream.destroy();
    else this.stream.close(http2.constants.NGHTTP2_NO_ERROR);
  }

  /** The status message: the flag, what arrived and what was expected. */
  private details(): string {
    const spell = `the request stopped arriving: no byte for ${this.options.timeoutMs} ms (--body-idle-timeout)`;
    if (this.framing.partial) {
      const declared = this.framing.declared === undefined ? 'whose length prefix is incomplete' : `of ${this.framing.declared + PREFIX_BYTES} bytes (length prefix included)`;
      return `${spell} after ${this.framing.received} bytes of a message ${declared}`;
    }
    return this.framing.messages === 0
      ? `${spell}; expected a request message, got none`
      : `${spell}; expected END_STREAM after the request message, got none`;
  }
}
