/**
 * Issue 21 item 4: connection caps and timeouts on both doors, with the
 * defaults alone. The server runs with a 1024-descriptor limit, from which it
 * derives its caps (768 connections, 192 per peer). 1000 slowloris
 * connections from one peer (127.0.0.1; one header byte a second, half to the
 * HTTP port, half to the gRPC port) cannot starve another peer (127.0.0.2):
 * its HTTP and gRPC requests all succeed. The slow connections beyond the
 * per-peer cap are closed at once, and the rest by the header timeout.
 *
 * Real server process under prlimit(1), raw sockets, node:http and node:http2
 * clients bound to the second loopback address.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

const OTHER_PEER = '127.0.0.2';
let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository((dir) => writeIdentityModel(dir, { name: 'identity', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] })),
    [],
    { descriptorLimit: 1024 },
  );
});

afterAll(() => served?.close());

/** A slowloris connection: a request line trickled one byte a second; resolves when the server closes it. */
function slowConnection(port: number, opening: string): { closed: Promise<number>; socket: net.Socket } {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  const started = performance.now();
  let sent = 0;
  const timer = setInterval(() => {
    if (sent < opening.length && !socket.destroyed) socket.write(opening[sent++]!);
  }, 1000);
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer);
      resolve(performance.now() - started);
    }),
  );
  return { closed, socket };
}

function httpFromOtherPeer(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: served.server.httpPort, path, localAddress: OTHER_PEER, agent: false }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

/** ServerLive over gRPC (an empty request message) from the other peer; resolves with grpc-status. */
function grpcFromOtherPeer(): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${served.server.grpcPort}`, {
      createConnection: () => net.connect({ host: '127.0.0.1', port: served.server.grpcPort, localAddress: OTHER_PEER }),
    });
    session.on('error', reject);
    const stream = session.request({ ':method': 'POST', ':path': '/inference.GRPCInferenceService/ServerLive', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', reject);
    stream.resume();
    stream.on('trailers', (trailers) => {
      resolve(String(trailers['grpc-status']));
      session.close();
    });
    stream.end(Buffer.alloc(5));
  });
}

describe('connection caps with a 1024-descriptor limit (defaults only)', () => {
  it('derives its caps from RLIMIT_NOFILE and logs them', () => {
    const listening = served.server.logs.find((line) => line['msg'] === 'listening')!;
    expect(listening).toMatchObject({ max_connections: 768, max_connections_per_peer: 192 });
  });

  it('1000 slow connections from one peer: requests from another peer 100% succeed; the slow ones are closed', async () => {
    const slow = Array.from({ length: 1000 }, (_, i) =>
      i % 2 === 0
        ? slowConnection(served.server.httpPort, 'GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n')
        : slowConnection(served.server.grpcPort, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const outcomes: string[] = [];
    for (let round = 0; round < 6; round += 1) {
      outcomes.push(String(await httpFromOtherPeer('/v2/health/ready')));
      outcomes.push(await grpcFromOtherPeer());
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(outcomes).toEqual(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? '200' : '0')));
    // Beyond the per-peer cap: closed at once; the rest: by the header timeout (10 s), promptly.
    const closedAfter = await Promise.all(slow.map((connection) => connection.closed));
    const atOnce = closedAfter.filter((ms) => ms < 1500).length;
    const slowest = Math.max(...closedAfter);
    console.log(`1000 slow connections: ${atOnce} closed at once, the rest by the header timeout; last closed after ${slowest.toFixed(0)} ms; 12/12 requests of the other peer succeeded`);
    expect(atOnce).toBeGreaterThanOrEqual(1000 - 192);
    expect(slowest).toBeLessThan(14_000);
  }, 60_000);

  it('refusals are logged rate-limited with counts', () => {
    const lines = served.server.logs.filter((line) => line['msg'] === 'connection refused: over the cap');
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(40);
    expect(lines[0]).toMatchObject({ component: 'connections', peer: '127.0.0.1', cap: 192, flag: '--max-connections-per-peer' });
    // Each line carries its running total; the flood is summed up, so the totals reach the refusals.
    const totals = new Map<string, number>();
    for (const line of lines) totals.set(line['refusal'] as string, Math.max(totals.get(line['refusal'] as string) ?? 0, line['total'] as number));
    expect([...totals.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1000 - 192);
  });
});
