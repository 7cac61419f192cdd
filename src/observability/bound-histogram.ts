/**
 * Prometheus histograms for the request path: each label set is bound once
 * (a model version's, when its plan is built) to a series that an
 * observation updates with a few plain writes, and the counts reach
 * prom-client's Registry only when it is scraped.
 *
 * Why not prom-client's Histogram: its bound child (`labels(...)`) still
 * validates the labels, hashes them into a string and turns the bucket's
 * bound into a property name on every observation (prom-client 15,
 * lib/histogram.js), about 2 µs of the main thread each at 64 streams, and
 * the request path makes three per request. The exposition stays
 * prom-client's: a BoundHistogram is registered in the server's Registry
 * (`registerMetric`) and its `get()` gives the values prom-client's own
 * Histogram gives, in its order and with its labels (each bucket cumulative
 * with `le` first, then `+Inf`, `_sum` and `_count`; a label set appears once
 * it has an observation; series kept until `reset()`), so the scrape text is
 * the same line for line, as long as `bind()` gets its labels in
 * `labelNames` order (prom-client prints the first observer's key order) and
 * the registry sets no default labels (prom-client would print them first).
 *
 * Binding the same label values twice gives the same series (a reloaded
 * version continues its predecessor's, as prom-client's hash would).
 *
 * Threads. Made with `shards` > 1 (1 + front-door threads), a series keeps
 * its counts in a SharedArrayBuffer, one window (shard) per writing thread:
 * shard 0 is the thread that bound it (the main thread, which also scrapes),
 * shards 1..N are front-door threads', each writing through a HistogramShard
 * made from `share()`'s plain data (no Registry, no prom-client on that
 * thread). One writer per shard, so an observation is two plain float64
 * writes; the scrape sums the shards at the moment of the call. A shard
 * holds each bucket's count (the last one above every bound) and the sum;
 * `_count` and `+Inf` are the buckets' total, so they can never disagree with
 * the buckets. What a scrape can see of an observation another thread is
 * making at that moment is inference-statistics.ts's file comment: one
 * finished before the scrape is in it whole; one in progress may show its
 * sum without its bucket for that scrape (the sum is written first).
 * Summing shards adds the same values in another order than one thread
 * would, so `_sum` may differ from a one-thread sum in its last bits.
 *
 * A label set appears once the total over shards has an observation: at
 * once for the binding thread's observation, at the next scrape for a door
 * thread's (after the sets already shown, in bind order).
 *
 * Otherwise not thread-safe: binding, `get()` and `reset()` belong to the
 * thread that made the histogram.
 */
import type { Metric, MetricObjectWithValues, MetricValueWithName, Registry } from 'prom-client';

/**
 * One shardable series' storage, for a HistogramShard on another thread:
 * plain data (structured-clonable; the buffer is shared, not copied).
 */
export interface SharedHistogramSeries {
  /** The histogram's name (for messages). */
  readonly name: string;
  readonly buffer: SharedArrayBuffer;
  /** Upper bounds, ascending. */
  readonly bounds: readonly number[];
  readonly shards: number;
  /** Float64 cells per shard: bounds.length + 1 bucket counts, the sum, padding to a 64-byte line. */
  readonly stride: number;
}

/** 8 float64 cells: one 64-byte cache line, so two threads' shards never share one. */
const LINE = 8;

function strideOf(bounds: readonly number[]): number {
  return Math.ceil((bounds.length + 2) / LINE) * LINE;
}

/** The bucket of `value`, as prom-client picks it: the first bound it does not exceed (bounds.length: above all). */
function bucketOf(bounds: readonly number[], value: number): number {
  // prom-client refuses these the same way; no bucket could hold them.
  if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
  let bucket = 0;
  while (bucket < bounds.length && value > bounds[bucket]!) bucket += 1;
  return bucket;
}

/** One label set's counts. */
export class HistogramSeries {
  /** The binding thread's shard: observations per bucket (not cumulative; the last above every bound), then the sum. */
  private readonly own: Float64Array;
  /** Every shard, for the scrape. */
  private readonly all: Float64Array;
  private readonly stride: number;
  /** The sum's cell, after the buckets. */
  private readonly sumCell: number;
  private readonly shared: SharedHistogramSeries | undefined;
  /**
   * The other shards' values at the last reset(), subtracted at scrape:
   * another thread writes those shards, so they cannot be zeroed under it.
   * Undefined until a reset.
   */
  private othersAtReset: Float64Array | undefined;
  /** In the exposition: observed since the last reset (set by its histogram). */
  listed = false;

  constructor(
    private readonly owner: BoundHistogram,
    /** The label values, frozen: read by every scrape. */
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
    readonly shards = 1,
  ) {
    this.stride = strideOf(bounds);
    this.sumCell = bounds.length + 1;
    const bytes = shards * this.stride * Float64Array.BYTES_PER_ELEMENT;
    const buffer = shards === 1 ? new ArrayBuffer(bytes) : new SharedArrayBuffer(bytes);
    this.all = new Float64Array(buffer);
    this.own = this.all.subarray(0, this.stride);
    this.shared = buffer instanceof SharedArrayBuffer ? { name: owner.name, buffer, bounds, shards, stride: this.stride } : undefined;
  }

  /** Counts `value` in its bucket, as prom-client does: the first bound it does not exceed. */
  observe(value: number): void {
    const bucket = bucketOf(this.bounds, value);
    if (!this.listed) this.owner.observed(this);
    const own = this.own;
    own[this.sumCell]! += value;
    own[bucket]! += 1;
  }

  /** The storage and layout for `new HistogramShard(…)` on a front-door thread (made with shards >= 2). */
  share(): SharedHistogramSeries {
    if (this.shared === undefined) {
      throw new Error(`histogram ${this.owner.name}: made with shards 1, so there is no shard for another thread (shards = 1 + front-door threads)`);
    }
    return this.shared;
  }

  /** Every shard summed: observations at or below each bound (cumulative, bound order), their total and sum. */
  read(): { cumulative: number[]; count: number; sum: number } {
    const cumulative = new Array<number>(this.bounds.length);
    // Buckets before the sum (see the file comment).
    let count = 0;
    for (let i = 0; i < this.bounds.length; i += 1) {
      count += this.total(i);
      cumulative[i] = count;
    }
    count += this.total(this.bounds.length);
    return { cumulative, count, sum: this.total(this.bounds.length + 1) };
  }

  /**
   * Empties the series for the scrape (reset()). An observation a door
   * thread is making at that moment may be half in what is subtracted; reset
   * is for tests and operators, never the serving path.
   */
  clear(): void {
    this.own.fill(0);
    if (this.shards > 1) {
      const others = new Float64Array(this.stride);
      for (let at = this.stride; at < this.all.length; at += 1) others[at % this.stride]! += this.all[at]!;
      this.othersAtReset = others;
    }
    this.listed = false;
  }

  /** One cell summed over the shards, less what the other shards held at the last reset. */
  private total(cell: number): number {
    let sum = this.othersAtReset === undefined ? 0 : -this.othersAtReset[cell]!;
    for (let at = cell; at < this.all.length; at += this.stride) sum += this.all[at]!;
    return sum;
  }
}

/**
 * A front-door thread's writer on one shard (1..shards-1) of a series another
 * thread bound and shared: needs no Registry and no prom-client. The binding
 * thread's scrape reads it.
 */
export class HistogramShard {
  private readonly own: Float64Array;
  private readonly bounds: readonly number[];
  private readonly sumCell: number;

  constructor(shared: SharedHistogramSeries, shard: number) {
    const where = `HistogramShard (${shared.name})`;
    if (!(shared.buffer instanceof SharedArrayBuffer)) throw new TypeError(`${where}: buffer must be a SharedArrayBuffer, got ${typeof shared.buffer}`);
    if (!Number.isInteger(shared.shards) || shared.shards < 2) throw new RangeError(`${where}: shards must be an integer >= 2, got ${shared.shards}`);
    if (!Number.isInteger(shard) || shard < 1 || shard >= shared.shards) {
      throw new RangeError(`${where}: shard must be an integer from 1 to ${shared.shards - 1} (shard 0 is the binding thread's), got ${shard}`);
    }
    const stride = strideOf(shared.bounds);
    if (shared.stride !== stride) throw new RangeError(`${where}: stride must be ${stride} for ${shared.bounds.length} bounds, got ${shared.stride}`);
    const bytes = shared.shards * stride * Float64Array.BYTES_PER_ELEMENT;
    if (shared.buffer.byteLength !== bytes) throw new RangeError(`${where}: buffer must be ${bytes} bytes (${shared.shards} shards of ${stride} cells), got ${shared.buffer.byteLength}`);
    this.own = new Float64Array(shared.buffer, shard * stride * Float64Array.BYTES_PER_ELEMENT, stride);
    this.bounds = shared.bounds;
    this.sumCell = shared.bounds.length + 1;
  }

  /** Counts `value` in its bucket (as HistogramSeries.observe), in this thread's shard. */
  observe(value: number): void {
    const bucket = bucketOf(this.bounds, value);
    const own = this.own;
    own[this.sumCell]! += value;
    own[bucket]! += 1;
  }
}

export interface BoundHistogramOptions {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  /** Upper bounds, ascending (a `+Inf` bucket is always added). */
  readonly buckets: readonly number[];
  readonly registry: Registry;
  /** Writing threads per series: 1 (the binding thread) + front-door threads. Default 1. */
  readonly shards?: number;
}

export class BoundHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  /** prom-client's aggregation for histograms across a cluster's workers. */
  readonly aggregator = 'sum';
  private readonly labelNames: readonly string[];
  private readonly bounds: readonly number[];
  /** Every bound label set, by its values. */
  private readonly series = new Map<string, HistogramSeries>();
  /** The label sets with an observation, in the order of their first (prom-client's exposition order). */
  private shown: HistogramSeries[] = [];
  /** Writing threads per series (see the file comment). */
  private readonly shards: number;

  constructor(options: BoundHistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = [...options.labelNames];
    this.bounds = [...options.buckets];
    this.shards = options.shards ?? 1;
    if (!Number.isInteger(this.shards) || this.shards < 1) {
      throw new RangeError(`histogram ${this.name}: shards must be an integer >= 1 (1 + front-door threads), got ${this.shards}`);
    }
    for (let i = 1; i < this.bounds.length; i += 1) {
      if (!(this.bounds[i]! > this.bounds[i - 1]!)) throw new Error(`histogram ${this.name}: buckets must ascend`);
    }
    // The Registry's contract is a metric's name, get() and reset(); its type names only prom-client's own classes.
    options.registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels` (exactly the histogram's label names), made on first use. */
  bind(labels: Readonly<Record<string, string>>): HistogramSeries {
    const names = Object.keys(labels);
    if (names.length !== this.labelNames.length || !this.labelNames.every((name) => typeof labels[name] === 'string')) {
      throw new Error(`histogram ${this.name}: labels ${names.join(',')} do not match ${this.labelNames.join(',')}`);
    }
    const key = JSON.stringify(this.labelNames.map((name) => labels[name]));
    let series = this.series.get(key);
    if (series === undefined) {
      const own: Record<string, string> = {};
      for (const name of this.labelNames) own[name] = labels[name]!;
      series = new HistogramSeries(this, Object.freeze(own), this.bounds, this.shards);
      this.series.set(key, series);
    }
    return series;
  }

  /** Called by a series on its first observation: from then on it is exported. */
  observed(series: HistogramSeries): void {
    series.listed = true;
    this.shown.push(series);
  }

  /** The scrape's values, as prom-client's Histogram gives them (see the file comment). */
  async get(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    const values: MetricValueWithName<string>[] = [];
    const bucket = `${this.name}_bucket`;
    // Series only front-door threads observed so far: shown from the scrape that first sees them.
    if (this.shards > 1) {
      for (const series of this.series.values()) if (!series.listed && series.read().count > 0) this.observed(series);
    }
    for (const series of this.shown) {
      const { cumulative, count, sum } = series.read();
      for (let i = 0; i < this.bounds.length; i += 1) {
        values.push({ labels: { le: this.bounds[i]!, ...series.labels }, value: cumulative[i]!, metricName: bucket });
      }
      values.push(
        { labels: { le: '+Inf', ...series.labels }, value: count, metricName: bucket },
        { labels: { ...series.labels }, value: sum, metricName: `${this.name}_sum` },
        { labels: { ...series.labels }, value: count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type as never, aggregator: this.aggregator, values, collect: () => {} };
  }

  /** Empties every series (prom-client's reset: the label sets are shown again once observed). */
  reset(): void {
    for (const series of this.series.values()) series.clear();
    this.shown = [];
  }
}
