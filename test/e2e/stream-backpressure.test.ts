/**
 * Issue 21 item 5: ModelStreamInfer has backpressure. A client that keeps
 * writing requests while advertising an HTTP/2 window of 0 (it takes no
 * answer) makes the server stop reading the stream: pending work per stream
 * is bounded (handlers/model-stream-infer.ts), the server's heap stays flat,
 * and what the client can send stalls. The stream is not refused: once the
 * client opens its window, every request it sent is answered without an
 * error and the stream ends OK.
 *
 * The client is raw node:http2 (grpc-js's client reads answers into its own
 * memory whether or not the application reads them, so it never holds its
 * window at 0). The row runs the probe for 20-30 s; this test runs it
 * for HOTPATH_STREAM_PROBE_S seconds (default 8; `HOTPATH_STREAM_PROBE_S=25`
 * for the row).
 */
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { scrape } from './helpers/probes.js';
import { MiB } from './helpers/process-memory.js';
import { inferRequestBytes } from './helpers/raw-grpc.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { f32Bytes } from './helpers/triton-client.js';

const PROBE_S = Number(process.env['HOTPATH_STREAM_PROBE_S'] ?? 8);
let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository((dir) => writeIdentityModel(dir, { name: 'identity', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] })),
  );
});

afterAll(() => served?.close());

const heapUsed = async () => (await scrape(served.server.metricsPort)).get('nodejs_heap_size_used_bytes')!;

/** One gRPC length-prefixed message. */
function framed(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5); // uncompressed, then the length
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** The gRPC messages in `bytes` (length-prefixed, back to back). */
function messages(bytes: Buffer): Buffer[] {
  const found: Buffer[] = [];
  for (let at = 0; at + 5 <= bytes.length; ) {
    const length = bytes.readUInt32BE(at + 1);
    found.push(bytes.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return found;
}

describe('ModelStreamInfer backpressure', () => {
  it(`a client with a window of 0 that keeps writing for ${PROBE_S} s: heap rise < 64 MiB, the stream is not refused`, async () => {
    const request = framed(
      inferRequestBytes('identity', { name: 'INPUT0', datatype: 'FP32', shape: [64], raw: f32Bytes(new Float32Array(64).fill(1)) }),
    );
    const baseline = await heapUsed();
    let peak = baseline;
    // Window 0: the server may send headers but no answer until the client opens it.
    const session = http2.connect(`http://${served.server.grpcAddress}`, { settings: { initialWindowSize: 0 } });
    const stream = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelStreamInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const received: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => received.push(chunk));
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once('trailers', resolve));
    let written = 0;
    let writing = true;
    const write = () => {
      while (writing) {
        written += 1;
        if (!stream.write(request)) return; // wait for 'drain'
      }
    };
    stream.on('drain', write);
    write();
    const progress: number[] = [];
    const until = performance.now() + PROBE_S * 1000;
    while (performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      peak = Math.max(peak, await heapUsed());
      progress.push(written);
    }
    writing = false;
    const rise = peak - baseline;
    // The client's writes stalled: the server stopped reading.
    const lastSecond = progress.at(-1)! - progress.at(-3)!;

    // Open the window and read: everything sent is answered, the stream ends OK.
    session.settings({ initialWindowSize: 1 << 20 });
    stream.end();
    const ended = await trailers;
    await new Promise((resolve) => stream.once('close', resolve));
    session.close();
    const answers = messages(Buffer.concat(received));
    console.log(
      `window 0 for ${PROBE_S} s: ${written} requests written (${lastSecond} in the last second), ` +
        `heap ${(baseline / MiB).toFixed(1)} -> peak ${(peak / MiB).toFixed(1)} MiB (rise ${(rise / MiB).toFixed(1)} MiB)`,
    );
    expect(ended['grpc-status']).toBe('0');
    expect(answers.length).toBe(written);
    // ModelStreamInferResponse: field 1 is error_message, field 2 infer_response; every answer is field 2 alone.
    expect(answers.filter((answer) => answer[0] !== 0x12)).toEqual([]);
    expect(lastSecond).toBe(0);
    expect(rise).toBeLessThan(64 * MiB);
  }, 60_000 + PROBE_S * 2000);
});
