import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasDynamicBatching, instanceCount, maxQueueDelayUs, renameModel, withoutDynamicBatching } from '../../bench/load/model-repository.js';
import { splitLoad } from '../../bench/load/trials.js';

const ranker = readFileSync(path.join(import.meta.dirname, '..', '..', 'models', 'ranker_mlp', 'config.pbtxt'), 'utf8');

describe('bench model repository variants', () => {
  it('removes only the dynamic_batching block', () => {
    const off = withoutDynamicBatching(ranker);
    expect(hasDynamicBatching(ranker)).toBe(true);
    expect(hasDynamicBatching(off)).toBe(false);
    expect(off).not.toMatch(/preferred_batch_size|max_queue_delay_microseconds/);
    expect(off).toMatch(/max_batch_size: 128/);
    expect(off).toMatch(/instance_group \[/);
    expect(ranker.split('\n').length - off.split('\n').length).toBe(4);
  });

  it('handles nested blocks and leaves a config without batching alone', () => {
    const nested = 'name: "m"\ndynamic_batching {\n  default_queue_policy { max_queue_size: 4 }\n}\nmax_batch_size: 8\n';
    expect(withoutDynamicBatching(nested)).toBe('name: "m"\nmax_batch_size: 8\n');
    expect(withoutDynamicBatching('name: "m"\n')).toBe('name: "m"\n');
    expect(() => withoutDynamicBatching('dynamic_batching {\n')).toThrow(/unbalanced braces/);
  });

  it('counts instances across instance groups', () => {
    expect(instanceCount(ranker)).toBe(1);
    expect(instanceCount('instance_group [ { count: 2 kind: KIND_CPU }, { kind: KIND_CPU } ]')).toBe(3);
    expect(instanceCount('name: "m"')).toBe(1);
  });

  it('reads max_queue_delay and renames a copy', () => {
    expect(maxQueueDelayUs('dynamic_batching {\n  max_queue_delay_microseconds: 200\n}\n')).toBe(200);
    expect(maxQueueDelayUs('dynamic_batching { }\n')).toBe(0);
    expect(maxQueueDelayUs(withoutDynamicBatching(ranker))).toBeNull();
    expect(maxQueueDelayUs(ranker)).toBeGreaterThanOrEqual(0);
    const copy = renameModel(ranker, 'ranker_nb');
    expect(copy).toMatch(/^name: "ranker_nb"$/m);
    expect(copy).not.toMatch(/"ranker_mlp"/);
    expect(() => renameModel('max_batch_size: 8\n', 'x')).toThrow(/no top-level name/);
  });

  it('splits a load across load-generator processes', () => {
    expect(splitLoad({ kind: 'closed', concurrency: 1 }, 2)).toEqual([{ kind: 'closed', concurrency: 1 }]);
    expect(splitLoad({ kind: 'closed', concurrency: 65 }, 2)).toEqual([
      { kind: 'closed', concurrency: 33 },
      { kind: 'closed', concurrency: 32 },
    ]);
    const open = splitLoad({ kind: 'open', ratePerSecond: 800, seed: 5 }, 2);
    expect(open.map((l) => (l.kind === 'open' ? l.ratePerSecond : 0))).toEqual([400, 400]);
    expect(new Set(open.map((l) => (l.kind === 'open' ? l.seed : 0))).size).toBe(2);
  });
});
