// The serve benchmark's load generator: one pre-encoded gRPC request body
// (the length-prefixed ModelInfer bytes, encoded once by the suite) on N
// streams kept in flight over one or a few HTTP/2 connections (closed loop).
// The loop itself is `hotpath perf`'s (src/perf/load-loop.ts, through
// LoadLoop.over): this file only opens the connections, warms up, and
// reports in the suite's terms. No grpc-js and no protobuf on the hot path,
// so the client's CPU per request stays small next to the server's on a
// machine they share. Two clients:
//   raw         (default) pre-encoded HTTP/2 frames on a TCP socket
//               (h2-raw-session.ts): a few µs of CPU per request;
//   node-http2  node:http2's client: simpler, but it costs about as much CPU
//               per request as the echo server (a stream object, listeners
//               and an async resource each), which understates fast servers.
//
// Per request the loop records the round trip (hrtime, from sending the
// headers to the trailers) and checks the HTTP status and grpc-status
// (trailers, or the headers of a trailers-only answer). It warms up (one
// probe request whose answer is the `ready` message's sample, then the
// closed loop for warmupMs), says `ready`, waits for `go`, measures one
// window of durationMs, sends its latencies back and exits. Everything is
// bounded: requests still open `stallMs` after the window count as errors.
import http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';

import { parentChannel } from './child-process.js';
import { RawH2Session } from '../../src/perf/h2-raw-session.js';
import { grpcMessages, GRPC_REQUEST_HEADERS } from '../../src/perf/grpc-frames.js';
import { LoadLoop, type RequestSender } from '../../src/perf/load-loop.js';
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

function nodeConnection(session: http2.ClientHttp2Session, cfg: LoaderConfig, body: Buffer): RequestSender {
  const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': cfg.path, ...GRPC_REQUEST_HEADERS };
  return {
    request(done: (outcome: Outcome) => void, capture = false) {
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

async function connect(cfg: LoaderConfig, body: Buffer): Promise<RequestSender> {
  if (cfg.client === 'node-http2') return nodeConnection(await connectNode(cfg.address), cfg, body);
  return RawH2Session.connect(cfg.address, cfg.path, GRPC_REQUEST_HEADERS, body);
}

/** grpc-message is percent-encoded; a malformed one is shown as sent. */
function unescapeMessage(message: string): string {
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
}

async function main(cfg: LoaderConfig): Promise<void> {
  const body = Buffer.from(cfg.body.buffer, cfg.body.byteOffset, cfg.body.byteLength);
  const senders = await Promise.all(Array.from({ length: Math.max(1, cfg.connections) }, () => connect(cfg, body)));
  const loop = LoadLoop.over(senders);

  const probe = await loop.probe();
  if (!probe.ok || probe.body === undefined) throw new Error(`the first request failed: ${probe.description}`);
  const messages = grpcMessages(probe.body);
  if (messages.length !== 1) throw new Error(`a unary answer has ${messages.length} gRPC messages`);
  loop.setConcurrency(cfg.concurrency);
  await sleep(cfg.warmupMs);
  // A cold server may answer nothing within warmupMs: the warm-up lasts until an answer came, or stallMs more.
  let warmup = loop.takeWindow();
  const giveUpAt = Date.now() + cfg.stallMs;
  while (warmup.latenciesUs.length === 0 && warmup.errors === 0 && Date.now() < giveUpAt) {
    await sleep(50);
    warmup = loop.takeWindow();
  }
  if (warmup.latenciesUs.length === 0) {
    throw new Error(`no warm-up request succeeded (${warmup.errors} failed): ${[...warmup.errorSamples.keys()].join('; ')}`);
  }
  process.send!({ type: 'ready', info: new Uint8Array(messages[0]!) });
  await started;

  loop.startWindow();
  await sleep(cfg.durationMs);
  const window = loop.takeWindow();
  await loop.drain(cfg.stallMs);
  const stalled = loop.inFlight;
  const samples = [...window.errorSamples.keys()];
  if (stalled > 0) samples.push(`${stalled} request(s) still open ${cfg.stallMs} ms after the end`);
  // The loop keeps every latency of the window; maxRequests bounds what travels back to the suite.
  const latenciesMs = window.latenciesUs.subarray(0, Math.min(window.latenciesUs.length, cfg.maxRequests)).map((us) => us / 1000);
  const result: LoaderResult = {
    latenciesMs,
    errors: window.errors + stalled,
    errorSamples: samples.slice(0, 5),
    elapsedMs: window.elapsedMs,
    sampleResponse: new Uint8Array(messages[0]!),
  };
  loop.close();
  process.send!({ type: 'done', result }, () => process.exit(0));
}
