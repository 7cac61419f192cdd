// What the serve benchmark's child processes and the suite say to each other
// over the IPC channel (advanced serialization, so typed arrays travel as is).
import type { InferShape } from './infer-client.js';

export type LoadShape =
  | { readonly kind: 'closed'; readonly concurrency: number }
  | { readonly kind: 'open'; readonly ratePerSecond: number; readonly seed: number };

export interface LoaderConfig {
  readonly address: string;
  readonly infer: InferShape;
  readonly load: LoadShape;
  /** Closed loop at the same concurrency (open loop: 4 in flight) before `ready`; not measured. */
  readonly warmupMs: number;
  /** Closed loop: no new request after this; open loop: the schedule's length. */
  readonly durationMs: number;
  /** Hard cap on measured requests from this process. */
  readonly maxRequests: number;
  /** Open loop: a scheduled request finding this many in flight is dropped (counted, not sent). */
  readonly maxInFlight: number;
  /** gRPC deadline of every request. */
  readonly deadlineMs: number;
  readonly seed: number;
}

export interface LoaderResult {
  /** Per successful request, ms from its send (closed) or scheduled send (open) time to its response. */
  readonly latenciesMs: Float64Array;
  readonly errors: number;
  /** Up to 5 distinct error messages. */
  readonly errorSamples: readonly string[];
  readonly dropped: number;
  /** From `go` to the last response. */
  readonly elapsedMs: number;
  /** Open loop: how late requests left compared to their schedule (p99, ms). */
  readonly sendLagP99Ms: number | null;
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

export type ToChild = { readonly type: 'start'; readonly config: unknown } | { readonly type: 'go' };

export type FromChild =
  | { readonly type: 'ready' }
  | { readonly type: 'done'; readonly result: unknown }
  | { readonly type: 'error'; readonly message: string };
