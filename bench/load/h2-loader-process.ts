// The serve benchmark's load generator: one pre-encoded gRPC request body
// (the length-prefixed ModelInfer bytes, encoded once by the suite) on N
// streams kept in flight over one or a few HTTP/2 connections (closed loop).
// No grpc-js and no protobuf on the hot path, so the client's CPU per request
// stays small next to the server's on a machine they share. Two clients:
//   raw         (default) pre-encoded HTTP/2 frames on a TCP socket
//               (h2-raw-session.ts): a few µs of CPU per request;
//   node-http2  node:http2's client: simpler, but it costs about as much CPU
//               per request as the echo server (a stream object, listeners
//               and an async resource each), which understates fast servers.
//
// Per request it records the round trip (hrtime, from sending the headers to
// the trailers) and checks the HTTP status and grpc-status (trailers, or the
// headers of a trailers-only answer). It warms up, says `ready` (with the
// first response's message, which the suite checks and the echo contender
// answers with), waits for `go`, measures, sends its latencies back and exits.
// Everything is bounded: a request count cap, and requests still open
// `stallMs` after the end count as errors.
import http2 from 'node:http2';
import { performance } from 'node:perf_hooks';

import { parentChannel } from './child-process.js';
import { RawH2Session } from '../../src/perf/h2-raw-session.js';
import { grpcMessages, GRPC_REQUEST_HEADERS } from '../../src/perf/grpc-frames.js';
import type { LoaderConfig, LoaderResult, ToChild } from './messages.js';

const { NGHTTP2_NO_ERROR } = http2.constants;

const channel = parentChannel();
let go: (() => void) | undefined;
const started = new Promise<void>((resolve) => {
  go = resolve;
});

channel.onMessage((message: ToChild) => {
  if (message.type === 'start') main(message.config as LoaderConfig).catch((err: unknown) => fail(err));
  else go?.();
});

function fail(err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  process.send!({ type: 'error', message: `h2 load generator: ${message}` }, () => process.exit(1));
}

function connectNode(address: string): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`, { settings: { enablePush: false, initialWindowSize: 1 << 20 } });
    session.once('error', reject);
    session.once('connect', () => {
      session.off('error', reject);
      // A dead connection fails its streams; the per-stream handlers count those.
      session.on('error', () => {});
      session.setLocalWindowSize(16 << 20);
      resolve(session);
    });
  });
}

/** How a request ended, as either client reports it. */
interface Outcome {
  readonly ok: boolean;
  readonly endNs: bigint;
  readonly description: string;
  readonly body: Buffer | undefined;
}

/** One connection of either client: sends the body once, calls back once. */
interface Connection {
  send(done: (outcome: Outcome) => void, capture: boolean): void;
  close(): void;
}

function nodeConnection(session: http2.ClientHttp2Session, cfg: LoaderConfig, body: Buffer): Connection {
  const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': cfg.path, ...GRPC_REQUEST_HEADERS };
  return {
    send(done, capture) {
      let httpStatus = 0;
      let grpcStatus: string | undefined;
      let grpcMessage: string | undefined;
      let endNs = 0n;
      const chunks: Buffer[] | undefined = capture ? [] : undefined;
      const stream = session.request(headers, { endStream: false });
      stream.on('response', (h) => {
        httpStatus = h[':status'] ?? 0;
        // A trailers-only answer (an error, usually) carries grpc-status in its headers.
        if (h['grpc-status'] !== undefined) {
          endNs = process.hrtime.bigint();
          grpcStatus = String(h['grpc-status']);
          grpcMessage = h['grpc-message'] as string | undefined;
        }
      });
      stream.on('trailers', (t) => {
        endNs = process.hrtime.bigint();
        grpcStatus = t['grpc-status'] as string | undefined;
        grpcMessage = t['grpc-message'] as string | undefined;
      });
      stream.on('error', (err) => {
        grpcMessage ??= err.message;
      });
      stream.on('close', () => {
        const rst = stream.rstCode ?? NGHTTP2_NO_ERROR;
        const ok = httpStatus === 200 && grpcStatus === '0' && endNs !== 0n && rst === NGHTTP2_NO_ERROR;
        done({
          ok,
          endNs: endNs === 0n ? process.hrtime.bigint() : endNs,
          description: ok ? 'OK' : `HTTP ${httpStatus}, grpc-status ${grpcStatus ?? 'none'}${grpcMessage ? `: ${unescapeMessage(grpcMessage)}` : ''}${rst ? `, RST_STREAM ${rst}` : ''}`,
          body: chunks && Buffer.concat(chunks),
        });
      });
      if (chunks) stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      else stream.resume();
      stream.end(body);
    },
    close: () => session.destroy(),
  };
}

async function connect(cfg: LoaderConfig, body: Buffer): Promise<Connection> {
  if (cfg.client === 'node-http2') return nodeConnection(await connectNode(cfg.address), cfg, body);
  const session = await RawH2Session.connect(cfg.address, cfg.path, GRPC_REQUEST_HEADERS, body);
  return { send: (done, capture) => session.request(done, capture), close: () => session.close() };
}

/**
 * One closed-loop run over the connections: `concurrency` virtual clients,
 * each sending the next request when its last one ended. The callback is bound
 * once per client, not per request, to keep allocation off the hot path.
 */
class ClosedLoop {
  readonly latencies: Float64Array;
  count = 0;
  errors = 0;
  readonly errorSamples = new Set<string>();
  lastDoneMs = 0;
  private sent = 0;
  private inFlight = 0;
  private stopAtMs = 0;
  private finish: (() => void) | undefined;

  constructor(
    private readonly connections: readonly Connection[],
    private readonly stallMs: number,
    capacity: number,
    /** Receives the first successful response's body (warm-up only). */
    private capture?: (body: Buffer) => void,
  ) {
    this.latencies = new Float64Array(capacity);
  }

  run(concurrency: number, durationMs: number): Promise<void> {
    this.stopAtMs = performance.now() + durationMs;
    return new Promise((resolve) => {
      this.finish = resolve;
      const n = Math.min(concurrency, this.latencies.length);
      if (n === 0) resolve();
      for (let i = 0; i < n; i += 1) this.client(i).send();
    });
  }

  /** Requests still open: counted as errors, and the run ends (after `stallMs`). */
  abandon(): void {
    if (this.inFlight === 0) return;
    this.errors += this.inFlight;
    this.errorSamples.add(`${this.inFlight} request(s) still open ${this.stallMs} ms after the end`);
    this.inFlight = 0;
    this.finish?.();
  }

  private client(index: number) {
    const connection = this.connections[index % this.connections.length]!;
    const client = {
      startNs: 0n,
      send: () => {
        this.sent += 1;
        this.inFlight += 1;
        client.startNs = process.hrtime.bigint();
        connection.send(client.done, this.capture !== undefined);
      },
      done: (outcome: Outcome) => this.done(client, outcome),
    };
    return client;
  }

  private done(client: { startNs: bigint; send: () => void }, outcome: Outcome): void {
    if (this.inFlight === 0) return; // abandoned already
    this.inFlight -= 1;
    const now = performance.now();
    this.lastDoneMs = now;
    if (outcome.ok) {
      if (this.count < this.latencies.length) this.latencies[this.count] = Number(outcome.endNs - client.startNs) / 1e6;
      this.count += 1;
      if (this.capture !== undefined && outcome.body !== undefined) {
        this.capture(outcome.body);
        this.capture = undefined;
      }
    } else {
      this.errors += 1;
      if (this.errorSamples.size < 5) this.errorSamples.add(outcome.description);
    }
    if (now < this.stopAtMs && this.sent < this.latencies.length) client.send();
    else if (this.inFlight === 0) this.finish?.();
  }
}

/** grpc-message is percent-encoded; a malformed one is shown as sent. */
function unescapeMessage(message: string): string {
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
}

async function runBounded(loop: ClosedLoop, cfg: LoaderConfig, durationMs: number): Promise<void> {
  const stall = setTimeout(() => loop.abandon(), durationMs + cfg.stallMs);
  try {
    await loop.run(cfg.concurrency, durationMs);
  } finally {
    clearTimeout(stall);
  }
}

async function main(cfg: LoaderConfig): Promise<void> {
  const body = Buffer.from(cfg.body.buffer, cfg.body.byteOffset, cfg.body.byteLength);
  const connections = await Promise.all(Array.from({ length: Math.max(1, cfg.connections) }, () => connect(cfg, body)));

  let sample: Buffer | undefined;
  const warmup = new ClosedLoop(connections, cfg.stallMs, cfg.maxRequests, (response) => {
    sample = response;
  });
  await runBounded(warmup, cfg, cfg.warmupMs);
  if (warmup.count === 0 || sample === undefined) {
    throw new Error(`every warm-up request failed (${warmup.errors}): ${[...warmup.errorSamples].join('; ')}`);
  }
  const messages = grpcMessages(sample);
  if (messages.length !== 1) throw new Error(`a unary answer has ${messages.length} gRPC messages`);
  process.send!({ type: 'ready', info: new Uint8Array(messages[0]!) });
  await started;

  const loop = new ClosedLoop(connections, cfg.stallMs, cfg.maxRequests);
  const t0 = performance.now();
  await runBounded(loop, cfg, cfg.durationMs);
  const result: LoaderResult = {
    latenciesMs: loop.latencies.slice(0, Math.min(loop.count, loop.latencies.length)),
    errors: loop.errors,
    errorSamples: [...loop.errorSamples],
    elapsedMs: Math.max(0, loop.lastDoneMs - t0),
    sampleResponse: new Uint8Array(messages[0]!),
  };
  for (const connection of connections) connection.close();
  process.send!({ type: 'done', result }, () => process.exit(0));
}
