// One HTTP/2 connection of the raw load generator (`hotpath perf`'s, and the
// benchmarks', which import it from here), on a
// plain TCP socket: each request is a copy of a pre-encoded template (HEADERS
// + DATA, h2-wire.ts) with its stream id patched in, and requests queued in
// one tick leave in one write. Responses are parsed frame by frame; header
// blocks are walked for :status and grpc-status, never fully decoded (the
// server is asked for a zero-size HPACK table). Flow control: the server's
// connection window and stream limit are honoured (requests wait in a queue);
// our own receive windows are large and topped up.
//
// Single-threaded: one instance belongs to the event loop of the loader.
import net from 'node:net';
import tls from 'node:tls';

import {
  Flag,
  FrameType,
  FRAME_HEADER_BYTES,
  PREFACE,
  requestHeaderBlock,
  requestTemplate,
  Setting,
  settingsFrame,
  walkHeaderBlock,
  windowUpdateFrame,
  frame,
  type RequestTemplate,
} from './h2-wire.js';

/** How one request ended. */
export interface StreamOutcome {
  readonly ok: boolean;
  /** hrtime (ns) when the last frame of the answer was parsed. */
  readonly endNs: bigint;
  readonly description: string;
  /** The response body (gRPC frames), when the request asked for it. */
  readonly body: Buffer | undefined;
}

export type StreamCallback = (outcome: StreamOutcome) => void;

interface OpenStream {
  readonly id: number;
  readonly callback: StreamCallback;
  status: number;
  grpcStatus: string | undefined;
  grpcMessage: string | undefined;
  chunks: Buffer[] | undefined;
  /** A header block split over CONTINUATION frames. */
  block: Buffer[] | undefined;
  blockEndsStream: boolean;
}

const RECEIVE_WINDOW = 1 << 30;
const MAX_STREAM_ID = 0x7fffffff;

export class RawH2Session {
  private readonly streams = new Map<number, OpenStream>();
  private readonly waiting: { callback: StreamCallback; capture: boolean }[] = [];
  private out: Buffer[] = [];
  private flushScheduled = false;
  private rest: Buffer | undefined;
  private nextStreamId = 1;
  private sendWindow = 65_535;
  private peerMaxStreams = Number.POSITIVE_INFINITY;
  private peerMaxFrame = 16_384;
  private received = 0;
  private failure: string | undefined;
  private acked: (() => void) | undefined;
  private template: RequestTemplate | undefined;

  private constructor(
    private readonly socket: net.Socket,
    private readonly headerBlock: Buffer,
    private readonly body: Uint8Array,
  ) {}

  /**
   * Connects, exchanges SETTINGS (waits for the server's ACK of ours: a
   * zero-size HPACK table) and is ready. With `secure`, over TLS with ALPN
   * h2 (`secure` is passed to tls.connect: roots, client certificate, the
   * server name); without, plaintext (h2c with prior knowledge).
   */
  static connect(
    address: string,
    path: string,
    headers: Readonly<Record<string, string>>,
    body: Uint8Array,
    timeoutMs = 10_000,
    secure?: tls.ConnectionOptions,
  ): Promise<RawH2Session> {
    const [host, port] = splitAddress(address);
    return new Promise((resolve, reject) => {
      const socket = secure === undefined
        ? net.connect({ host, port, noDelay: true })
        : tls.connect({ host, port, ALPNProtocols: ['h2'], ...secure });
      socket.setNoDelay(true);
      const session = new RawH2Session(socket, requestHeaderBlock(address, path, headers), body);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no HTTP/2 SETTINGS ACK from ${address} within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once(secure === undefined ? 'connect' : 'secureConnect', () => {
        if (socket instanceof tls.TLSSocket && socket.alpnProtocol !== 'h2') {
          clearTimeout(timer);
          socket.destroy();
          reject(new Error(`${address} did not agree to HTTP/2 over TLS (ALPN: ${socket.alpnProtocol || 'none'})`));
          return;
        }
        socket.write(Buffer.concat([
          PREFACE,
          settingsFrame({ [Setting.HEADER_TABLE_SIZE]: 0, [Setting.ENABLE_PUSH]: 0, [Setting.INITIAL_WINDOW_SIZE]: RECEIVE_WINDOW }),
          windowUpdateFrame(0, RECEIVE_WINDOW - 65_535),
        ]));
      });
      session.acked = () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        socket.on('error', (err) => session.fail(`socket error: ${err.message}`));
        resolve(session);
      };
      socket.on('data', (chunk: Buffer) => session.onData(chunk));
      socket.on('close', () => session.fail('connection closed'));
    });
  }

  get open(): number {
    return this.streams.size;
  }

  /** Sends one request; `callback` runs once when it ends (also on a connection failure). */
  request(callback: StreamCallback, capture = false): void {
    if (this.failure !== undefined) {
      const failure = this.failure;
      queueMicrotask(() => callback({ ok: false, endNs: process.hrtime.bigint(), description: failure, body: undefined }));
      return;
    }
    if (this.streams.size >= this.peerMaxStreams || this.sendWindow < this.body.byteLength) {
      this.waiting.push({ callback, capture });
      return;
    }
    if (this.nextStreamId > MAX_STREAM_ID) {
      this.fail('stream ids exhausted');
      callback({ ok: false, endNs: process.hrtime.bigint(), description: 'stream ids exhausted', body: undefined });
      return;
    }
    this.template ??= requestTemplate(this.headerBlock, this.body, this.peerMaxFrame);
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const bytes = Buffer.allocUnsafe(this.template.bytes.length);
    this.template.bytes.copy(bytes);
    this.template.patch(bytes, id);
    this.sendWindow -= this.body.byteLength;
    this.streams.set(id, {
      id, callback, status: 0, grpcStatus: undefined, grpcMessage: undefined,
      chunks: capture ? [] : undefined, block: undefined, blockEndsStream: false,
    });
    this.write(bytes);
  }

  close(): void {
    this.fail('closed by the load generator');
    this.socket.destroy();
  }

  private write(bytes: Buffer): void {
    this.out.push(bytes);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    queueMicrotask(() => {
      this.flushScheduled = false;
      const out = this.out;
      this.out = [];
      if (!this.socket.destroyed) this.socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
    });
  }

  private onData(chunk: Buffer): void {
    const buffer = this.rest === undefined ? chunk : Buffer.concat([this.rest, chunk]);
    let offset = 0;
    while (buffer.length - offset >= FRAME_HEADER_BYTES) {
      const length = buffer.readUIntBE(offset, 3);
      if (buffer.length - offset - FRAME_HEADER_BYTES < length) break;
      const type = buffer[offset + 3]!;
      const flags = buffer[offset + 4]!;
      const id = buffer.readUInt32BE(offset + 5) & 0x7fffffff;
      const payload = buffer.subarray(offset + FRAME_HEADER_BYTES, offset + FRAME_HEADER_BYTES + length);
      offset += FRAME_HEADER_BYTES + length;
      try {
        this.onFrame(type, flags, id, payload);
      } catch (err) {
        this.fail(`protocol error: ${err instanceof Error ? err.message : String(err)}`);
        this.socket.destroy();
        return;
      }
    }
    this.rest = offset < buffer.length ? buffer.subarray(offset) : undefined;
    if (this.received >= RECEIVE_WINDOW / 2) {
      this.write(windowUpdateFrame(0, this.received));
      this.received = 0;
    }
  }

  private onFrame(type: number, flags: number, id: number, payload: Buffer): void {
    switch (type) {
      case FrameType.DATA: {
        this.received += payload.length;
        const stream = this.streams.get(id);
        if (stream === undefined) return;
        stream.chunks?.push(Buffer.from(unpad(payload, flags)));
        if (flags & Flag.END_STREAM) this.end(stream, 'the answer ended without trailers');
        return;
      }
      case FrameType.HEADERS: {
        const stream = this.streams.get(id);
        if (stream === undefined) return;
        let block = unpad(payload, flags);
        if (flags & Flag.PRIORITY) block = block.subarray(5);
        if (flags & Flag.END_HEADERS) this.onHeaders(stream, block, (flags & Flag.END_STREAM) !== 0);
        else {
          stream.block = [Buffer.from(block)];
          stream.blockEndsStream = (flags & Flag.END_STREAM) !== 0;
        }
        return;
      }
      case FrameType.CONTINUATION: {
        const stream = this.streams.get(id);
        if (stream?.block === undefined) return;
        stream.block.push(Buffer.from(payload));
        if (flags & Flag.END_HEADERS) {
          const block = Buffer.concat(stream.block);
          stream.block = undefined;
          this.onHeaders(stream, block, stream.blockEndsStream);
        }
        return;
      }
      case FrameType.RST_STREAM: {
        const stream = this.streams.get(id);
        if (stream !== undefined) this.end(stream, `RST_STREAM ${payload.readUInt32BE(0)}`);
        return;
      }
      case FrameType.SETTINGS:
        if (flags & Flag.ACK) {
          this.acked?.();
          this.acked = undefined;
          return;
        }
        for (let i = 0; i + 6 <= payload.length; i += 6) {
          const setting = payload.readUInt16BE(i);
          const value = payload.readUInt32BE(i + 2);
          if (setting === Setting.MAX_CONCURRENT_STREAMS) this.peerMaxStreams = value;
          else if (setting === Setting.MAX_FRAME_SIZE) this.peerMaxFrame = value;
          else if (setting === Setting.INITIAL_WINDOW_SIZE && value < this.body.byteLength) {
            throw new Error(`the server's stream window (${value} bytes) is smaller than one request body`);
          }
        }
        this.write(frame(FrameType.SETTINGS, Flag.ACK, 0));
        return;
      case FrameType.PING:
        if ((flags & Flag.ACK) === 0) this.write(frame(FrameType.PING, Flag.ACK, 0, payload));
        return;
      case FrameType.WINDOW_UPDATE:
        if (id === 0) {
          this.sendWindow += payload.readUInt32BE(0) & 0x7fffffff;
          this.drain();
        }
        return;
      case FrameType.GOAWAY:
        this.fail(`GOAWAY ${payload.length >= 8 ? payload.readUInt32BE(4) : '?'}`);
        return;
      case FrameType.PUSH_PROMISE:
        throw new Error('PUSH_PROMISE although push is disabled');
      default:
        return; // PRIORITY and unknown frame types are ignored (RFC 9113 §4.1)
    }
  }

  private onHeaders(stream: OpenStream, block: Uint8Array, endsStream: boolean): void {
    const facts = walkHeaderBlock(block);
    if (stream.status === 0) stream.status = facts.status;
    if (facts.grpcStatus !== undefined) stream.grpcStatus = facts.grpcStatus;
    if (facts.grpcMessage !== undefined) stream.grpcMessage = facts.grpcMessage;
    if (endsStream) this.end(stream, undefined);
  }

  private end(stream: OpenStream, problem: string | undefined): void {
    const endNs = process.hrtime.bigint();
    this.streams.delete(stream.id);
    const ok = problem === undefined && stream.status === 200 && stream.grpcStatus === '0';
    const description = ok ? 'OK' : problem ?? `HTTP ${stream.status}, grpc-status ${stream.grpcStatus ?? 'none'}${stream.grpcMessage ? `: ${stream.grpcMessage}` : ''}`;
    stream.callback({ ok, endNs, description, body: stream.chunks === undefined ? undefined : Buffer.concat(stream.chunks) });
    this.drain();
  }

  private drain(): void {
    while (this.waiting.length > 0 && this.streams.size < this.peerMaxStreams && this.sendWindow >= this.body.byteLength && this.failure === undefined) {
      const next = this.waiting.shift()!;
      this.request(next.callback, next.capture);
    }
  }

  private fail(reason: string): void {
    if (this.failure !== undefined) return;
    this.failure = reason;
    const endNs = process.hrtime.bigint();
    const pending = [...this.streams.values()].map((s) => s.callback).concat(this.waiting.map((w) => w.callback));
    this.streams.clear();
    this.waiting.length = 0;
    for (const callback of pending) callback({ ok: false, endNs, description: reason, body: undefined });
  }
}

function unpad(payload: Buffer, flags: number): Buffer {
  if ((flags & Flag.PADDED) === 0) return payload;
  const pad = payload[0]!;
  return payload.subarray(1, payload.length - pad);
}

/** host:port (IPv6 in brackets) → [host, port]. */
export function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon).replace(/^\[|\]$/g, ''), Number(address.slice(colon + 1))];
}
