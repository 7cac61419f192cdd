import { describe, expect, it } from 'vitest';
import { ModelInstanceGroup_Kind } from '../../src/generated/model_config_pb.js';
import { CONFIG_OVERRIDE_SOURCE, parseConfigOverride } from '../../src/repository/config-override.js';
import { ModelConfigError } from '../../src/repository/model-config.js';

function failure(json: string): ModelConfigError {
  try {
    parseConfigOverride(json);
  } catch (err) {
    expect(err).toBeInstanceOf(ModelConfigError);
    return err as ModelConfigError;
  }
  throw new Error('expected the override to be refused');
}

describe('parseConfigOverride', () => {
  it("reads protobuf's JSON form of ModelConfig, snake_case or camelCase, enums by name, int64 as numbers or strings", () => {
    const { config, warnings } = parseConfigOverride(JSON.stringify({
      name: 'ctr', max_batch_size: 16, input: [{ name: 'x', data_type: 'TYPE_FP32', dims: ['4'] }],
      instanceGroup: [{ count: 2, kind: 'KIND_CPU' }], dynamic_batching: { max_queue_delay_microseconds: 250 },
    }));
    expect(config.maxBatchSize).toBe(16);
    expect(config.input[0]!.dims).toEqual([4n]);
    expect(config.instanceGroup[0]).toMatchObject({ count: 2, kind: ModelInstanceGroup_Kind.CPU });
    expect(config.schedulingChoice).toMatchObject({ case: 'dynamicBatching', value: { maxQueueDelayMicroseconds: 250n } });
    expect(warnings).toEqual([]);
  });

  it('warns, as for config.pbtxt, about fields hotpath ignores', () => {
    expect(parseConfigOverride('{"optimization": {"priority": "PRIORITY_MAX"}}').warnings).toEqual([
      `${CONFIG_OVERRIDE_SOURCE}: field 'optimization' is not supported by hotpath and is ignored`,
    ]);
  });

  it('refuses, naming the field, text that is not JSON, a non-object, an unknown key and a wrong type', () => {
    expect(failure('{"max_batch_size": 8').message).toMatch(/^config override: expected a ModelConfig as JSON, got text that is not JSON \(/);
    expect(failure('"x"').reason).toBe('expected a ModelConfig as a JSON object, got string');
    expect(failure('{"input": [{"nme": "x"}]}').reason).toBe('cannot decode message ModelInput from JSON: key "nme" is unknown');
    expect(failure('{"max_batch_size": true}').reason).toMatch(/^cannot decode field ModelConfig\.max_batch_size from JSON: /);
  });
});
