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
 * Not thread-safe, and it need not be: a series belongs to the registry of
 * the one thread that observes and scrapes it (one registry per serving
 * thread).
 */
import type { Metric, MetricObjectWithValues, MetricValueWithName, Registry } from 'prom-client';

/** One label set's counts. */
export class HistogramSeries {
  /** Observations per bucket, not cumulative; the last slot counts those above every bound (only in +Inf). */
  private readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly owner: BoundHistogram,
    /** The label values, frozen: read by every scrape. */
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Counts `value` in its bucket, as prom-client does: the first bound it does not exceed. */
  observe(value: number): void {
    // prom-client refuses these the same way; no bucket could hold them.
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]!) bucket += 1;
    if (this.count === 0) this.owner.observed(this);
    this.counts[bucket]! += 1;
    this.sum += value;
    this.count += 1;
  }

  /** Observations at or below each bound, in bound order (Prometheus's cumulative buckets). */
  cumulative(): number[] {
    const out = new Array<number>(this.bounds.length);
    let total = 0;
    for (let i = 0; i < this.bounds.length; i += 1) {
      total += this.counts[i]!;
      out[i] = total;
    }
    return out;
  }

  clear(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

export interface BoundHistogramOptions {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  /** Upper bounds, ascending (a `+Inf` bucket is always added). */
  readonly buckets: readonly number[];
  readonly registry: Registry;
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

  constructor(options: BoundHistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = [...options.labelNames];
    this.bounds = [...options.buckets];
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
      series = new HistogramSeries(this, Object.freeze(own), this.bounds);
      this.series.set(key, series);
    }
    return series;
  }

  /** Called by a series on its first observation: from then on it is exported. */
  observed(series: HistogramSeries): void {
    this.shown.push(series);
  }

  /** The scrape's values, as prom-client's Histogram gives them (see the file comment). */
  async get(): Promise<MetricObjectWithValues<MetricValueWithName<string>>> {
    const values: MetricValueWithName<string>[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.shown) {
      const cumulative = series.cumulative();
      for (let i = 0; i < this.bounds.length; i += 1) {
        values.push({ labels: { le: this.bounds[i]!, ...series.labels }, value: cumulative[i]!, metricName: bucket });
      }
      values.push(
        { labels: { le: '+Inf', ...series.labels }, value: series.count, metricName: bucket },
        { labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` },
        { labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` },
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
