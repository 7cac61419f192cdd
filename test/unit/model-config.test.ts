import { describe, expect, it } from 'vitest';
import { DataType, ModelInstanceGroup_Kind, ModelWarmup_InputSchema } from '../../src/generated/model_config_pb.js';
import {
  ModelConfigError,
  parseModelConfigText,
  validateModelConfig,
} from '../../src/repository/model-config.js';

const FILE = 'models/ranker/config.pbtxt';

const FULL_CONFIG = `
# A config using every field hotpath acts on.
name: "ranker"
platform: "onnxruntime_onnx"
backend: "onnxruntime"
max_batch_size: 16
version_policy: { specific: { versions: [1, 3] } }
input [
  {
    name: "features"
    data_type: TYPE_FP32
    dims: [ 32 ]
  },
  {
    name: "ids"
    data_type: TYPE_INT64
    dims: [ -1 ]
  }
]
input {
  name: "flat"
  data_type: TYPE_FP32
  dims: [ 2, 3 ]
  reshape: { shape: [ 6 ] }
}
output [
  { name: "score", data_type: TYPE_FP32, dims: [ 1 ] }
]
instance_group [ { name: "cpu_pool" count: 2 kind: KIND_CPU } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 500
}
parameters { key: "intra_op_thread_count" value: { string_value: "2" } }
parameters: { key: "tenant" value: { string_value: "search" } }
model_warmup [
  {
    name: "zeros"
    batch_size: 8
    count: 3
    inputs { key: "features" value: { data_type: TYPE_FP32 dims: [ 32 ] zero_data: true } }
    inputs { key: "ids" value: { data_type: TYPE_INT64 dims: [ 5 ] random_data: true } }
    inputs { key: "flat" value: { data_type: TYPE_FP32 dims: [ 2, 3 ] input_data_file: "flat.bin" } }
  }
]
default_model_filename: "model.onnx"
`;

const RANKER_CONFIG = [
  'name: "ranker"',
  'max_batch_size: 64',
  'input [ { name: "features" data_type: TYPE_FP32 dims: [ 32 ] } ]',
  'output [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]',
  'dynamic_batching { preferred_batch_size: [ 32, 64 ] max_queue_delay_microseconds: 500 }',
  '',
].join('\n');

function parseError(text: string): ModelConfigError {
  try {
    parseModelConfigText(text, FILE);
  } catch (err) {
    expect(err).toBeInstanceOf(ModelConfigError);
    return err as ModelConfigError;
  }
  throw new Error('expected the config to be rejected');
}

function validationError(text: string, modelName = 'ranker'): ModelConfigError {
  const { config } = parseModelConfigText(text, FILE);
  try {
    validateModelConfig(config, { file: FILE, modelName });
  } catch (err) {
    expect(err).toBeInstanceOf(ModelConfigError);
    return err as ModelConfigError;
  }
  throw new Error('expected the config to fail validation');
}

describe('parseModelConfigText', () => {
  it('parses a full config with every supported field and no warnings', () => {
    const { config, warnings } = parseModelConfigText(FULL_CONFIG, FILE);
    expect(warnings).toEqual([]);
    expect(config.name).toBe('ranker');
    expect(config.maxBatchSize).toBe(16);
    expect(config.input.map((i) => i.name)).toEqual(['features', 'ids', 'flat']);
    expect(config.input[0]!.dataType).toBe(DataType.TYPE_FP32);
    expect(config.input[1]!.dims).toEqual([-1n]);
    expect(config.input[2]!.reshape?.shape).toEqual([6n]);
    expect(config.output[0]!.name).toBe('score');
    expect(config.versionPolicy?.policyChoice).toMatchObject({ case: 'specific', value: { versions: [1n, 3n] } });
    expect(config.instanceGroup[0]).toMatchObject({ name: 'cpu_pool', count: 2, kind: ModelInstanceGroup_Kind.CPU });
    expect(config.schedulingChoice.case).toBe('dynamicBatching');
    if (config.schedulingChoice.case === 'dynamicBatching') {
      expect(config.schedulingChoice.value.preferredBatchSize).toEqual([4, 8]);
      expect(config.schedulingChoice.value.maxQueueDelayMicroseconds).toBe(500n);
    }
    expect(config.parameters['intra_op_thread_count']?.stringValue).toBe('2');
    expect(config.parameters['tenant']?.stringValue).toBe('search');
    const warmup = config.modelWarmup[0]!;
    expect(warmup).toMatchObject({ name: 'zeros', batchSize: 8, count: 3 });
    expect(warmup.inputs['features']?.inputDataType).toEqual({ case: 'zeroData', value: true });
    expect(warmup.inputs['ids']?.inputDataType).toEqual({ case: 'randomData', value: true });
    expect(warmup.inputs['flat']?.inputDataType).toEqual({ case: 'inputDataFile', value: 'flat.bin' });
    expect(config.defaultModelFilename).toBe('model.onnx');
  });

  it('warns about an unknown top-level field and still parses the rest', () => {
    const text = 'name: "ranker"\nfuture_knob: 42\nmax_batch_size: 8\n';
    const { config, warnings } = parseModelConfigText(text, FILE);
    expect(config.maxBatchSize).toBe(8);
    expect(warnings).toEqual([`${FILE}:2: unknown field 'future_knob' in ModelConfig ignored`]);
  });

  it('removes an unknown nested block, list and string value, respecting quotes and comments', () => {
    const text = [
      'name: "ranker"',
      'input {',
      '  name: "x"',
      '  data_type: TYPE_FP32',
      '  fancy_layout { tricky: "has } and { in it" inner < depth: 2 > }  # comment }',
      '  dims: [ 4 ]',
      '}',
      'labels: [ "a]", "b" ]',
      'note: "one" "two"',
      'output { name: "y" data_type: TYPE_FP32 dims: [1] }',
    ].join('\n');
    const { config, warnings } = parseModelConfigText(text, FILE);
    expect(config.input[0]).toMatchObject({ name: 'x', dataType: DataType.TYPE_FP32, dims: [4n] });
    expect(config.output[0]?.name).toBe('y');
    expect(warnings).toEqual([
      `${FILE}:5: unknown field 'fancy_layout' in ModelInput ignored`,
      `${FILE}:8: unknown field 'labels' in ModelConfig ignored`,
      `${FILE}:9: unknown field 'note' in ModelConfig ignored`,
    ]);
  });

  it('fails a typo\'d block that swallows the rest of the file, instead of loading it with defaults', () => {
    // The rest of the config nests inside `platfrom_typo {`, which is never closed.
    const lines = RANKER_CONFIG.split('\n');
    lines.splice(1, 0, 'platfrom_typo {');
    const err = parseError(lines.join('\n'));
    // Reported where the input ends, just past the last token, naming the brace left open.
    expect(err).toMatchObject({ line: lines.length - 1, column: lines[lines.length - 2]!.length + 1 });
    expect(err.reason).toBe('unexpected end of input, expected "}" to close the "{" at line 2, column 15');
  });

  it('fails on garbage after a valid config, at its line and column', () => {
    const err = parseError(`${RANKER_CONFIG}garbage {{{\n`);
    expect(err).toMatchObject({ line: RANKER_CONFIG.split('\n').length, column: 10 });
    expect(err.message).toMatch(/^models\/ranker\/config\.pbtxt:\d+:10: expected a field name, got "\{"$/);
  });

  it('fails on a syntax error inside an unknown field, rather than skipping it', () => {
    const err = parseError('name: "ranker"\nfuture { knob: 1 depth: }\nmax_batch_size: 64\n');
    expect(err.message).toBe(`${FILE}:2:25: expected a value for field "depth", got "}"`);
    expect(parseError('name: "ranker"\nfuture_knob 42\n').message).toMatch(/:2:13: expected ":" after field name "future_knob"/);
  });

  it('skips a well-formed unknown block exactly, keeping the fields after it', () => {
    const lines = RANKER_CONFIG.split('\n');
    lines.splice(1, 0, 'platfrom_typo { level: 2 nested < list: [1, 2] > }', '[pkg.some_extension]: "x"');
    const { config, warnings } = parseModelConfigText(lines.join('\n'), FILE);
    expect(config.maxBatchSize).toBe(64);
    expect(config.schedulingChoice.case).toBe('dynamicBatching');
    expect(warnings).toEqual([
      `${FILE}:2: unknown field 'platfrom_typo' in ModelConfig ignored`,
      `${FILE}:3: unknown field '[pkg.some_extension]' in ModelConfig ignored`,
    ]);
  });

  it('reports unknown fields inside nested messages with the nested type name', () => {
    const text = 'model_warmup { name: "w" batch_size: 1 inputs { key: "x" value: { zero_data: true shiny: 1 } } }';
    const { config, warnings } = parseModelConfigText(text, FILE);
    expect(config.modelWarmup[0]?.inputs['x']?.inputDataType.case).toBe('zeroData');
    expect(warnings).toEqual([`${FILE}:1: unknown field 'shiny' in ModelWarmup.Input ignored`]);
  });

  it('warns about valid Triton fields that hotpath ignores, with their line', () => {
    const text = [
      'name: "ranker"',
      'optimization { graph { level: 1 } }',
      'input { name: "x" data_type: TYPE_FP32 dims: [1] allow_ragged_batch: true }',
      'instance_group { count: 1 profile: ["0"] }',
    ].join('\n');
    const { warnings } = parseModelConfigText(text, FILE);
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatch(/^models\/ranker\/config\.pbtxt:2: field 'optimization' is not supported by hotpath/);
    expect(warnings[1]).toMatch(/:3: field 'allow_ragged_batch' in input 'x' is not supported/);
    expect(warnings[2]).toMatch(/:4: field 'profile' in instance_group\[0\] is not supported/);
  });

  it('knows every Triton field: a config using the full schema has no unknown fields', () => {
    const text = `
      name: "everything" platform: "onnxruntime_onnx" backend: "onnxruntime" runtime: ""
      max_batch_size: 8
      version_policy { latest { num_versions: 2 } }
      input [ { name: "a" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [3, -1] is_shape_tensor: false
                allow_ragged_batch: true optional: true is_non_linear_format_io: false } ]
      output [ { name: "b" data_type: TYPE_STRING dims: [1] label_filename: "labels.txt" is_shape_tensor: false
                 is_non_linear_format_io: false } ]
      batch_input [ { kind: BATCH_ITEM_SHAPE_FLATTEN target_name: "t" data_type: TYPE_INT32 source_input: "a" } ]
      batch_output [ { target_name: "b" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "a" } ]
      optimization {
        graph { level: -1 } priority: PRIORITY_MAX
        cuda { graphs: true busy_wait_events: true output_copy_stream: true
               graph_spec [ { batch_size: 4 input { key: "a" value { dim: [3, 8] } }
                              graph_lower_bound { batch_size: 1 input { key: "a" value { dim: [3, 1] } } } } ] }
        execution_accelerators { gpu_execution_accelerator [ { name: "tensorrt" parameters { key: "precision_mode" value: "FP16" } } ]
                                 cpu_execution_accelerator [ { name: "openvino" } ] }
        input_pinned_memory { enable: false } output_pinned_memory { enable: true }
        gather_kernel_buffer_threshold: 2 eager_batching: true
      }
      sequence_batching {
        max_sequence_idle_microseconds: 5000000
        control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [0, 1] } ] } ]
        state [ { input_name: "si" output_name: "so" data_type: TYPE_FP32 dims: [1]
                  initial_state [ { name: "init" data_type: TYPE_FP32 dims: [1] zero_data: true } ]
                  use_same_buffer_for_input_output: true use_growable_memory: true } ]
        oldest { max_candidate_sequences: 4 preferred_batch_size: [2] max_queue_delay_microseconds: 100 preserve_ordering: true }
        iterative_sequence: false
      }
      instance_group [ { name: "g" kind: KIND_GPU count: 2 gpus: [0, 1] profile: ["0"] passive: false host_policy: "numa0"
                         secondary_devices [ { kind: KIND_NVDLA device_id: 0 } ]
                         rate_limiter { resources [ { name: "R1" global: true count: 2 } ] priority: 2 } } ]
      default_model_filename: "model.onnx"
      cc_model_filenames { key: "7.5" value: "model_75.onnx" }
      metric_tags { key: "team" value: "search" }
      parameters { key: "p" value { string_value: "v" } }
      model_warmup [ { name: "w" batch_size: 1 count: 1 inputs { key: "a" value { data_type: TYPE_FP32 dims: [3, 4] random_data: true } } } ]
      model_operations { op_library_filename: ["libcustom.so"] }
      model_transaction_policy { decoupled: false }
      model_repository_agents { agents [ { name: "checksum" parameters { key: "MD5:model.onnx" value: "abc" } } ] }
      response_cache { enable: true }
      model_metrics { metric_control [ { metric_identifier { family: "nv_inference_first_response_histogram_ms" }
                                          histogram_options { buckets: [1, 2, 4.5] } } ] }
    `;
    const { config, warnings } = parseModelConfigText(text, FILE);
    expect(warnings.filter((w) => w.includes('unknown field'))).toEqual([]);
    expect(warnings.some((w) => /field 'sequence_batching' is not supported/.test(w))).toBe(true);
    expect(config.schedulingChoice.case).toBe('sequenceBatching');
    expect(config.modelMetrics?.metricControl[0]?.metricOptions.case).toBe('histogramOptions');
  });

  it('parses ensemble and dynamic batching queue policies', () => {
    const { config } = parseModelConfigText(
      `ensemble_scheduling { step [ { model_name: "pre" model_version: -1 input_map { key: "in" value: "raw" }
                                      output_map { key: "out" value: "mid" } } ] }`,
      FILE,
    );
    expect(config.schedulingChoice.case).toBe('ensembleScheduling');
    const batching = parseModelConfigText(
      `max_batch_size: 8 dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1
         default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100 allow_timeout_override: true max_queue_size: 16 }
         priority_queue_policy { key: 1 value { max_queue_size: 4 } } }`,
      FILE,
    ).config;
    expect(batching.schedulingChoice.case).toBe('dynamicBatching');
  });

  it('reports a syntax error with its line and column', () => {
    const err = parseError('name: "ranker"\nmax_batch_size: 8\ninput { name: "x" dims: [1, 2 }\n');
    expect(err).toMatchObject({ file: FILE, line: 3, column: 31 });
    expect(err.message).toBe(`${FILE}:3:31: expected "," or "]" in the list of field "dims", got "}"`);
  });

  it('reports a wrongly typed value at its line and column', () => {
    const err = parseError('name: "ranker"\n\n\nmax_batch_size: "eight"\nbackend: "onnxruntime"\n');
    expect(err).toMatchObject({ line: 4, column: 17 });
    expect(err.reason).toMatch(/expected an integer, got a string/);
  });

  it('reports an unknown enum value at its line and column', () => {
    const err = parseError('name: "r"\ninput {\n  name: "x"\n  data_type: TYPE_FLOAT\n}\n');
    expect(err.message).toMatch(/:4:14: unknown enum value "TYPE_FLOAT"/);
  });

  it('points a missing closing brace past the last token, naming the brace left open', () => {
    const err = parseError('name: "ranker"\ninput {\n  name: "x"\n  dims: [1]\n\n# trailing comment\n');
    expect(err).toMatchObject({ line: 4, column: 12 });
    expect(err.reason).toBe('unexpected end of input, expected "}" to close the "{" at line 2, column 7');
  });

  it('rejects a singular field given twice, at the second one', () => {
    const err = parseError('name: "a"\nmax_batch_size: 1\nname: "b"\n');
    expect(err.message).toMatch(/:3:1: non-repeated field "name" is repeated/);
  });
});

describe('validateModelConfig', () => {
  it('accepts the full config and normalises defaults', () => {
    const { config } = parseModelConfigText(FULL_CONFIG, FILE);
    const { warnings } = validateModelConfig(config, { file: FILE, modelName: 'ranker' });
    expect(warnings).toEqual([]);
    expect(config.platform).toBe('onnxruntime_onnx');
    expect(config.backend).toBe('onnxruntime');
  });

  it('fills name, platform, backend, version policy and instance group', () => {
    const { config } = parseModelConfigText('input { name: "x" data_type: TYPE_FP32 dims: [3] }', FILE);
    validateModelConfig(config, { file: FILE, modelName: 'm' });
    expect(config.name).toBe('m');
    expect(config.platform).toBe('onnxruntime_onnx');
    expect(config.backend).toBe('onnxruntime');
    expect(config.versionPolicy?.policyChoice).toMatchObject({ case: 'latest', value: { numVersions: 1 } });
    expect(config.instanceGroup).toHaveLength(1);
    expect(config.instanceGroup[0]).toMatchObject({ name: 'm_0', count: 1, kind: ModelInstanceGroup_Kind.CPU });
  });

  it('normalises instance groups: count 0 to 1, AUTO to CPU; KIND_GPU with gpus is accepted', () => {
    const { config, warnings: parseWarnings } = parseModelConfigText(
      'instance_group [ { kind: KIND_AUTO }, { name: "g" count: 2 kind: KIND_GPU gpus: [ 0 ] } ]',
      FILE,
    );
    expect(parseWarnings).toEqual([]);
    const { warnings } = validateModelConfig(config, { file: FILE, modelName: 'm' });
    expect(config.instanceGroup[0]).toMatchObject({ count: 1, kind: ModelInstanceGroup_Kind.CPU, name: 'm_0' });
    expect(config.instanceGroup[1]).toMatchObject({ count: 2, kind: ModelInstanceGroup_Kind.GPU, gpus: [0] });
    // Where KIND_GPU runs is decided at load (native executor or onnxruntime), not here.
    expect(warnings).toEqual([]);
  });

  it('rejects a negative gpu ordinal and warns about gpus on a CPU group', () => {
    expect(validationError('instance_group [ { kind: KIND_GPU gpus: [ -1 ] } ]').message).toMatch(
      /instance_group\[0\]: gpus: expected device ordinals >= 0, got -1/,
    );
    const { config } = parseModelConfigText('instance_group [ { kind: KIND_CPU gpus: [ 0 ] } ]', FILE);
    const { warnings } = validateModelConfig(config, { file: FILE, modelName: 'm' });
    expect(warnings[0]).toMatch(/lists gpus but is not KIND_GPU; gpus is ignored/);
  });

  it('rejects a name that differs from the directory', () => {
    expect(validationError('name: "other"').message).toMatch(
      /^models\/ranker\/config\.pbtxt: name: expected 'ranker' \(the model directory name\), got 'other'$/,
    );
  });

  it('rejects another platform or backend', () => {
    expect(validationError('platform: "tensorflow_savedmodel"').reason).toMatch(
      /platform: expected 'onnxruntime_onnx'.*got 'tensorflow_savedmodel'/,
    );
    expect(validationError('backend: "python"').reason).toMatch(/backend: expected 'onnxruntime'.*got 'python'/);
  });

  it('rejects a negative max_batch_size', () => {
    expect(validationError('max_batch_size: -1').reason).toMatch(/max_batch_size: expected >= 0, got -1/);
  });

  it('rejects inputs and outputs with missing or invalid fields', () => {
    expect(validationError('input { data_type: TYPE_FP32 dims: [1] }').reason).toMatch(/input\[0\]: name must be set/);
    expect(validationError('input { name: "x" dims: [1] }').reason).toMatch(
      /input 'x': data_type must be set \(expected a TYPE_\* value, got TYPE_INVALID\)/,
    );
    // Without batching, no dims is a scalar (see 'accepts scalars'); with batching it is refused.
    expect(validationError('max_batch_size: 4 output { name: "y" data_type: TYPE_FP32 }').reason).toMatch(
      /output 'y': dims must list at least one dimension when max_batch_size > 0 \(for a batch of scalars write dims: \[1\] with reshape: \{ shape: \[\] \}\), got \[\]/,
    );
    expect(validationError('input { name: "x" data_type: TYPE_FP32 dims: [4, 0] }').reason).toMatch(
      /input 'x': dims\[1\]: expected >= 1 or -1 \(variable-size\), got 0/,
    );
    expect(validationError('input { name: "x" data_type: TYPE_BF16 dims: [4] }').reason).toMatch(
      /input 'x': data_type TYPE_BF16 is not supported by onnxruntime-node/,
    );
    expect(
      validationError('input { name: "x" data_type: TYPE_FP32 dims: [1] } input { name: "x" data_type: TYPE_FP32 dims: [2] }')
        .reason,
    ).toMatch(/input 'x': declared more than once/);
  });

  it('checks reshape against dims', () => {
    expect(validationError('input { name: "x" data_type: TYPE_FP32 dims: [2, 3] reshape { shape: [5] } }').reason).toMatch(
      /input 'x': reshape.shape \[5\] has 5 elements, expected 6 to match dims \[2, 3\]/,
    );
    // With batching, dims [1] + empty reshape is Triton's batch-of-scalars idiom.
    const { config } = parseModelConfigText('max_batch_size: 4 input { name: "x" data_type: TYPE_FP32 dims: [1] reshape { } }', FILE);
    expect(() => validateModelConfig(config, { file: FILE, modelName: 'm' })).not.toThrow();
  });

  it('accepts scalars: dims [] or dims [1] with an empty reshape when max_batch_size is 0', () => {
    for (const text of [
      'input { name: "x" data_type: TYPE_FP32 dims: [] }',
      'input { name: "x" data_type: TYPE_FP32 dims: [1] reshape { } }',
      'input { name: "x" data_type: TYPE_FP32 dims: [1] reshape { shape: [] } }',
    ]) {
      const { config } = parseModelConfigText(text, FILE);
      expect(() => validateModelConfig(config, { file: FILE, modelName: 'm' })).not.toThrow();
    }
    expect(validationError('input { name: "x" data_type: TYPE_FP32 dims: [2] reshape { } }').reason).toMatch(
      /input 'x': reshape.shape \[\] has 1 elements, expected 2 to match dims \[2\]/,
    );
  });

  it('rejects unsupported instance kinds and negative counts', () => {
    expect(validationError('instance_group { kind: KIND_MODEL }').reason).toMatch(
      /instance_group\[0\]: kind: expected KIND_CPU, KIND_GPU or KIND_AUTO, got KIND_MODEL/,
    );
    expect(validationError('instance_group { count: -2 }').reason).toMatch(/instance_group\[0\]: count: expected >= 1, got -2/);
  });

  it('rejects dynamic batching that cannot work', () => {
    expect(validationError('dynamic_batching { }').reason).toMatch(/dynamic_batching: requires max_batch_size > 0.*got max_batch_size 0/);
    expect(validationError('max_batch_size: 8 dynamic_batching { preferred_batch_size: [4, 16] }').reason).toMatch(
      /dynamic_batching.preferred_batch_size: expected values in \[1, 8\] \(max_batch_size\), got 16/,
    );
  });

  it('rejects a latest version policy with zero versions', () => {
    expect(validationError('version_policy { latest { } }').reason).toMatch(
      /version_policy.latest.num_versions: expected >= 1, got 0/,
    );
  });

  it('checks warm-up samples against the inputs', () => {
    const base = 'max_batch_size: 4 input { name: "x" data_type: TYPE_FP32 dims: [-1] } ';
    expect(validationError(`${base} model_warmup { batch_size: 8 inputs { key: "x" value { data_type: TYPE_FP32 dims: [2] zero_data: true } } }`).reason)
      .toMatch(/model_warmup\[0\]: batch_size: expected <= max_batch_size 4, got 8/);
    expect(validationError(`${base} model_warmup { name: "w" batch_size: 1 inputs { key: "y" value { data_type: TYPE_FP32 dims: [2] zero_data: true } } }`).reason)
      .toMatch(/model_warmup\[0\] 'w': input 'y' is not an input of the model \(expected one of: x\)/);
    expect(validationError(`${base} model_warmup { batch_size: 1 inputs { key: "x" value { data_type: TYPE_INT32 dims: [2] zero_data: true } } }`).reason)
      .toMatch(/input 'x': data_type: expected TYPE_FP32, got TYPE_INT32/);
    expect(validationError(`${base} model_warmup { batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [-1] zero_data: true } } }`).reason)
      .toMatch(/input 'x': dims\[0\]: expected >= 1 \(warm-up shapes are concrete\), got -1/);
    expect(validationError(`${base} model_warmup { batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [2] } } }`).reason)
      .toMatch(/input 'x': expected one of zero_data, random_data or input_data_file/);
    expect(validationError(`${base} model_warmup { batch_size: 1 }`).reason).toMatch(/model_warmup\[0\]: missing input 'x'/);
    expect(ModelWarmup_InputSchema.typeName).toBe('inference.ModelWarmup.Input');
  });
});
