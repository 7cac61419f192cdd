/**
 * Tolerance for one known client bug: gRPC's C core (grpcio, the official
 * Python tritonclient's transport; grpc/grpc#19655, #38758) sends RST_STREAM
 * for a stream whose HEADERS it never sent when a call is cancelled at once,
 * as a tight deadline does. That stream is idle, and RFC 9113 §5.1 and §6.4
 * make any frame but HEADERS or PRIORITY on an idle stream a connection
 * error: Node's nghttp2 answers GOAWAY(PROTOCOL_ERROR) and every other call on
 * the connection fails (RST_STREAM error 2, GOAWAY, broken pipe).
 *
 * With --grpc-ignore-idle-stream-frames the gRPC listener puts this filter
 * between a plaintext connection and grpc-js's HTTP/2 session: it reads the
 * client's frames as they pass and drops the frames a client sends on one of
 * its own streams that it has not opened yet (an odd stream id above every
 * HEADERS it has sent), so the session never sees them. Everything else
 * passes unchanged, in order; only frame headers are buffered (a frame's
 * payload is forwarded as it arrives). Cost: the session reads through a JS
 * stream instead of the socket's handle, so it is off by default.
 *
 * One instance per connection, on the main thread.
 */
import { Duplex } from 'node:stream';
import type net from 'node:net';

/** "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n". */
const PREFACE_BYTES = 24;
const FRAME_HEADER_BYTES = 9;
const HEADERS = 0x1;
const PRIORITY = 0x2;
const EMPTY = Buffer.alloc(0);

/** The byte-level filter: what to forward of each chunk the client sent. */
export class IdleStreamFrameFilter {
  private prefaceLeft = PREFACE_BYTES;
  private header: Buffer = EMPTY;
  /** Payload bytes of the current frame still to pass (forward) or skip (drop). */
  private payloadLeft = 0;
  private dropping = false;
  /** The highest stream id the client opened with HEADERS. */
  private highestOpened = 0;
  /** Frames dropped so far. */
  dropped = 0;

  /** The parts of `chunk` to forward, in order (views of it, no copies of payloads). */
  filter(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, chunk.length);
      out.push(chunk.subarray(0, n));
      this.prefaceLeft -= n;
      at = n;
    }
    while (at < chunk.length) {
      if (this.payloadLeft > 0) {
        const n = Math.min(this.payloadLeft, chunk.length - at);
        if (!this.dropping) out.push(chunk.subarray(at, at + n));
        this.payloadLeft -= n;
        at += n;
        continue;
      }
      const need = FRAME_HEADER_BYTES - this.header.length;
      const take = chunk.subarray(at, at + need);
      this.header = this.header.length === 0 ? take : Buffer.concat([this.header, take]);
      at += take.length;
      if (this.header.length < FRAME_HEADER_BYTES) break;
      const header = this.header;
      this.header = EMPTY;
      this.payloadLeft = header.readUIntBE(0, 3);
      const type = header[3]!;
      const stream = header.readUInt32BE(5) & 0x7fff_ffff;
      // Client-initiated streams are odd; one above every opened id has not been opened yet.
      const idle = stream % 2 === 1 && stream > this.highestOpened;
      if (type === HEADERS && idle) this.highestOpened = stream;
      this.dropping = idle && type !== HEADERS && type !== PRIORITY;
      if (this.dropping) this.dropped += 1;
      else out.push(header);
    }
    return out;
  }
}

/**
 * `socket` behind an IdleStreamFrameFilter, as a Duplex grpc-js's HTTP/2
 * session can run on. Writes go straight to the socket; the peer's address
 * stays readable (per-peer limits and logs use it).
 */
export function withIdleStreamFrameFilter(socket: net.Socket, onDropped?: () => void): Duplex {
  const filter = new IdleStreamFrameFilter();
  const filtered: Duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      socket.write(chunk, callback);
    },
    final(callback) {
      socket.end(callback);
    },
    destroy(err, callback) {
      socket.destroy(err ?? undefined);
      callback(err);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    const before = filter.dropped;
    let more = true;
    for (const part of filter.filter(chunk)) more = filtered.push(part) && more;
    if (filter.dropped > before) onDropped?.();
    if (!more) socket.pause();
  });
  socket.on('end', () => filtered.push(null));
  socket.on('error', (err) => filtered.destroy(err));
  socket.on('close', () => filtered.destroy());
  for (const key of ['remoteAddress', 'remotePort', 'remoteFamily', 'localAddress', 'localPort'] as const) {
    Object.defineProperty(filtered, key, { get: () => socket[key], enumerable: true });
  }
  Object.defineProperty(filtered, 'setTimeout', { value: (ms: number, cb?: () => void) => (socket.setTimeout(ms, cb), filtered) });
  return filtered;
}
