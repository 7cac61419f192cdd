import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcFrame, grpcMessages, GRPC_REQUEST_HEADERS, MODEL_INFER_PATH } from '../../src/perf/grpc-frames.js';
import { h2loadArgs, parseH2loadOutput } from '../../bench/load/h2load.js';
import { RawH2Session, type StreamOutcome } from '../../src/perf/h2-raw-session.js';
import { FrameType, hpackInteger, HUFFMAN, walkHeaderBlock } from '../../src/perf/h2-wire.js';

describe('gRPC frames', () => {
  it('prefixes a message with its flag and length, and splits a body back', () => {
    const frame = grpcFrame(Uint8Array.from([1, 2, 3]));
    expect([...frame]).toEqual([0, 0, 0, 0, 3, 1, 2, 3]);
    const body = Buffer.concat([frame, grpcFrame(new Uint8Array(0))]);
    expect(grpcMessages(body).map((m) => [...m])).toEqual([[1, 2, 3], []]);
    expect(() => grpcMessages(frame.subarray(0, 6))).toThrow(/truncated gRPC message/);
    expect(() => grpcMessages(Buffer.from([1, 0, 0, 0, 0]))).toThrow(/compressed/);
  });
});

describe('HPACK pieces', () => {
  it('encodes integers with a prefix (RFC 7541 C.1)', () => {
    expect([...hpackInteger(10, 5)]).toEqual([10]);
    expect([...hpackInteger(1337, 5)]).toEqual([31, 154, 10]);
    expect([...hpackInteger(42, 8)]).toEqual([42]);
    expect([...hpackInteger(3, 7, 0x80)]).toEqual([0x83]);
  });

  it('finds :status and grpc-status in plain and Huffman-coded literals', () => {
    const plain = Buffer.concat([
      Buffer.from([0x88, 0x20]), // :status 200, table size update to 0
      Buffer.from([0x00, 11]), Buffer.from('grpc-status'), Buffer.from([1]), Buffer.from('5'),
      Buffer.from([0x00, 12]), Buffer.from('grpc-message'), Buffer.from([4]), Buffer.from('gone'),
    ]);
    expect(walkHeaderBlock(plain)).toEqual({ status: 200, grpcStatus: '5', grpcMessage: 'gone' });
    const huffman = Buffer.concat([
      Buffer.from([0x48, 3]), Buffer.from('503'), // :status by name index 8, plain value
      Buffer.from([0x40, 0x80 | HUFFMAN['grpc-status'].length]), HUFFMAN['grpc-status'], Buffer.from([0x81]), HUFFMAN['0'],
    ]);
    expect(walkHeaderBlock(huffman)).toEqual({ status: 503, grpcStatus: '0', grpcMessage: undefined });
    expect(() => walkHeaderBlock(Buffer.from([0xbe]))).toThrow(/dynamic-table reference 62/);
  });

  it("holds the Huffman codes nghttp2 (node:http2's client) puts on the wire", async () => {
    // A plain TCP server reads the client's first HEADERS frame; with the default
    // 4 KiB table the client sends new names as literals with incremental indexing.
    const block = await new Promise<Buffer>((resolve, reject) => {
      const server = net.createServer((socket) => {
        let bytes = Buffer.alloc(0);
        socket.on('data', (chunk: Buffer) => {
          bytes = Buffer.concat([bytes, chunk]);
          for (let offset = 24; bytes.length >= offset + 9;) {
            const length = bytes.readUIntBE(offset, 3);
            if (bytes.length < offset + 9 + length) break;
            if (bytes[offset + 3] === FrameType.HEADERS) {
              resolve(bytes.subarray(offset + 9, offset + 9 + length));
              socket.destroy();
              server.close();
              return;
            }
            offset += 9 + length;
          }
        });
      });
      server.listen(0, '127.0.0.1', () => {
        const client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
        client.on('error', () => {});
        client.request({ ':method': 'POST', 'grpc-status': '0', 'grpc-message': 'OK' }).on('error', () => {});
        setTimeout(() => {
          client.destroy();
          reject(new Error('no HEADERS frame'));
        }, 5000);
      });
    });
    expect(block.includes(Buffer.concat([Buffer.from([0x40, 0x80 | HUFFMAN['grpc-status'].length]), HUFFMAN['grpc-status']]))).toBe(true);
    expect(block.includes(Buffer.concat([Buffer.from([0x40, 0x80 | HUFFMAN['grpc-message'].length]), HUFFMAN['grpc-message']]))).toBe(true);
  });
});

describe('raw HTTP/2 session against node:http2', () => {
  let server: http2.Http2Server;
  let address = '';
  const seen: http2.IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    server = http2.createServer();
    server.on('stream', (stream, headers) => {
      seen.push(headers);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const request = grpcMessages(Buffer.concat(chunks))[0]!;
        if (request[0] === 0xee) {
          stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'no such model' }, { endStream: true });
          return;
        }
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(grpcFrame(Buffer.from(request).reverse()));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const call = (session: RawH2Session, capture = false) => new Promise<StreamOutcome>((resolve) => session.request(resolve, capture));

  it('sends pre-encoded requests the server reads as gRPC, and reads the answers', async () => {
    const session = await RawH2Session.connect(address, MODEL_INFER_PATH, GRPC_REQUEST_HEADERS, grpcFrame(Uint8Array.from([1, 2, 3])));
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => call(session, i === 0)));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect([...grpcMessages(outcomes[0]!.body!)[0]!]).toEqual([3, 2, 1]);
    expect(seen.at(-1)).toMatchObject({
      ':method': 'POST', ':scheme': 'http', ':path': MODEL_INFER_PATH, ':authority': address,
      'content-type': 'application/grpc', te: 'trailers',
    });
    expect(session.open).toBe(0);
    session.close();
  });

  it('reports a trailers-only error answer with its status and message', async () => {
    const session = await RawH2Session.connect(address, MODEL_INFER_PATH, GRPC_REQUEST_HEADERS, grpcFrame(Uint8Array.from([0xee])));
    const outcome = await call(session);
    expect(outcome.ok).toBe(false);
    expect(outcome.description).toMatch(/^HTTP 200, grpc-status 5: (no such model|\(Huffman-coded, not decoded\))$/);
    session.close();
    const after = await call(session);
    expect(after).toMatchObject({ ok: false, description: 'closed by the load generator' });
  });
});

describe('h2load', () => {
  const output = `starting benchmark...
finished in 3.00s, 45580.33 req/s, 3.21MB/s
requests: 136741 total, 136805 started, 136741 done, 136741 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 136741 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 9.62MB (10087512) total, 134.27KB (137492) headers (space savings 97.14%), 6.78MB (7110532) data
                     min         max         mean         sd        +/- sd
time for request:      307us     12.38ms      1.38ms       452us    78.21%
`;

  it('parses its summary', () => {
    expect(parseH2loadOutput(output)).toEqual({
      requests_per_s: 45580.33, total: 136741, succeeded: 136741, failed: 0, errored: 0, status_2xx: 136741, mean_ms: 1.38,
    });
    expect(parseH2loadOutput(output.replace('1.38ms', '980.5us')).mean_ms).toBeCloseTo(0.9805, 6);
    expect(() => parseH2loadOutput('h2load: connection refused')).toThrow(/no summary/);
  });

  it('sends the body file with the gRPC headers on one connection', () => {
    const args = h2loadArgs({ address: '127.0.0.1:5', path: MODEL_INFER_PATH, body: new Uint8Array(1), streams: 64, warmupS: 1, durationS: 2.5 }, '/tmp/b');
    expect(args.join(' ')).toBe(
      '-c 1 -m 64 -t 1 --warm-up-time 1000ms -D 2500ms -d /tmp/b -H content-type: application/grpc -H te: trailers ' +
      'http://127.0.0.1:5/inference.GRPCInferenceService/ModelInfer',
    );
  });
});
