/**
 * BoundHistogram against prom-client's own Histogram: the same observations
 * must scrape to the same text, line for line (buckets, +Inf, sum, count,
 * label order, the order series first appear, reset).
 */
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BoundHistogram } from '../../src/observability/bound-histogram.js';

const BUCKETS = [0.1, 0.25, 1, 5];
const LABELS = ['model', 'version', 'tenant'];

function pair() {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({ name: 'x_ms', help: 'Some latency (ms).', labelNames: LABELS, buckets: BUCKETS, registers: [theirs] });
  const bound = new BoundHistogram({ name: 'x_ms', help: 'Some latency (ms).', labelNames: LABELS, buckets: BUCKETS, registry: ours });
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
});
