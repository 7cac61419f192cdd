/**
 * Auto-complete off (--disable-auto-complete-config, Triton's
 * --strict-model-config=true): a config that says everything loads as it is
 * written; one that leaves something to auto-complete fails, naming each
 * field it left out.
 */
import { describe, expect, it } from 'vitest';
import { DataType } from '../../src/generated/model_config_pb.js';
import type { ModelIo } from '../../src/repository/config-autocomplete.js';
import { ModelConfigError, parseModelConfigText } from '../../src/repository/model-config.js';
import { completeConfig } from '../../src/repository/strict-config.js';

const IO: ModelIo = {
  inputs: [{ name: 'features', dataType: DataType.TYPE_FP32, shape: [-1, 32] }],
  outputs: [{ name: 'score', dataType: DataType.TYPE_FP32, shape: [-1, 1] }],
};
const FILE = 'models/ranker/config.pbtxt';
const parse = (text: string) => parseModelConfigText(text, FILE).config;

const COMPLETE = [
  'max_batch_size: 8',
  'input [ { name: "features" data_type: TYPE_FP32 dims: [ 32 ] } ]',
  'output [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]',
].join('\n');

function strictError(text: string | undefined): string {
  try {
    completeConfig(text === undefined ? undefined : parse(text), 'ranker', IO, { file: FILE, autoComplete: false });
  } catch (err) {
    expect(err).toBeInstanceOf(ModelConfigError);
    return (err as Error).message;
  }
  throw new Error('expected the strict config to be refused');
}

describe('strict model config', () => {
  it('loads a complete config as written, filling only name, platform and instance group', () => {
    const config = completeConfig(parse(COMPLETE), 'ranker', IO, { file: FILE, autoComplete: false });
    expect(config.name).toBe('ranker');
    expect(config.maxBatchSize).toBe(8);
    expect(config.schedulingChoice.case).toBeUndefined();
    expect(config.instanceGroup).toHaveLength(1);
  });

  it('refuses a model without config.pbtxt', () => {
    expect(strictError(undefined)).toMatch(
      /^models\/ranker\/config\.pbtxt: no config\.pbtxt, and auto-complete is off \(--disable-auto-complete-config \/ --strict-model-config=true\): expected a config naming every input and output$/,
    );
  });

  it('names every field auto-complete would have filled', () => {
    const message = strictError('input [ { name: "features" } ]');
    expect(message).toMatch(/incomplete config and auto-complete is off \(--disable-auto-complete-config \/ --strict-model-config=true\)/);
    expect(message).toMatch(/max_batch_size: not set \(the model can batch; auto-complete would set 4/);
    expect(message).toMatch(/input 'features': data_type not set/);
    expect(message).toMatch(/input 'features': dims not set/);
    expect(message).toMatch(/output 'score': not in the config \(the ONNX model has it\)/);
  });

  it('completes the same partial config when auto-complete is on', () => {
    const config = completeConfig(parse('input [ { name: "features" } ]'), 'ranker', IO, { file: FILE, autoComplete: true });
    expect(config.maxBatchSize).toBe(4);
    expect(config.output.map((o) => o.name)).toEqual(['score']);
  });
});
