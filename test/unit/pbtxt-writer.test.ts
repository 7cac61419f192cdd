/**
 * The config.pbtxt `hotpath tune` writes reads back, through the server's
 * own config parser (pbtxt-syntax.ts and model-config.ts), as the same
 * ModelConfig: the sample model's config, the same with tune's changes, and
 * a config with the awkward parts (a oneof, enums in lists, a map of
 * messages, 64-bit integers, strings that need escapes).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { create, equals } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import { parseModelConfigText } from '../../src/repository/model-config.js';
import { toPbtxt } from '../../src/perf/pbtxt-writer.js';
import { applySettings } from '../../src/perf/tune-grid.js';

const SAMPLE = path.join(import.meta.dirname, '..', '..', 'models', 'ctr_mlp', 'config.pbtxt');

function roundTrip(text: string) {
  const parsed = parseModelConfigText(text, 'written.pbtxt');
  // Fields hotpath ignores are warned about (and still read); an unknown or misspelt one would be too.
  expect(parsed.warnings.filter((w) => !/is not supported by hotpath and is ignored$/.test(w))).toEqual([]);
  return parsed.config;
}

describe('toPbtxt', () => {
  it("writes the sample model's config so that our parser reads the same config back", () => {
    const { config } = parseModelConfigText(readFileSync(SAMPLE, 'utf8'), SAMPLE);
    const text = toPbtxt(ModelConfigSchema, config, ['written by a test']);
    expect(text.startsWith('# written by a test\nname: "ctr_mlp"\n')).toBe(true);
    expect(text).toMatch(/^ {2}preferred_batch_size: \[ 16, 32, 64 \]$/m);
    expect(text).toMatch(/^ {4}kind: KIND_CPU$/m);
    expect(equals(ModelConfigSchema, roundTrip(text), config)).toBe(true);

    const tuned = applySettings(config, { maxBatchSize: 32, preferredBatchSizes: [], maxQueueDelayUs: 1000, instanceCount: 2 });
    const back = roundTrip(toPbtxt(ModelConfigSchema, tuned));
    expect(equals(ModelConfigSchema, back, tuned)).toBe(true);
    expect(back.maxBatchSize).toBe(32);
    expect(back.instanceGroup.map((g) => g.count)).toEqual([2]);
    expect(back.schedulingChoice.case === 'dynamicBatching' && back.schedulingChoice.value.maxQueueDelayMicroseconds).toBe(1000n);
  });

  it('writes oneofs, enum lists, maps of messages, 64-bit integers and escaped strings', () => {
    const config = create(ModelConfigSchema, {
      name: 'odd "name"\\ with\ttab and é',
      backend: 'onnxruntime',
      maxBatchSize: 8,
      input: [{ name: 'a', dataType: 11, dims: [-1n, 3n] }, { name: 'b', dataType: 13, dims: [2n], optional: true }],
      output: [{ name: 'y', dataType: 11, dims: [1n], labelFilename: 'labels.txt' }],
      versionPolicy: { policyChoice: { case: 'specific', value: { versions: [1n, 3n] } } },
      schedulingChoice: { case: 'dynamicBatching', value: { preserveOrdering: true, maxQueueDelayMicroseconds: 9007199254740993n, priorityLevels: 2n } },
      parameters: { 'b key': { stringValue: 'x\ny' }, a: { stringValue: '' } },
      instanceGroup: [{ count: 2, kind: 2, gpus: [0, 1] }],
    });
    const text = toPbtxt(ModelConfigSchema, config);
    expect(text).toContain('max_queue_delay_microseconds: 9007199254740993');
    expect(equals(ModelConfigSchema, roundTrip(text), config)).toBe(true);
  });
});
