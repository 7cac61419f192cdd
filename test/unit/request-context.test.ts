import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { AccessLog } from '../../src/observability/access-log.js';
import { EventEmitter } from 'node:events';
import { generatedRequestId, parseTraceparent, requestContextFrom, trailersFor, watchCancellation } from '../../src/server/request-context.js';

describe('request context', () => {
  it('takes x-request-id and the W3C trace id', () => {
    const metadata = new Metadata();
    metadata.set('x-request-id', 'abc-123');
    metadata.set('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(requestContextFrom(metadata)).toEqual({ requestId: 'abc-123', traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
  });

  it('generates a request id when none (or an unusable one) is given', () => {
    const metadata = new Metadata();
    metadata.set('x-request-id', 'has spaces and is way too long '.repeat(10));
    const context = requestContextFrom(metadata);
    expect(context.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(context.traceId).toBeUndefined();
  });

  it('generates distinct version-8 UUIDs: a random part fixed per thread, then a counter', () => {
    const ids = Array.from({ length: 5000 }, generatedRequestId);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(0, 24))).size).toBe(1);
    const counters = ids.map((id) => Number.parseInt(id.slice(24), 16));
    expect(counters.every((counter, i) => i === 0 || counter === counters[i - 1]! + 1)).toBe(true);
  });

  it("ends calls with trailers that hold the request id as Metadata.set would, given or generated", () => {
    for (const given of ['abc-123', undefined]) {
      const metadata = new Metadata();
      if (given !== undefined) metadata.set('x-request-id', given);
      const context = requestContextFrom(metadata);
      const trailers = trailersFor(context);
      const checked = new Metadata();
      checked.set('x-request-id', context.requestId);
      expect(trailers).toBeInstanceOf(Metadata);
      expect(trailers.toHttp2Headers()).toEqual(checked.toHttp2Headers());
      expect(trailers.get('X-Request-Id')).toEqual([context.requestId]);
      // grpc-js copies and merges trailers: both go through Metadata's own methods.
      const merged = trailers.clone();
      merged.merge(checked);
      expect(merged.getMap()).toEqual({ 'x-request-id': context.requestId });
    }
  });

  it('refuses malformed traceparents', () => {
    for (const bad of [
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });
});

describe('access log sampling', () => {
  const capture = (rate: number, random: () => number) => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    return { log: new AccessLog(pino({ base: { service: 'hotpath' } }, sink), rate, random), lines };
  };
  const entry = { requestId: 'r', traceId: undefined, method: 'ModelInfer', model: 'm', modelVersion: '1', tenant: 'default', latencyMs: 1.5 };

  it('keeps every error and samples successes', async () => {
    const { log, lines } = capture(0.25, () => 0.5);
    log.record({ ...entry, code: 0 });
    log.record({ ...entry, code: 3, error: 'bad input' });
    log.record({ ...entry, code: 13, error: 'boom' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => [l['status'], l['level'], l['error']])).toEqual([
      ['INVALID_ARGUMENT', 40, 'bad input'],
      ['INTERNAL', 50, 'boom'],
    ]);
    const sampled = capture(0.25, () => 0.1);
    sampled.log.record({ ...entry, code: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sampled.lines[0]).toMatchObject({ component: 'access', status: 'OK', request_id: 'r', latency_ms: 1.5 });
  });
});

describe('watchCancellation', () => {
  // grpc-js calls are EventEmitters that emit 'cancelled'; a plain one stands in for the call here.
  const callWith = (deadline: Date | number) => Object.assign(new EventEmitter(), { getDeadline: () => deadline });

  it('records when the client cancelled the call', () => {
    const call = callWith(Infinity);
    const cancelledAt = watchCancellation(call);
    expect(cancelledAt()).toBeUndefined();
    const before = performance.timeOrigin + performance.now();
    call.emit('cancelled');
    expect(cancelledAt()).toBeGreaterThanOrEqual(before);
    expect(cancelledAt()).toBeLessThanOrEqual(performance.timeOrigin + performance.now());
  });

  it('does not count a call ended by its deadline as cancelled by the client', () => {
    const call = callWith(new Date(Date.now() - 1));
    const cancelledAt = watchCancellation(call);
    call.emit('cancelled');
    expect(cancelledAt()).toBeUndefined();
  });
});
