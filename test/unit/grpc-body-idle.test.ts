/**
 * server/grpc-body-idle.ts's MessageFraming: whether a request stream is part
 * way through a gRPC message, however its bytes are split into DATA chunks.
 * (The timeout itself is tested end to end: test/e2e/grpc-body-idle.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { ServerInterceptingCall, type ServerInterceptingCallInterface, type ServerMethodDefinition } from '@grpc/grpc-js';
import { pino } from 'pino';
import { grpcBodyIdleInterceptor, grpcBodyIdleInterceptors, MessageFraming } from '../../src/server/grpc-body-idle.js';

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
