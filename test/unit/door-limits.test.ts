/**
 * The doors' connection caps derive from the descriptor limit: a quarter (at
 * least 128) kept back, a quarter of the rest per peer; explicit flags win.
 */
import { describe, expect, it } from 'vitest';
import { connectionCaps, descriptorLimit } from '../../src/security/door-limits.js';
import { doorLimits } from '../../src/security/door-limit-options.js';

const limits = (soft: string) =>
  `Limit                     Soft Limit           Hard Limit           Units     \nMax open files            ${soft}                 4096                 files     \n`;

describe('door limits', () => {
  it('reads the soft RLIMIT_NOFILE from /proc/self/limits text', () => {
    expect(descriptorLimit(limits('1024'))).toBe(1024);
    expect(descriptorLimit(limits('unlimited'))).toBe(Number.MAX_SAFE_INTEGER);
    expect(descriptorLimit('nothing here')).toBe(1024);
    expect(descriptorLimit()).toBeGreaterThan(0);
  });

  it('derives the caps, and takes explicit ones', () => {
    expect(connectionCaps({}, 1024)).toEqual({ total: 768, perPeer: 192 });
    expect(connectionCaps({}, 256)).toEqual({ total: 128, perPeer: 32 });
    expect(connectionCaps({}, 65536)).toEqual({ total: 49152, perPeer: 12288 });
    expect(connectionCaps({ maxConnections: 100 }, 1024)).toEqual({ total: 100, perPeer: 25 });
    expect(connectionCaps({ maxConnections: 100, maxConnectionsPerPeer: 500 }, 1024)).toEqual({ total: 100, perPeer: 100 });
  });

  it('parses the flags with one message format', () => {
    expect(doorLimits({ 'http-body-budget': '256MiB', 'max-connections': '10', 'header-timeout': '2000' })).toMatchObject({
      httpBodyBudgetBytes: 256 * 1024 * 1024,
      maxConnections: 10,
      headerTimeoutMs: 2000,
    });
    expect(() => doorLimits({ 'http-json-queue': '0' })).toThrow(/^--http-json-queue/);
  });
});
