// What the serve benchmark's child processes and the suite say to each other
// over the IPC channel (advanced serialization, so typed arrays travel as is).
export type LoadShape =
  | { readonly kind: 'closed'; readonly concurrency: number }
  | { readonly kind: 'open'; readonly ratePerSecond: number; readonly seed: number };

export interface LoaderConfig {
  /** host:port of a plaintext HTTP/2 (gRPC) server. */
  readonly address: string;
  /** The HTTP/2 :path of every request. */
  readonly path: string;
  /** raw: pre-encoded HTTP/2 frames on a socket (lean); node-http2: node:http2's client. */
  readonly client: 'raw' | 'node-http2';
  /** The whole request body: one length-prefixed gRPC frame, encoded once and sent as is. */
  readonly body: Uint8Array;
  /** Streams kept in flight (closed loop), spread over `connections`. */
  readonly concurrency: number;
  readonly connections: number;
  /** Closed loop at the same concurrency before `ready`; not measured. */
  readonly warmupMs: number;
  /** No new request after this. */
  readonly durationMs: number;
  /** Cap on the latencies sent back to the suite (the measured window itself is bounded by time). */
  readonly maxRequests: number;
  /** A request still open this long after the measurement ends counts as an error. */
  readonly stallMs: number;
}

export interface LoaderResult {
  /** Per successful request, ms from sending its headers to its trailers (hrtime). */
  readonly latenciesMs: Float64Array;
  /** Requests that ended without grpc-status 0 (or HTTP 200), reset, or stalled. */
  readonly errors: number;
  /** Up to 5 distinct error descriptions. */
  readonly errorSamples: readonly string[];
  /** The measured window, from `go` to durationMs later (answers after it are not counted). */
  readonly elapsedMs: number;
  /** The gRPC message of the first warm-up response, for the suite to check (and echo). */
  readonly sampleResponse: Uint8Array;
}

export interface RawOrtConfig {
  readonly modelPath: string;
  readonly input: string;
  readonly width: number;
  readonly batchSizes: readonly number[];
  /** Concurrent sessions, each on its own thread (the server's instance count). */
  readonly sessions: number;
  readonly intraOpThreads: number;
  readonly warmupRuns: number;
  /** Per batch size. */
  readonly durationMs: number;
  readonly maxRuns: number;
  readonly seed: number;
}

export interface RawOrtPoint {
  readonly batch: number;
  /** Per session.run (tensor creation, run, and reading the output). */
  readonly latenciesMs: Float64Array;
  readonly elapsedMs: number;
}

export type ToChild = { readonly type: 'start'; readonly config: unknown } | { readonly type: 'go' } | { readonly type: 'report' };

export type FromChild =
  | { readonly type: 'ready'; readonly info?: unknown }
  | { readonly type: 'done'; readonly result: unknown }
  | { readonly type: 'error'; readonly message: string };
