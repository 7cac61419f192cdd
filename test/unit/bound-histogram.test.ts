/**
 * BoundHistogram against prom-client's own Histogram: the same observations
 * must scrape to the same text, line for line (buckets, +Inf, sum, count,
 * label order, the order series first appear, reset).
 */
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BoundHistogram, HistogramShard } from '../../src/observability/bound-histogram.js';

const BUCKETS = [0.1, 0.25, 1, 5];
const LABELS = ['model', 'version', 'tenant'];

function pair(shards = 1) {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({ name: 'x_ms', help: 'Some latency (ms).', labelNames: LABELS, buckets: BUCKETS, registers: [theirs] });
  const bound = new BoundHistogram({ name: 'x_ms', help: 'Some latency (ms).', labelNames: LABELS, buckets: BUCKETS, registry: ours, shards });
  return { theirs, ours, reference, bound };
}

describe('BoundHistogram', () => {
  it('scrapes to the text prom-client gives for the same observations', async () => {
    const { theirs, ours, reference, bound } = pair();
    const a = { model: 'ctr', version: '1', tenant: 'ads' };
    const b = { model: 'rank"er', version: '2', tenant: '' };
    // b is bound first but observed second: series show in the order of their first observation.
    const boundB = bound.bind(b);
    const boundA = bound.bind(a);
    const refA = reference.labels(a);
    const refB = reference.labels(b);
    for (const value of [0, 0.1, 0.1000001, 0.3, 1, 4.99, 5, 7, 1e9, 0.07]) {
      boundA.observe(value);
      refA.observe(value);
    }
    boundB.observe(0.25);
    refB.observe(0.25);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('shows nothing for a bound label set never observed, shares a series among equal labels, and resets like prom-client', async () => {
    const { theirs, ours, reference, bound } = pair();
    const labels = { model: 'ctr', version: '1', tenant: 'ads' };
    bound.bind({ model: 'idle', version: '1', tenant: 'ads' });
    expect(await ours.metrics()).toBe(await theirs.metrics());
    bound.bind(labels).observe(2);
    bound.bind({ ...labels }).observe(3);
    reference.observe(labels, 2);
    reference.observe(labels, 3);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    bound.bind(labels).observe(0.5);
    reference.observe(labels, 0.5);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('refuses labels that are not its own, and values no bucket can hold', () => {
    const { bound } = pair();
    expect(() => bound.bind({ model: 'ctr', version: '1' })).toThrow(/do not match model,version,tenant/);
    expect(() => bound.bind({ model: 'ctr', version: '1', tenant: 'ads' }).observe(Number.NaN)).toThrow(TypeError);
  });

  // Values whose sums are exact in float64 (multiples of 1/64), so adding
  // them shard by shard gives prom-client's one-thread sum to the last bit.
  const SPLIT = [0, 0.125, 0.25, 0.375, 1, 4.5, 5, 7.25, 1e9, 0.0625, 2, 3];

  it('scrapes observations split over two shards to the text prom-client gives when fed all of them', async () => {
    const { theirs, ours, reference, bound } = pair(2);
    const a = { model: 'ctr', version: '1', tenant: 'ads' };
    const b = { model: 'ranker', version: '2', tenant: '' };
    const mainA = bound.bind(a);
    const doorA = new HistogramShard(mainA.share(), 1);
    const mainB = bound.bind(b);
    const doorB = new HistogramShard(mainB.share(), 1);
    SPLIT.forEach((value, i) => {
      (i % 3 === 0 ? mainA : doorA).observe(value);
      reference.observe(a, value);
    });
    doorB.observe(0.25);
    mainB.observe(6);
    reference.observe(b, 0.25);
    reference.observe(b, 6);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('shows a label set only door threads observed from the next scrape on, after those already shown', async () => {
    const { theirs, ours, reference, bound } = pair(3);
    const doorOnly = { model: 'door', version: '1', tenant: 'ads' };
    const mainToo = { model: 'main', version: '1', tenant: 'ads' };
    const door = new HistogramShard(bound.bind(doorOnly).share(), 2);
    bound.bind({ model: 'idle', version: '1', tenant: 'ads' });
    expect(await ours.metrics()).toBe(await theirs.metrics());
    door.observe(0.5);
    bound.bind(mainToo).observe(2);
    reference.observe(mainToo, 2);
    reference.observe(doorOnly, 0.5);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    door.observe(9);
    reference.observe(doorOnly, 9);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('resets door shards it cannot zero by subtracting them, like prom-client resets', async () => {
    const { theirs, ours, reference, bound } = pair(2);
    const labels = { model: 'ctr', version: '1', tenant: 'ads' };
    const series = bound.bind(labels);
    const door = new HistogramShard(series.share(), 1);
    for (const value of SPLIT) door.observe(value);
    series.observe(1);
    ours.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    door.observe(0.25);
    series.observe(4);
    door.observe(8);
    for (const value of [0.25, 4, 8]) reference.observe(labels, value);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('refuses a shard that is not a door thread\'s, shared data that does not fit, and sharing a one-thread series', () => {
    const { bound } = pair(2);
    const shared = bound.bind({ model: 'ctr', version: '1', tenant: 'ads' }).share();
    expect(() => new HistogramShard(shared, 0)).toThrow(/HistogramShard \(x_ms\): shard must be an integer from 1 to 1 \(shard 0 is the binding thread's\), got 0/);
    expect(() => new HistogramShard({ ...shared, stride: 16 }, 1)).toThrow(/stride must be 8 for 4 bounds, got 16/);
    expect(() => new HistogramShard({ ...shared, shards: 3 }, 1)).toThrow(/buffer must be 192 bytes \(3 shards of 8 cells\), got 128/);
    expect(() => new HistogramShard(shared, 1).observe(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => pair(1).bound.bind({ model: 'ctr', version: '1', tenant: 'ads' }).share()).toThrow(/x_ms: made with shards 1/);
    expect(() => pair(0)).toThrow(/shards must be an integer >= 1 \(1 \+ front-door threads\), got 0/);
  });
});

