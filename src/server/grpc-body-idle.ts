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
 * alone, and a sent status on the stream too: grpc-js ends the stream's
 * writable side with every status (`end()` after a message, or a
 * trailers-only `respond(..., {endStream: true})`), so `writableEnded` says
 * the call was answered, and the interceptor needs no call layer of its own
 * (it hands grpc-js's call on unwrapped: a ServerInterceptingCall per call
 * and a hop in every one of its methods saved). This interceptor must be the
 * first of the Server's interceptors:
 * the first one is given grpc-js's BaseServerInterceptingCall, which holds
 * the call's ServerHttp2Stream as `stream` (grpc-js 1.14's
 * server-interceptors.ts; not a public field). If a later grpc-js moves it,
 * `streamOf` finds nothing, the gRPC door runs without the limit, and
 * `onUnsupported` says so once (test/e2e/grpc-body-idle.test.ts fails).
 *
 * No timer per call: every watched call is on a list (SweptCalls, one per
 * interceptor) from its headers until its stream closes, and one interval,
 * running only while the list is not empty, sweeps it every eighth of the
 * timeout (at most every second). A chunk only stamps the time; joining and
 * leaving the list are a few field writes. Why: every unary call owes its
 * message from its headers on, so a timer per call was a setTimeout and a
 * clearTimeout on every request, about 0.6 µs of the main thread's time in
 * the server's --cpu-prof (issue 19). The price is granularity: a quiet spell
 * is ended at the first sweep after it reaches the timeout, so within
 * timeout + timeout/8 (+ 1 s at most); a status is seen by the first sweep
 * after it, so the spell after a status runs from that sweep.
 * The door's thread only (main or a door thread); plain fields.
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
  /** Prefix bytes of the current message seen so far (0-4). */
  private prefixHave = 0;
  /** The length read from the prefix so far (its bytes 1-4, big-endian); a number, not a Buffer per call. */
  private lengthSoFar = 0;
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
      // A prefix byte: byte 0 is the compressed flag, bytes 1-4 the length.
      const byte = chunk[at]!;
      at += 1;
      this.received += 1;
      if (this.prefixHave > 0) this.lengthSoFar = this.lengthSoFar * 256 + byte;
      this.prefixHave += 1;
      if (this.prefixHave < PREFIX_BYTES) continue;
      this.declared = this.lengthSoFar;
      this.prefixHave = 0;
      this.lengthSoFar = 0;
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
  const swept = new SweptCalls(sweepPeriodMs(options.timeoutMs));
  return (descriptor: ServerMethodDefinition<unknown, unknown>, call: ServerInterceptingCallInterface) => {
    const stream = streamOf(call);
    if (stream === undefined) {
      if (!warned) options.onUnsupported();
      warned = true;
      return new ServerInterceptingCall(call);
    }
    // The watch lives on the stream's listeners and the swept list; the call goes on as it is.
    new BodyIdleWatch(stream, call, descriptor, options, swept);
    // grpc-js types an interceptor's result as its ServerInterceptingCall class, but it only
    // chains interceptors through the interface (getServerInterceptingCall reduces over them,
    // starting from the base call itself), so the base call may stand for itself.
    return call as ServerInterceptingCall;
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

/** How often the watched calls are swept for `timeoutMs`: an eighth of it, within [1 ms, 1 s]. */
export function sweepPeriodMs(timeoutMs: number): number {
  return Math.min(1000, Math.max(1, Math.floor(timeoutMs / 8)));
}

/** What SweptCalls holds: a watch that knows whether its time is up, and its own links. */
export interface SweptCall {
  /** Called by a sweep at time `now` (performance.now()); may leave the list. */
  check(now: number): void;
  /** The list's links; only SweptCalls writes them. */
  sweptPrev: SweptCall | undefined;
  sweptNext: SweptCall | undefined;
  swept: boolean;
}

/**
 * The watched calls, as an intrusive doubly linked list (the links live on
 * the calls: joining and leaving allocate nothing and hash nothing; a Set
 * measured slower than the timers it replaces), swept by one unref'd interval
 * that runs only while the list is not empty. The door's thread only.
 */
export class SweptCalls {
  private head: SweptCall | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private count = 0;

  constructor(private readonly periodMs: number) {}

  /** Calls listed now. */
  get size(): number {
    return this.count;
  }

  /** Whether the sweep interval is running (it stops when the list empties). */
  get sweeping(): boolean {
    return this.sweeper !== undefined;
  }

  add(call: SweptCall): void {
    if (call.swept) return;
    call.swept = true;
    call.sweptPrev = undefined;
    call.sweptNext = this.head;
    if (this.head !== undefined) this.head.sweptPrev = call;
    this.head = call;
    this.count += 1;
    if (this.sweeper === undefined) {
      this.sweeper = setInterval(() => this.sweep(performance.now()), this.periodMs);
      // A quiet stream must not keep the process alive on its own.
      this.sweeper.unref();
    }
  }

  remove(call: SweptCall): void {
    if (!call.swept) return;
    call.swept = false;
    if (call.sweptPrev !== undefined) call.sweptPrev.sweptNext = call.sweptNext;
    else this.head = call.sweptNext;
    if (call.sweptNext !== undefined) call.sweptNext.sweptPrev = call.sweptPrev;
    call.sweptPrev = undefined;
    call.sweptNext = undefined;
    this.count -= 1;
  }

  /** Checks every listed call at `now`; a check may remove its own call (the next one is taken first). */
  sweep(now: number): void {
    for (let call = this.head; call !== undefined; ) {
      const next = call.sweptNext;
      call.check(now);
      call = next;
    }
    if (this.count === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}

/** One call's watch, from its headers until its stream closes (on the swept list all that time). */
class BodyIdleWatch implements SweptCall {
  private readonly framing = new MessageFraming();
  /** When a sweep first saw the call answered (its status sent); undefined before. */
  private answeredAt: number | undefined;
  private lastByteAt = performance.now();
  private closed = false;
  /** This watch ended the call (its status sent): it owes nothing more to watch. */
  private ending = false;
  sweptPrev: SweptCall | undefined = undefined;
  sweptNext: SweptCall | undefined = undefined;
  swept = false;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly call: ServerInterceptingCallInterface,
    private readonly descriptor: ServerMethodDefinition<unknown, unknown>,
    private readonly options: GrpcBodyIdleOptions,
    private readonly sweptCalls: SweptCalls,
  ) {
    // Added after grpc-js's own 'data' listener, to a stream grpc-js has paused: this does not start the flow.
    stream.on('data', (chunk: Buffer) => {
      this.lastByteAt = performance.now();
      this.framing.feed(chunk);
    });
    // `on`, not `once` (no wrapper per call): a stream emits it once.
    stream.on('close', () => {
      this.closed = true;
      this.sweptCalls.remove(this);
    });
    sweptCalls.add(this);
  }

  /**
   * A sweep's look at this call, by the rules in the file comment: ends it once
   * a quiet spell in which bytes were owed reached the timeout.
   */
  check(now: number): void {
    if (this.closed || this.ending) {
      this.sweptCalls.remove(this);
      return;
    }
    // END_STREAM seen: the client owes nothing more (grpc-js's onReceiveHalfClose comes from the same 'end').
    const requestEnded = this.stream.readableEnded;
    if (this.stream.writableEnded) {
      // Answered: the spell runs from the status (as first seen), whatever arrives; only END_STREAM or a reset is owed.
      this.answeredAt ??= now;
      if (!requestEnded && now - this.answeredAt >= this.options.timeoutMs) this.end('after-status');
      return;
    }
    // Unary and server-streaming calls owe their message and END_STREAM; streams only a message begun.
    const owed = this.descriptor.requestStream ? this.framing.partial : !requestEnded;
    if (!owed) return;
    // The server is not reading (backpressure): the client is not the one keeping the bytes back.
    if (this.stream.readableFlowing !== true) this.lastByteAt = now;
    if (now - this.lastByteAt >= this.options.timeoutMs) this.end('message');
  }

  private end(reason: BodyIdleEvent['reason']): void {
    this.ending = true;
    this.sweptCalls.remove(this);
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
        // A peer that does not take the trailers (its window full) is reset by force a spell later
        // (a timer of its own: this is rare, and the watch has left the swept list).
        const force = setTimeout(() => this.stream.destroy(), this.options.timeoutMs).unref();
        // Not kept past the stream's end: the timer would hold the stream and its buffers for the whole spell.
        this.stream.once('close', () => clearTimeout(force));
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
