/**
 * `hotpath perf -i http`'s HTTP/1.1 pool against a scripted socket server:
 * answers with Content-Length, chunked coding (split across writes) and
 * `Connection: close` all end their request once; a non-200 answer is a
 * failure described by its status and body; the pool opens one connection
 * per request in flight and reuses them after.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamOutcome } from '../../src/perf/h2-raw-session.js';
import { Http1Pool, http1Request } from '../../src/perf/http1-pool.js';

let server: net.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that answers each request (one per `\r\n\r\n`+body) with the next scripted reply. */
async function scripted(replies: ((socket: net.Socket) => void)[]): Promise<{ address: string; connections: () => number }> {
  let next = 0;
  let connections = 0;
  server = net.createServer((socket) => {
    connections += 1;
    let seen = '';
    socket.on('data', (chunk) => {
      seen += chunk.toString('latin1');
      // The request is fixed-size here: head plus the 4-byte body.
      while (seen.includes('\r\n\r\n') && seen.length >= seen.indexOf('\r\n\r\n') + 4 + 4) {
        seen = seen.slice(seen.indexOf('\r\n\r\n') + 8);
        replies[next++ % replies.length]!(socket);
      }
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${(server!.address() as net.AddressInfo).port}`, connections: () => connections };
}

const send = (pool: Http1Pool) => new Promise<StreamOutcome>((resolve) => pool.request(resolve, true));

describe('Http1Pool', () => {
  it('ends answers by Content-Length, chunked coding and Connection: close; describes a failure', async () => {
    const { address } = await scripted([
      (s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'),
      (s) => {
        s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r');
        setTimeout(() => s.write('\n2;x=1\r\nde\r\n0\r\n\r\n'), 20);
      },
      (s) => s.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 15\r\nconnection: close\r\n\r\n{"error":"bad"}'),
      (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'),
    ]);
    const request = http1Request(address, '/v2/models/m/infer', { authorization: 'Bearer k' }, Buffer.from('data'), 2);
    expect(request.toString('latin1')).toMatch(/^POST \/v2\/models\/m\/infer HTTP\/1\.1\r\nhost: 127\.0\.0\.1:\d+\r\ncontent-type: application\/octet-stream\r\ninference-header-content-length: 2\r\ncontent-length: 4\r\nauthorization: Bearer k\r\n\r\ndata$/);
    const pool = await Http1Pool.open(address, request, 1);
    try {
      const first = await send(pool);
      expect([first.ok, first.body?.toString()]).toEqual([true, 'ok']);
      const second = await send(pool);
      expect([second.ok, second.body?.toString()]).toEqual([true, 'abcde']);
      const third = await send(pool);
      expect([third.ok, third.description]).toEqual([false, 'HTTP 400: {"error":"bad"}']);
      // The server closed that connection: the pool opens another for the next request.
      const fourth = await send(pool);
      expect(fourth.ok).toBe(true);
    } finally {
      pool.close();
    }
  });

  it('opens one connection per request in flight, then reuses them', async () => {
    const { address, connections } = await scripted([(s) => setTimeout(() => s.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'), 30)]);
    const pool = await Http1Pool.open(address, http1Request(address, '/x', {}, Buffer.from('data'), 4), 1);
    try {
      const outcomes = await Promise.all(Array.from({ length: 5 }, () => send(pool)));
      expect(outcomes.every((o) => o.ok)).toBe(true);
      expect(connections()).toBe(5);
      await Promise.all(Array.from({ length: 5 }, () => send(pool)));
      expect(connections()).toBe(5);
    } finally {
      pool.close();
    }
  });
});
