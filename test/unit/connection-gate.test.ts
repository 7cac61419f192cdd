/**
 * ConnectionGate.reserve (server/connection-gate.ts): the front-door
 * acceptor counts a connection on the main thread and frees its slot when the
 * door thread that took it posts the close. The caps hold across doors, a
 * release frees exactly one slot however often it is called, and a refusal is
 * logged naming the flag.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RefusalLog } from '../../src/observability/refusal-log.js';
import { ConnectionGate } from '../../src/server/connection-gate.js';

function gate(total: number, perPeer: number) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { gate: new ConnectionGate({ total, perPeer }, new RefusalLog(logger)), lines };
}

describe('ConnectionGate.reserve', () => {
  it('holds the per-peer cap across doors and frees a slot once per release', () => {
    const { gate: g, lines } = gate(10, 2);
    const first = g.reserve('10.0.0.1', 'grpc');
    const second = g.reserve('::ffff:10.0.0.1', 'http');
    expect(first).toBeTypeOf('function');
    expect(second).toBeTypeOf('function');
    expect(g.openFrom('10.0.0.1')).toBe(2);
    expect(g.reserve('10.0.0.1', 'grpc')).toBeUndefined();
    expect(lines.at(-1)).toMatchObject({ flag: '--max-connections-per-peer', peer: '10.0.0.1', door: 'grpc' });
    first!();
    first!();
    expect(g.openFrom('10.0.0.1')).toBe(1);
    expect(g.openConnections).toBe(1);
    expect(g.reserve('10.0.0.1', 'grpc')).toBeTypeOf('function');
  });

  it('holds the total cap', () => {
    const { gate: g, lines } = gate(2, 2);
    expect(g.reserve('10.0.0.1', 'grpc')).toBeTypeOf('function');
    expect(g.reserve('10.0.0.2', 'grpc')).toBeTypeOf('function');
    expect(g.reserve('10.0.0.3', 'http')).toBeUndefined();
    expect(lines.at(-1)).toMatchObject({ flag: '--max-connections', open: 2, cap: 2 });
  });
});
