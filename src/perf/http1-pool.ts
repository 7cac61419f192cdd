/**
 * `hotpath perf -i http`'s connections: HTTP/1.1 keep-alive sockets that
 * each carry one request at a time (HTTP/1.1 has no multiplexing, and
 * pipelining would make each answer wait for the one before it, which is
 * latency the server did not cause). Every request is the same pre-encoded
 * bytes (request line, headers and the V2 infer body), written as they are;
 * answers are parsed just enough to find their end: the status line,
 * Content-Length or chunked transfer coding, and `Connection: close`.
 *
 * The pool starts with `minimum` connections and opens another whenever a
 * request finds none idle, up to `maximum`, as perf_analyzer's HTTP client
 * does (one connection per request in flight); past that, requests wait in
 * order. A connection the server closes is dropped and replaced on demand.
 *
 * Single-threaded: a pool belongs to the event loop of the load generator.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { StreamCallback } from './h2-raw-session.js';
import { splitAddress } from './h2-raw-session.js';

/** The most connections one pool opens (a closed loop at higher concurrency queues in the pool). */
export const MAX_HTTP_CONNECTIONS = 1024;

/** An answer's body kept for an error's description is cut to this many bytes. */
const ERROR_TEXT_BYTES = 300;

interface Waiting {
  readonly callback: StreamCallback;
  readonly capture: boolean;
}

export class Http1Pool {
  private readonly all = new Set<Http1Connection>();
  private readonly idle: Http1Connection[] = [];
  private readonly waiting: Waiting[] = [];
  private opening = 0;
  private total = 0;
  private closed = false;

  private constructor(
    private readonly address: string,
    private readonly bytes: Buffer,
    private readonly secure: tls.ConnectionOptions | undefined,
    private readonly maximum: number,
  ) {}

  /** Opens `minimum` connections (a failure to reach the server rejects). */
  static async open(address: string, request: Buffer, minimum: number, secure?: tls.ConnectionOptions, maximum = MAX_HTTP_CONNECTIONS): Promise<Http1Pool> {
    const pool = new Http1Pool(address, request, secure, Math.max(minimum, maximum));
    const connections = await Promise.all(Array.from({ length: minimum }, () => Http1Connection.connect(address, secure)));
    for (const connection of connections) pool.adopt(connection);
    return pool;
  }

  /** Sends the request once; `callback` runs once when its answer has ended or the connection failed. */
  request(callback: StreamCallback, capture = false): void {
    if (this.closed) {
      queueMicrotask(() => callback({ ok: false, endNs: process.hrtime.bigint(), description: 'closed by the load generator', body: undefined }));
      return;
    }
    const connection = this.idle.pop();
    if (connection !== undefined) {
      connection.send(this.bytes, callback, capture);
      return;
    }
    this.waiting.push({ callback, capture });
    if (this.total + this.opening < this.maximum && this.opening < this.waiting.length) this.grow();
  }

  close(): void {
    this.closed = true;
    for (const connection of this.all) connection.destroy();
    this.idle.length = 0;
    const waiting = this.waiting.splice(0);
    const endNs = process.hrtime.bigint();
    for (const { callback } of waiting) callback({ ok: false, endNs, description: 'closed by the load generator', body: undefined });
  }

  private grow(): void {
    this.opening += 1;
    Http1Connection.connect(this.address, this.secure).then(
      (connection) => {
        this.opening -= 1;
        if (this.closed) connection.destroy();
        else this.adopt(connection);
      },
      (err: unknown) => {
        this.opening -= 1;
        // The request that asked for this connection fails: the server refused a connection.
        const next = this.waiting.shift();
        next?.callback({ ok: false, endNs: process.hrtime.bigint(), description: `connect: ${err instanceof Error ? err.message : String(err)}`, body: undefined });
      },
    );
  }

  /** A connection joins the pool (new, or free again after an answer). */
  private adopt(connection: Http1Connection): void {
    this.total += connection.counted ? 0 : 1;
    connection.counted = true;
    this.all.add(connection);
    connection.onFree = () => this.free(connection);
    connection.onGone = () => {
      this.total -= 1;
      this.all.delete(connection);
      const at = this.idle.indexOf(connection);
      if (at >= 0) this.idle.splice(at, 1);
      if (this.waiting.length > 0 && !this.closed) this.grow();
    };
    this.free(connection);
  }

  private free(connection: Http1Connection): void {
    if (this.closed) {
      connection.destroy();
      return;
    }
    const next = this.waiting.shift();
    if (next !== undefined) connection.send(this.bytes, next.callback, next.capture);
    else this.idle.push(connection);
  }
}

/**
 * One V2 infer request as HTTP/1.1 bytes: the request line, Host, the
 * binary tensor extension's Inference-Header-Content-Length (the JSON
 * header's length; the tensors' bytes follow it), Content-Length and any
 * extra headers (authorization).
 */
export function http1Request(address: string, path: string, headers: Readonly<Record<string, string>>, body: Uint8Array, jsonLength: number): Buffer {
  const lines = [
    `POST ${path} HTTP/1.1`,
    `host: ${address}`,
    'content-type: application/octet-stream',
    `inference-header-content-length: ${jsonLength}`,
    `content-length: ${body.byteLength}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** Where the parser is in the current answer. */
const enum Phase { Head, Body, ChunkSize, ChunkData, ChunkCrlf, Trailers }

class Http1Connection {
  counted = false;
  onFree: () => void = () => {};
  onGone: () => void = () => {};
  private callback: StreamCallback | undefined;
  private capture = false;
  private chunks: Buffer[] = [];
  private rest: Buffer | undefined;
  private phase = Phase.Head;
  private status = 0;
  private remaining = 0;
  private closeAfter = false;
  private gone = false;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(`socket error: ${err.message}`));
    socket.on('close', () => this.fail('connection closed'));
  }

  static connect(address: string, secure: tls.ConnectionOptions | undefined, timeoutMs = 10_000): Promise<Http1Connection> {
    const [host, port] = splitAddress(address);
    return new Promise((resolve, reject) => {
      const socket = secure === undefined ? net.connect({ host, port, noDelay: true }) : tls.connect({ host, port, ALPNProtocols: ['http/1.1'], ...secure });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no connection to ${address} within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once(secure === undefined ? 'connect' : 'secureConnect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new Http1Connection(socket));
      });
    });
  }

  send(request: Buffer, callback: StreamCallback, capture: boolean): void {
    this.callback = callback;
    this.capture = capture;
    this.chunks = [];
    this.phase = Phase.Head;
    this.status = 0;
    this.closeAfter = false;
    this.socket.write(request);
  }

  destroy(): void {
    this.gone = true;
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    let buffer = this.rest === undefined ? chunk : Buffer.concat([this.rest, chunk]);
    this.rest = undefined;
    try {
      while (buffer.length > 0 && this.callback !== undefined) {
        const used = this.step(buffer);
        if (used < 0) {
          this.rest = buffer;
          return;
        }
        buffer = buffer.subarray(used);
      }
    } catch (err) {
      this.fail(`HTTP protocol error: ${err instanceof Error ? err.message : String(err)}`);
      this.socket.destroy();
    }
  }

  /** Consumes what it can of `buffer`; -1: more bytes are needed first. */
  private step(buffer: Buffer): number {
    switch (this.phase) {
      case Phase.Head: {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return -1;
        this.head(buffer.toString('latin1', 0, end));
        return end + 4;
      }
      case Phase.Body: {
        const take = Math.min(this.remaining, buffer.length);
        this.keep(buffer.subarray(0, take));
        this.remaining -= take;
        if (this.remaining === 0) this.finish();
        return take;
      }
      case Phase.ChunkSize: {
        const end = buffer.indexOf('\r\n');
        if (end < 0) return -1;
        const size = parseInt(buffer.toString('latin1', 0, end).split(';')[0]!.trim(), 16);
        if (!Number.isFinite(size) || size < 0) throw new Error('bad chunk size');
        this.remaining = size;
        this.phase = size === 0 ? Phase.Trailers : Phase.ChunkData;
        return end + 2;
      }
      case Phase.ChunkData: {
        const take = Math.min(this.remaining, buffer.length);
        this.keep(buffer.subarray(0, take));
        this.remaining -= take;
        if (this.remaining === 0) this.phase = Phase.ChunkCrlf;
        return take;
      }
      case Phase.ChunkCrlf:
        if (buffer.length < 2) return -1;
        this.phase = Phase.ChunkSize;
        return 2;
      case Phase.Trailers: {
        // Trailer fields (rare), then the empty line.
        const end = buffer.indexOf('\r\n');
        if (end < 0) return -1;
        if (end === 0) this.finish();
        return end + 2;
      }
    }
  }

  private head(text: string): void {
    const lines = text.split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    if (match === null) throw new Error(`bad status line '${(lines[0] ?? '').slice(0, 60)}'`);
    this.status = Number(match[1]);
    let length: number | undefined;
    let chunked = false;
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim().toLowerCase();
      if (name === 'content-length') length = Number(value);
      else if (name === 'transfer-encoding') chunked = value.includes('chunked');
      else if (name === 'connection') this.closeAfter = value.includes('close');
    }
    if (chunked) this.phase = Phase.ChunkSize;
    else if (length !== undefined && length > 0) {
      this.phase = Phase.Body;
      this.remaining = length;
    } else if (length === 0) this.finish();
    else throw new Error('an answer with neither Content-Length nor chunked coding');
  }

  private keep(bytes: Buffer): void {
    // An error's text is kept for its description; a success's body only when asked for.
    if (this.capture || this.status !== 200) this.chunks.push(Buffer.from(bytes));
  }

  private finish(): void {
    const callback = this.callback!;
    this.callback = undefined;
    const endNs = process.hrtime.bigint();
    const ok = this.status === 200;
    const body = this.chunks.length === 0 ? undefined : Buffer.concat(this.chunks);
    const description = ok ? 'OK' : `HTTP ${this.status}${body ? `: ${body.toString('utf8', 0, Math.min(body.length, ERROR_TEXT_BYTES))}` : ''}`;
    this.phase = Phase.Head;
    if (this.closeAfter) this.destroy();
    callback({ ok, endNs, description, body: this.capture ? body : undefined });
    if (this.closeAfter) this.onGone();
    else this.onFree();
  }

  private fail(reason: string): void {
    if (this.gone && this.callback === undefined) return;
    const wasGone = this.gone;
    this.gone = true;
    const callback = this.callback;
    this.callback = undefined;
    callback?.({ ok: false, endNs: process.hrtime.bigint(), description: reason, body: undefined });
    if (!wasGone || callback !== undefined) this.onGone();
  }
}
