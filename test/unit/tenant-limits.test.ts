/**
 * The per-tenant admission limits (src/security/tenant-limits.ts): the token
 * bucket refills with a fake clock, the in-flight cap holds and frees, and
 * refusals carry the right status, the limit named and a metric callback.
 */
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { httpStatusOf } from '../../src/common/error-kinds.js';
import { classifyError, toServiceError } from '../../src/common/serving-error.js';
import { TenantLimiter, TenantLimitError, type TenantLimitReason } from '../../src/security/tenant-limits.js';
import { fakeClock, refusal } from '../helpers/tenant-limits.js';

describe('token bucket', () => {
  it('starts full, takes one token a request, and refuses when empty', () => {
    const clock = fakeClock();
    const limiter = new TenantLimiter([{ tenant: 'ads', rate: 2, burst: 3 }], { now: clock.now });
    for (let i = 0; i < 3; i += 1) limiter.admit('ads')();
    const refused = refusal(() => limiter.admit('ads'));
    expect(refused.reason).toBe('rate');
    expect(refused.tenant).toBe('ads');
    expect(refused.message).toBe(
      "tenant 'ads' is over its request rate limit (rate 2 requests/s, burst 3 in the tenants file): " +
        'no request left in the bucket; the next is allowed in 500 ms',
    );
  });

  it('refills at the rate, continuously, up to the burst', () => {
    const clock = fakeClock();
    const limiter = new TenantLimiter([{ tenant: 'ads', rate: 4, burst: 2 }], { now: clock.now });
    limiter.admit('ads');
    limiter.admit('ads');
    expect(limiter.tokens('ads')).toBe(0);
    clock.advance(125); // half a token at 4/s
    expect(refusal(() => limiter.admit('ads')).message).toMatch(/the next is allowed in 125 ms$/);
    clock.advance(125);
    expect(() => limiter.admit('ads')).not.toThrow();
    expect(limiter.tokens('ads')).toBe(0);
    // A long idle period refills to the burst, not beyond.
    clock.advance(60_000);
    expect(limiter.tokens('ads')).toBe(2);
    limiter.admit('ads');
    limiter.admit('ads');
    expect(refusal(() => limiter.admit('ads')).reason).toBe('rate');
  });

  it('lets a sustained rate at the limit through, and refuses what is above it', () => {
    const clock = fakeClock();
    const limiter = new TenantLimiter([{ tenant: 'ads', rate: 10, burst: 1 }], { now: clock.now });
    let admitted = 0;
    let refused = 0;
    // 20 requests a second for 10 s: exactly the 10/s get through.
    for (let i = 0; i < 200; i += 1) {
      try {
        limiter.admit('ads')();
        admitted += 1;
      } catch {
        refused += 1;
      }
      clock.advance(50);
    }
    expect(admitted).toBe(100);
    expect(refused).toBe(100);
  });

  it('defaults the burst to max(1, ceil(rate))', () => {
    const clock = fakeClock();
    const fractional = new TenantLimiter([{ tenant: 'slow', rate: 0.5 }, { tenant: 'fast', rate: 2.5 }], { now: clock.now });
    expect(fractional.tokens('slow')).toBe(1);
    expect(fractional.tokens('fast')).toBe(3);
    fractional.admit('slow');
    const refused = refusal(() => fractional.admit('slow'));
    expect(refused.message).toMatch(/rate 0\.5 requests\/s, burst 1 in the tenants file\): no request left in the bucket; the next is allowed in 2000 ms$/);
  });

  it('never takes tokens away when the clock steps back', () => {
    const clock = fakeClock();
    const limiter = new TenantLimiter([{ tenant: 'ads', rate: 1, burst: 1 }], { now: clock.now });
    limiter.admit('ads');
    clock.advance(-5000);
    clock.advance(5000 + 1000);
    expect(limiter.tokens('ads')).toBe(1);
  });
});

describe('in-flight cap', () => {
  it('admits up to max_inflight at once and frees a place when a request is answered', () => {
    const limiter = new TenantLimiter([{ tenant: 'fraud', maxInflight: 2 }]);
    const first = limiter.admit('fraud');
    const second = limiter.admit('fraud');
    expect(limiter.inflight('fraud')).toBe(2);
    const refused = refusal(() => limiter.admit('fraud'));
    expect(refused.reason).toBe('inflight');
    expect(refused.message).toBe(
      "tenant 'fraud' is over its in-flight limit (max_inflight 2 in the tenants file): " +
        '2 of its requests are already in flight; retry when one is answered',
    );
    first();
    first(); // a second release of the same request frees nothing more
    expect(limiter.inflight('fraud')).toBe(1);
    const third = limiter.admit('fraud');
    expect(() => limiter.admit('fraud')).toThrow(TenantLimitError);
    second();
    third();
    expect(limiter.inflight('fraud')).toBe(0);
  });

  it('takes no token for a request refused for its in-flight cap', () => {
    const clock = fakeClock();
    const limiter = new TenantLimiter([{ tenant: 'ads', rate: 1, burst: 2, maxInflight: 1 }], { now: clock.now });
    const held = limiter.admit('ads');
    expect(refusal(() => limiter.admit('ads')).reason).toBe('inflight');
    expect(limiter.tokens('ads')).toBe(1);
    held();
    limiter.admit('ads')();
    expect(refusal(() => limiter.admit('ads')).reason).toBe('rate');
  });
});

describe('tenants', () => {
  it('keeps each tenant apart, and never refuses a tenant without limits', () => {
    const clock = fakeClock();
    const limiter = new TenantLimiter([{ tenant: 'ads', rate: 1, burst: 1, maxInflight: 1 }], { now: clock.now });
    limiter.admit('ads');
    expect(() => limiter.admit('ads')).toThrow(TenantLimitError);
    for (let i = 0; i < 10_000; i += 1) limiter.admit('fraud');
    expect(limiter.inflight('fraud')).toBe(0);
    expect(limiter.tokens('fraud')).toBeUndefined();
    expect(limiter.active).toBe(true);
    expect(new TenantLimiter([]).active).toBe(false);
  });

  it('reports every refusal, with its tenant and reason', () => {
    const clock = fakeClock();
    const seen: [string, TenantLimitReason][] = [];
    const limiter = new TenantLimiter(
      [{ tenant: 'ads', rate: 1, burst: 1 }, { tenant: 'fraud', maxInflight: 1 }],
      { now: clock.now, onRejected: (tenant, reason) => seen.push([tenant, reason]) },
    );
    limiter.admit('ads');
    limiter.admit('fraud');
    for (let i = 0; i < 2; i += 1) {
      expect(() => limiter.admit('ads')).toThrow();
      expect(() => limiter.admit('fraud')).toThrow();
    }
    expect(seen).toEqual([['ads', 'rate'], ['fraud', 'inflight'], ['ads', 'rate'], ['fraud', 'inflight']]);
  });

  it('answers RESOURCE_EXHAUSTED (HTTP 429), counted as a REJECTED failure', () => {
    const limiter = new TenantLimiter([{ tenant: 'fraud', maxInflight: 1 }]);
    limiter.admit('fraud');
    const refused = refusal(() => limiter.admit('fraud'));
    expect(classifyError(refused).kind).toBe('rate_limited');
    expect(toServiceError(refused).code).toBe(status.RESOURCE_EXHAUSTED);
    expect(httpStatusOf('rate_limited')).toBe(429);
  });

  it('bounds a hostile tenant name in its message', () => {
    const name = `t${'x'.repeat(5000)}\n`;
    const limiter = new TenantLimiter([{ tenant: name, maxInflight: 1 }]);
    limiter.admit(name);
    const message = refusal(() => limiter.admit(name)).message;
    expect(message.length).toBeLessThan(600);
    expect(message).not.toContain('\n');
  });

  it('refuses malformed limits, naming the tenant and the field', () => {
    expect(() => new TenantLimiter([{ tenant: 'ads', rate: 0 }])).toThrow(/tenant 'ads': 'rate': expected requests per second, a number > 0, got 0/);
    expect(() => new TenantLimiter([{ tenant: 'ads', rate: 1, burst: 1.5 }])).toThrow(/tenant 'ads': 'burst': expected an integer >= 1, got 1\.5/);
    expect(() => new TenantLimiter([{ tenant: 'ads', maxInflight: 0 }])).toThrow(/tenant 'ads': 'max_inflight': expected an integer >= 1, got 0/);
    expect(() => new TenantLimiter([{ tenant: 'ads', burst: 3 }])).toThrow(/'burst': expected together with 'rate'/);
    expect(() => new TenantLimiter([{ tenant: 'ads', rate: 1 }, { tenant: 'ads', maxInflight: 1 }])).toThrow(/tenant 'ads' is given more than once/);
  });
});
