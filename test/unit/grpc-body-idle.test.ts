/**
 * server/grpc-body-idle.ts: MessageFraming (whether a request stream is part
 * way through a gRPC message, however its bytes are split into DATA chunks),
 * the swept list of watched calls, and a watched call's timing against a
 * stand-in HTTP/2 stream under fake timers. (The timeout against real
 * clients and servers: test/e2e/grpc-body-idle.test.ts.)
 */
import { EventEmitter } from 'node:events';
import http2 from 'node:http2';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ServerInterceptingCall, status, type ServerInterceptingCallInterface, type ServerMethodDefinition, type StatusObject } from '@grpc/grpc-js';
import { pino } from 'pino';
import {
  grpcBodyIdleInterceptor,
  grpcBodyIdleInterceptors,
  MessageFraming,
  SweptCalls,
  sweepPeriodMs,
  type BodyIdleEvent,
  type SweptCall,
} from '../../src/server/grpc-body-idle.js';

/** A gRPC message of `n` payload bytes: flag 0, 4-byte big-endian length, payload. */
function message(n: number): Buffer {
  const bytes = Buffer.alloc(5 + n, 7);
  bytes[0] = 0;
  bytes.writeUInt32BE(n, 1);
  return bytes;
}

describe('MessageFraming', () => {
  it('is not partial between whole messages, in one chunk or many', () => {
    const framing = new MessageFraming();
    framing.feed(Buffer.concat([message(3), message(0), message(300)]));
    expect(framing.partial).toBe(false);
    expect(framing.messages).toBe(3);
    const bytes = Buffer.concat([message(10), message(1)]);
    for (let i = 0; i < bytes.length; i += 1) framing.feed(bytes.subarray(i, i + 1));
    expect(framing.partial).toBe(false);
    expect(framing.messages).toBe(5);
    expect(framing.received).toBe(0);
  });

  it('is partial inside a length prefix, and says its length is undeclared', () => {
    const framing = new MessageFraming();
    framing.feed(message(1000).subarray(0, 3));
    expect(framing.partial).toBe(true);
    expect(framing.received).toBe(3);
    expect(framing.declared).toBeUndefined();
  });

  it('is partial inside a payload, with the bytes received and the length declared', () => {
    const framing = new MessageFraming();
    const bytes = Buffer.concat([message(4), message(1000)]);
    framing.feed(bytes.subarray(0, 9 + 400));
    framing.feed(bytes.subarray(9 + 400, 9 + 600));
    expect(framing.partial).toBe(true);
    expect(framing.messages).toBe(1);
    expect(framing.received).toBe(600);
    expect(framing.declared).toBe(1000);
    framing.feed(bytes.subarray(9 + 600));
    expect(framing.partial).toBe(false);
    expect(framing.messages).toBe(2);
  });

  it('reads every byte of a length prefix split across chunks (lengths past 2^24 and 2^31)', () => {
    for (const declared of [0x01020304, 0xfffffffe]) {
      const framing = new MessageFraming();
      const prefix = Buffer.alloc(5);
      prefix[0] = 1; // the compressed flag is not part of the length
      prefix.writeUInt32BE(declared, 1);
      for (let i = 0; i < 5; i += 1) framing.feed(prefix.subarray(i, i + 1));
      framing.feed(Buffer.alloc(7));
      expect(framing.partial).toBe(true);
      expect(framing.declared).toBe(declared);
      expect(framing.received).toBe(12);
    }
  });
});

describe('grpcBodyIdleInterceptor without an HTTP/2 stream to watch', () => {
  // What a later grpc-js that moves the base call's `stream` field would give the interceptor.
  const callWithoutStream = {} as ServerInterceptingCallInterface;
  const descriptor = { path: '/inference.GRPCInferenceService/ModelInfer', requestStream: false } as ServerMethodDefinition<unknown, unknown>;

  it('says so once, and passes every call through unwatched', () => {
    let unsupported = 0;
    const interceptor = grpcBodyIdleInterceptor({
      timeoutMs: 100,
      onIdle: () => expect.fail('no call is watched, so none can be ended'),
      onUnsupported: () => (unsupported += 1),
    });
    const first = interceptor(descriptor, callWithoutStream);
    const second = interceptor(descriptor, callWithoutStream);
    expect(unsupported).toBe(1);
    expect(first).toBeInstanceOf(ServerInterceptingCall);
    expect(second).toBeInstanceOf(ServerInterceptingCall);
  });

  it('is not installed at all when --body-idle-timeout is 0', () => {
    expect(grpcBodyIdleInterceptors(0, pino({ enabled: false }))).toEqual([]);
    expect(grpcBodyIdleInterceptors(1000, pino({ enabled: false }))).toHaveLength(1);
  });
});

describe('SweptCalls', () => {
  const sweptCall = (check: (call: SweptCall, now: number) => void = () => {}): SweptCall & { checks: number[] } => {
    const call: SweptCall & { checks: number[] } = {
      checks: [],
      sweptPrev: undefined,
      sweptNext: undefined,
      swept: false,
      check(now) {
        call.checks.push(now);
        check(call, now);
      },
    };
    return call;
  };

  it('lists a call once, sweeps every listed call, and stops sweeping once a sweep leaves it empty', () => {
    const swept = new SweptCalls(1000);
    const calls = [sweptCall(), sweptCall(), sweptCall()];
    for (const call of calls) swept.add(call);
    swept.add(calls[1]!);
    expect(swept.size).toBe(3);
    expect(swept.sweeping).toBe(true);
    swept.remove(calls[1]!);
    swept.remove(calls[1]!);
    expect(swept.size).toBe(2);
    swept.sweep(5);
    expect(calls.map((call) => call.checks)).toEqual([[5], [], [5]]);
    swept.remove(calls[0]!);
    swept.remove(calls[2]!);
    expect(swept.sweeping).toBe(true);
    swept.sweep(6);
    expect(swept.sweeping).toBe(false);
    expect(calls.map((call) => call.checks)).toEqual([[5], [], [5]]);
  });

  it('lets a check remove its own call in the middle of a sweep', () => {
    const swept = new SweptCalls(1000);
    const leaving = (call: SweptCall) => swept.remove(call);
    const calls = [sweptCall(leaving), sweptCall(), sweptCall(leaving), sweptCall()];
    for (const call of calls) swept.add(call);
    swept.sweep(1);
    swept.sweep(2);
    // Listed newest first; the leavers are checked once, the others on every sweep.
    expect(calls.map((call) => call.checks)).toEqual([[1], [1, 2], [1], [1, 2]]);
    expect(swept.size).toBe(2);
    for (const call of calls) swept.remove(call);
    swept.sweep(3);
    expect(swept.sweeping).toBe(false);
  });

  it('sweeps an eighth of the timeout apart, within 1 ms and 1 s', () => {
    expect([sweepPeriodMs(1), sweepPeriodMs(1000), sweepPeriodMs(30_000)]).toEqual([1, 125, 1000]);
  });
});

describe('a watched call, under fake timers', () => {
  const TIMEOUT_MS = 1000;
  const unary = { path: '/inference.GRPCInferenceService/ModelInfer', requestStream: false } as ServerMethodDefinition<unknown, unknown>;
  const bidi = { path: '/inference.GRPCInferenceService/ModelStreamInfer', requestStream: true } as ServerMethodDefinition<unknown, unknown>;

  /** The parts of a ServerHttp2Stream the watch reads, and of grpc-js's base call it uses. */
  class StandInStream extends EventEmitter {
    rstCode: number | undefined = undefined;
    readableFlowing: boolean | null = true;
    readableEnded = false;
    writableEnded = false;
    headersSent = false;
    destroyed = false;
    closed = false;
    closedWith: number | undefined;
    close(code: number): void {
      this.closedWith = code;
      this.closed = true;
      this.emit('close');
    }
    destroy(): void {
      this.destroyed = true;
    }
  }

  const watched = (descriptor = unary) => {
    const stream = new StandInStream();
    const statuses: Partial<StatusObject>[] = [];
    const events: BodyIdleEvent[] = [];
    const base = {
      stream,
      // As grpc-js's base call: every status ends the stream's writable side.
      sendStatus: (sent: Partial<StatusObject>) => {
        statuses.push(sent);
        stream.writableEnded = true;
      },
      getPeer: () => 'ipv4:10.0.0.1:5000',
    };
    const interceptor = grpcBodyIdleInterceptor({
      timeoutMs: TIMEOUT_MS,
      onIdle: (event) => events.push(event),
      onUnsupported: () => expect.fail('the stand-in stream is watchable'),
    });
    const call = interceptor(descriptor, base as unknown as ServerInterceptingCallInterface);
    return { stream, statuses, events, call };
  };

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends a unary message that stops half way at the first sweep after the timeout, not before', () => {
    const { stream, statuses, events } = watched();
    vi.advanceTimersByTime(300);
    stream.emit('data', message(100).subarray(0, 40));
    vi.advanceTimersByTime(TIMEOUT_MS - 1);
    expect(statuses).toEqual([]);
    vi.advanceTimersByTime(sweepPeriodMs(TIMEOUT_MS));
    expect(statuses).toHaveLength(1);
    expect(statuses[0]!.code).toBe(status.DEADLINE_EXCEEDED);
    expect(statuses[0]!.details).toMatch(/no byte for 1000 ms \(--body-idle-timeout\) after 40 bytes of a message of 105 bytes/);
    expect(events).toEqual([{ path: unary.path, peer: 'ipv4:10.0.0.1:5000', reason: 'message', receivedBytes: 40, declaredBytes: 100 }]);
    // Then RST_STREAM(NO_ERROR) (on the next turn, which the fake clock has run).
    expect(stream.closedWith).toBe(http2.constants.NGHTTP2_NO_ERROR);
    vi.advanceTimersByTime(10 * TIMEOUT_MS);
    expect(statuses).toHaveLength(1);
  });

  it('lets a request stream wait between whole messages, but not inside one', () => {
    const { stream, statuses, events } = watched(bidi);
    stream.emit('data', Buffer.concat([message(8), message(8)]));
    vi.advanceTimersByTime(10 * TIMEOUT_MS);
    expect(statuses).toEqual([]);
    stream.emit('data', message(8).subarray(0, 3));
    vi.advanceTimersByTime(TIMEOUT_MS + sweepPeriodMs(TIMEOUT_MS));
    expect(statuses.map((sent) => sent.code)).toEqual([status.DEADLINE_EXCEEDED]);
    expect(events).toMatchObject([{ reason: 'message', receivedBytes: 3, declaredBytes: undefined }]);
  });

  it('does not count a spell in which the server is not reading', () => {
    const { stream, statuses } = watched();
    stream.emit('data', message(100).subarray(0, 10));
    stream.readableFlowing = false;
    vi.advanceTimersByTime(5 * TIMEOUT_MS);
    expect(statuses).toEqual([]);
    stream.readableFlowing = true;
    vi.advanceTimersByTime(TIMEOUT_MS + sweepPeriodMs(TIMEOUT_MS));
    expect(statuses.map((sent) => sent.code)).toEqual([status.DEADLINE_EXCEEDED]);
  });

  it('hands grpc-js its call unwrapped, leaves the call alone once its request is whole, and stops sweeping when its stream closes', () => {
    const { stream, statuses, call } = watched();
    expect(call).not.toBeInstanceOf(ServerInterceptingCall);
    stream.emit('data', message(100));
    stream.readableEnded = true;
    stream.emit('end');
    call.sendStatus({ code: status.OK, details: '', metadata: undefined as never });
    vi.advanceTimersByTime(10 * TIMEOUT_MS);
    expect(vi.getTimerCount()).toBe(1);
    stream.emit('close');
    vi.advanceTimersByTime(10 * TIMEOUT_MS);
    expect(statuses.map((sent) => sent.code)).toEqual([status.OK]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resets a call answered early whose client keeps its half open, a timeout after the status (within two sweeps)', () => {
    const { stream, statuses, events, call } = watched();
    call.sendStatus({ code: status.UNAUTHENTICATED, details: 'no key', metadata: undefined as never });
    vi.advanceTimersByTime(TIMEOUT_MS - 1);
    expect(stream.closedWith).toBeUndefined();
    vi.advanceTimersByTime(2 * sweepPeriodMs(TIMEOUT_MS) + 1);
    expect(stream.closedWith).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(statuses.map((sent) => sent.code)).toEqual([status.UNAUTHENTICATED]);
    expect(events.map((event) => event.reason)).toEqual(['after-status']);
  });
});
