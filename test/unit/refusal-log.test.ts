/**
 * RefusalLog: a burst of lines per key, then about one a second, every line
 * with the running total and what it left out; a flood that stops is summed
 * up by one line a refill later.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RefusalLog } from '../../src/observability/refusal-log.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { lines, logger };
}

describe('RefusalLog', () => {
  it('writes a burst, then one line per refill carrying what it left out', () => {
    const { lines, logger } = capture();
    let now = 0;
    const log = new RefusalLog(logger, { burst: 3, perSecond: 1, now: () => now });
    for (let i = 0; i < 10; i += 1) log.refused('grpc:unauthenticated', { peer: 'p' }, 'call refused');
    expect(lines.map((l) => [l['total'], l['suppressed']])).toEqual([[1, undefined], [2, undefined], [3, undefined]]);
    now = 1000;
    log.refused('grpc:unauthenticated', { peer: 'p' }, 'call refused');
    expect(lines.at(-1)).toMatchObject({ refusal: 'grpc:unauthenticated', total: 11, suppressed: 7, msg: 'call refused' });
    log.refused('http:unauthenticated', {}, 'call refused');
    expect(lines.at(-1)).toMatchObject({ refusal: 'http:unauthenticated', total: 1 });
    expect(log.total('grpc:unauthenticated')).toBe(11);
  });

  it('sums up a flood that stopped, one refill later', async () => {
    const { lines, logger } = capture();
    const log = new RefusalLog(logger, { burst: 1, perSecond: 20 });
    for (let i = 0; i < 5; i += 1) log.refused('http:connection_per_peer', { peer: 'p' }, 'connection refused');
    expect(lines.length).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(lines.at(-1)).toMatchObject({ total: 5, suppressed: 4 });
  });
});
