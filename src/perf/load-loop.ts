/**
 * `hotpath perf`'s load generator (and the serve benchmark's, through
 * `LoadLoop.over`). Closed loop: `concurrency` requests in
 * flight at all times, spread round-robin over `connections` raw HTTP/2
 * connections (h2-raw-session.ts: pre-encoded frames, no per-request
 * encoding), or over a pool of HTTP/1.1 connections for `-i http`
 * (http1-pool.ts: the same pre-encoded idea, one request per connection at a
 * time), each answered request replaced at once by the next. Or open
 * loop (`setRate`): requests leave on a schedule, constant gaps or Poisson
 * arrivals, whatever the answers do, and latency counts from each request's
 * scheduled time, so a sender or server that falls behind shows as latency
 * rather than as a thinner load (no coordinated omission). Completions
 * are recorded (latency from the request's write, or its scheduled time, to
 * its trailers) and read out per measurement window with `takeWindow`.
 *
 * One process, one thread: everything here runs on the event loop of the
 * process that created it, and nothing is shared. The generator's own CPU
 * is measured per window (process.cpuUsage), so a window where the client
 * used most of its one core is flagged as client-bound.
 */
import type { ConnectionOptions } from 'node:tls';
import { GRPC_REQUEST_HEADERS, MODEL_INFER_PATH } from './grpc-frames.js';
import { RawH2Session, type StreamCallback, type StreamOutcome } from './h2-raw-session.js';
import { Http1Pool, http1Request } from './http1-pool.js';

/** What one window saw. */
export interface WindowRecord {
  /** Per successful request completed in the window, latency in µs. */
  readonly latenciesUs: Float64Array;
  /** Requests that completed in the window with an error (not grpc-status 0, reset, connection lost). */
  readonly errors: number;
  /** Up to 5 distinct error descriptions, with their counts. */
  readonly errorSamples: ReadonlyMap<string, number>;
  readonly elapsedMs: number;
  /** The generator's CPU time (user + system) over the window, as a share of one core (1 = 100%). */
  readonly clientCpu: number;
}

export interface LoadLoopOptions {
  /** host:port of the server: plaintext, or TLS with `tls`. */
  readonly address: string;
  /**
   * gRPC: HTTP/2 connections the streams are spread over. HTTP: the
   * connections opened first; the pool opens one more per request in flight
   * beyond them (HTTP/1.1 carries one request at a time).
   */
  readonly connections: number;
  /** gRPC: one length-prefixed ModelInfer request; HTTP: the infer body. Sent as is by every request. */
  readonly body: Uint8Array;
  /** HTTP/REST instead of gRPC: the infer route and the body's JSON header length (binary tensor extension). */
  readonly http?: { readonly path: string; readonly jsonLength: number };
  /** Extra request headers (e.g. authorization), sent with every request. */
  readonly headers?: Readonly<Record<string, string>>;
  /** TLS (roots, client certificate, server name); absent: plaintext. */
  readonly tls?: ConnectionOptions;
}

/** What the command drives: this in-process loop, or the same loop in child processes (load-processes.ts). */
export interface LoadGenerator {
  setConcurrency(concurrency: number): void;
  /** Open loop: `perSecond` requests a second from now on, until `drain`. */
  setRate(perSecond: number, distribution: RequestDistribution): void;
  /** Window edges are process.hrtime instants (default now), shared by every process on the host. */
  startWindow(atNs?: bigint): void;
  takeWindow(atNs?: bigint): Promise<WindowRecord> | WindowRecord;
  drain(timeoutMs: number): Promise<void>;
  close(): void;
}

export type RequestDistribution = 'constant' | 'poisson';

/** What the loop sends on: an HTTP/2 connection, an HTTP/1.1 pool, or a benchmark's own client. */
export interface RequestSender {
  /** Sends the one request; `callback` runs once when it ends (also when the connection fails). */
  request(callback: StreamCallback, capture?: boolean): void;
  close(): void;
}

const MAX_ERROR_SAMPLES = 5;
/** How often the open loop's scheduler wakes; each wake sends every request that is due. */
const RATE_TICK_MS = 1;

export class LoadLoop implements LoadGenerator {
  private target = 0;
  private pending = 0;
  private next = 0;
  /**
   * Completions not yet taken, in the order they ended: end time (hrtime ns,
   * as a number: exact below 2^53 ns, about 104 days of uptime), latency in
   * µs (successes), and the error's description (undefined for a success).
   */
  private ends: number[] = [];
  private latencies: number[] = [];
  private errorTexts: (string | undefined)[] = [];
  private windowStartNs = process.hrtime.bigint();
  private windowCpu = process.cpuUsage();
  private drained: (() => void) | undefined;
  /** Open loop only: the scheduler (it keeps the next request's due time itself). */
  private rateTimer: NodeJS.Timeout | undefined;

  private constructor(private readonly sessions: readonly RequestSender[]) {}

  /** Opens the connections (HTTP/2: each waits for the server's SETTINGS ACK); sends nothing yet. */
  static async open(options: LoadLoopOptions): Promise<LoadLoop> {
    if (options.http !== undefined) {
      const request = http1Request(options.address, options.http.path, options.headers ?? {}, options.body, options.http.jsonLength);
      return new LoadLoop([await Http1Pool.open(options.address, request, options.connections, options.tls)]);
    }
    const headers = { ...GRPC_REQUEST_HEADERS, ...options.headers };
    const sessions = await Promise.all(
      Array.from({ length: options.connections }, () => RawH2Session.connect(options.address, MODEL_INFER_PATH, headers, options.body, 10_000, options.tls)),
    );
    return new LoadLoop(sessions);
  }

  /** A loop over senders the caller opened (the benchmark's clients); `close` closes them. */
  static over(senders: readonly RequestSender[]): LoadLoop {
    if (senders.length === 0) throw new Error('a load loop needs at least one sender');
    return new LoadLoop(senders);
  }

  /**
   * Sends one request outside the loop's accounting and resolves with how it
   * ended, its body included (a benchmark checks the first answer this way).
   */
  probe(): Promise<StreamOutcome> {
    return new Promise((resolve) => this.sessions[0]!.request(resolve, true));
  }

  /** Requests sent and not yet answered (after `drain`'s timeout: the ones that stalled). */
  get inFlight(): number {
    return this.pending;
  }

  /** Keeps `concurrency` requests in flight from now on (more start at once; fewer as answers come back). */
  setConcurrency(concurrency: number): void {
    this.target = concurrency;
    while (this.pending < this.target) this.send();
  }

  /**
   * Open loop at `perSecond` requests a second: constant gaps, or
   * exponential ones (Poisson arrivals). Replaces a closed loop's target.
   */
  setRate(perSecond: number, distribution: RequestDistribution): void {
    this.target = 0;
    this.stopRate();
    const meanGapNs = 1e9 / perSecond;
    const gap = distribution === 'constant' ? () => meanGapNs : () => -Math.log(1 - Math.random()) * meanGapNs;
    let dueNs = Number(process.hrtime.bigint()) + gap();
    this.rateTimer = setInterval(() => {
      const now = Number(process.hrtime.bigint());
      while (dueNs <= now) {
        this.send(BigInt(Math.round(dueNs)));
        dueNs += gap();
      }
    }, RATE_TICK_MS);
  }

  /**
   * Starts a new window at `atNs` (process.hrtime, default now): what
   * completes from then on counts in the next `takeWindow`. Window edges are
   * instants on the monotonic clock, which every process on the host shares,
   * so a parent can give its load processes the same edges whenever its
   * message arrives, and the edges match its ModelStatistics calls.
   */
  startWindow(atNs: bigint = process.hrtime.bigint()): void {
    const start = Number(atNs);
    // Completions are recorded in the order they end: what ended before the edge is a prefix.
    let first = 0;
    while (first < this.ends.length && this.ends[first]! < start) first += 1;
    this.ends.splice(0, first);
    this.latencies.splice(0, first);
    this.errorTexts.splice(0, first);
    this.windowStartNs = atNs;
    this.windowCpu = process.cpuUsage();
  }

  /** The window from `startWindow` to `atNs` (default now); what ended after `atNs` is kept for the next one. */
  takeWindow(atNs: bigint = process.hrtime.bigint()): WindowRecord {
    const end = Number(atNs);
    let count = 0;
    while (count < this.ends.length && this.ends[count]! <= end) count += 1;
    const latencies: number[] = [];
    const samples = new Map<string, number>();
    let errors = 0;
    for (let i = 0; i < count; i += 1) {
      const text = this.errorTexts[i];
      if (text === undefined) {
        latencies.push(this.latencies[i]!);
        continue;
      }
      errors += 1;
      const seen = samples.get(text);
      if (seen !== undefined) samples.set(text, seen + 1);
      else if (samples.size < MAX_ERROR_SAMPLES) samples.set(text, 1);
    }
    const cpu = process.cpuUsage(this.windowCpu);
    const elapsedMs = Number(atNs - this.windowStartNs) / 1e6;
    const cpuElapsedMs = Number(process.hrtime.bigint() - this.windowStartNs) / 1e6;
    this.ends.splice(0, count);
    this.latencies.splice(0, count);
    this.errorTexts.splice(0, count);
    this.windowStartNs = atNs;
    this.windowCpu = process.cpuUsage();
    return {
      latenciesUs: Float64Array.from(latencies),
      errors,
      errorSamples: samples,
      elapsedMs,
      clientCpu: cpuElapsedMs > 0 ? (cpu.user + cpu.system) / 1000 / cpuElapsedMs : 0,
    };
  }

  /** Sends no new request and resolves once every request in flight has ended, or after `timeoutMs`. */
  async drain(timeoutMs: number): Promise<void> {
    this.target = 0;
    this.stopRate();
    if (this.pending === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.drained = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.drained = undefined;
  }

  /** Stops sending for good (answers still in flight are dropped) and closes the connections. */
  close(): void {
    this.target = 0;
    this.stopRate();
    for (const session of this.sessions) session.close();
  }

  private stopRate(): void {
    if (this.rateTimer !== undefined) clearInterval(this.rateTimer);
    this.rateTimer = undefined;
  }

  /** `startNs`: when the request counts from (an open loop's scheduled time); default now. */
  private send(startNs = process.hrtime.bigint()): void {
    const session = this.sessions[this.next]!;
    this.next = (this.next + 1) % this.sessions.length;
    this.pending += 1;
    session.request((outcome) => this.onAnswer(startNs, outcome));
  }

  private onAnswer(startNs: bigint, outcome: StreamOutcome): void {
    this.pending -= 1;
    // A request answered before the window started (sent in the previous one) still counts where it ends, as perf_analyzer's do.
    if (outcome.endNs >= this.windowStartNs) {
      this.ends.push(Number(outcome.endNs));
      this.latencies.push(outcome.ok ? Number(outcome.endNs - startNs) / 1000 : 0);
      this.errorTexts.push(outcome.ok ? undefined : outcome.description);
    }
    if (this.pending < this.target) {
      // After an error, the next request waits a turn of the event loop: a lost
      // connection answers at once, and re-sending in the same microtask chain
      // would starve the timers that end the window.
      if (outcome.ok) this.send();
      else this.resendSoon();
    } else if (this.pending === 0) this.drained?.();
  }

  private resendSoon(): void {
    this.pending += 1;
    setImmediate(() => {
      this.pending -= 1;
      if (this.pending < this.target) this.send();
      else if (this.pending === 0) this.drained?.();
    });
  }
}
