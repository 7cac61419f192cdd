/**
 * The frame sequence behind "cancelled calls cost the connection" (issue #21):
 * gRPC's C core (grpcio, the official Python client's transport) cancels a
 * call at once by sending RST_STREAM for a stream whose HEADERS it never sent.
 * That is a connection error by RFC 9113 §6.4, and Node's nghttp2 ends the
 * whole session; with --grpc-ignore-idle-stream-frames the server drops such
 * frames before its HTTP/2 session sees them and keeps the connection.
 *
 * Replayed here byte for byte over a plain TCP socket (HPACK literals, no
 * client library), against real server processes.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRepository } from './helpers/repositories.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { CLIENT_PREFACE as PREFACE, http2Frame as frame } from '../helpers/http2-frames.js';

const HEADERS = 0x1;
const DATA = 0x0;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const GOAWAY = 0x7;
/** GOAWAY error codes (RFC 9113 §7). */
const PROTOCOL_ERROR = 0x1;
const INTERNAL_ERROR = 0x2;

/** HPACK "literal header field without indexing, new name", lengths under 127. */
function literal(name: string, value: string): Buffer {
  return Buffer.concat([Buffer.from([0x00, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
}

/** A whole ServerLive call on `stream`: HEADERS (END_HEADERS) and an empty message (END_STREAM). */
function serverLive(stream: number, port: number): Buffer {
  const block = Buffer.concat([
    literal(':method', 'POST'),
    literal(':scheme', 'http'),
    literal(':path', '/inference.GRPCInferenceService/ServerLive'),
    literal(':authority', `127.0.0.1:${port}`),
    literal('content-type', 'application/grpc'),
    literal('te', 'trailers'),
  ]);
  return Buffer.concat([frame(HEADERS, 0x4, stream, block), frame(DATA, 0x1, stream, Buffer.alloc(5))]);
}

interface Received {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

/** Sends the client's bytes and collects the server's frames until `done` says so, or the connection ends. */
async function exchange(port: number, send: (write: (bytes: Buffer) => void) => void, done: (frames: Received[]) => boolean): Promise<{ frames: Received[] }> {
  const socket = net.connect(port, '127.0.0.1');
  const frames: Received[] = [];
  let buffer = Buffer.alloc(0);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const finished = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 5000);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 9 && buffer.length >= 9 + buffer.readUIntBE(0, 3)) {
        const length = buffer.readUIntBE(0, 3);
        const received = { type: buffer[3]!, flags: buffer[4]!, stream: buffer.readUInt32BE(5) & 0x7fffffff, payload: buffer.subarray(9, 9 + length) };
        frames.push(received);
        // Acknowledge the server's SETTINGS, as every client does.
        if (received.type === SETTINGS && (received.flags & 0x1) === 0) socket.write(frame(SETTINGS, 0x1, 0));
        buffer = buffer.subarray(9 + length);
      }
      if (done(frames)) {
        clearTimeout(timer);
        resolve();
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.on('error', () => undefined);
  });
  send((bytes) => socket.write(bytes));
  await finished;
  socket.destroy();
  return { frames };
}

/** The trailers that end a stream (HEADERS with END_STREAM). */
const endsStream = (frames: Received[], stream: number) => frames.some((f) => f.type === HEADERS && f.stream === stream && (f.flags & 0x1) !== 0);
const goaway = (frames: Received[]) => frames.find((f) => f.type === GOAWAY);

let repository: { dir: string; remove: () => Promise<void> };
const servers: RunningServer[] = [];

beforeAll(async () => {
  repository = await sampleRepository(['ctr_mlp']);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await repository?.remove();
});

/** Preface, SETTINGS, a reset of stream 1 (never opened), then ServerLive calls on streams 3 and 5. */
const cancelledThenCalls = (port: number) => (write: (bytes: Buffer) => void) => {
  write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0), frame(RST_STREAM, 0, 1, Buffer.from([0, 0, 0, 8])), serverLive(3, port)]));
  setTimeout(() => write(serverLive(5, port)), 200);
};

describe('RST_STREAM for a stream the client never opened', () => {
  it('ends the connection by default (Node\'s nghttp2 follows RFC 9113 §6.4)', async () => {
    const server = await startServer(repository.dir, []);
    servers.push(server);
    const port = Number(server.grpcAddress.split(':').pop());
    const { frames } = await exchange(port, cancelledThenCalls(port), (f) => goaway(f) !== undefined);
    const away = goaway(frames);
    expect(away, 'a GOAWAY').toBeDefined();
    // The code differs by Node version: Node 20 ends the session with INTERNAL_ERROR (2) after
    // nghttp2 reports the protocol error; Node 24's nghttp2 sends PROTOCOL_ERROR (1) itself.
    // Either way it is an error code, never NO_ERROR (0) as for a graceful shutdown.
    expect([PROTOCOL_ERROR, INTERNAL_ERROR]).toContain(away!.payload.readUInt32BE(4));
    expect(endsStream(frames, 3)).toBe(false);
  });

  it('with --grpc-ignore-idle-stream-frames: dropped, and both later calls on the connection are answered', async () => {
    const server = await startServer(repository.dir, ['--grpc-ignore-idle-stream-frames']);
    servers.push(server);
    const port = Number(server.grpcAddress.split(':').pop());
    const { frames } = await exchange(port, cancelledThenCalls(port), (f) => endsStream(f, 5) || goaway(f) !== undefined);
    expect(goaway(frames)).toBeUndefined();
    for (const stream of [3, 5]) {
      const trailers = frames.find((f) => f.type === HEADERS && f.stream === stream && (f.flags & 0x1) !== 0);
      expect(trailers, `stream ${stream} answered`).toBeDefined();
    }
    // ServerLive answered with a message: a DATA frame on each stream.
    expect(frames.filter((f) => f.type === DATA && (f.stream === 3 || f.stream === 5)).length).toBe(2);
  });
});
