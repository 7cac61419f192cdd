/**
 * Reading and checking a model's config.pbtxt (Triton's ModelConfig in
 * protobuf text format).
 *
 * The flow for one model directory is:
 *   parseModelConfigText  → text to ModelConfig, with warnings
 *   completeModelConfig   → fill what the ONNX model tells us (config-autocomplete.ts)
 *   validateModelConfig   → reject what hotpath cannot serve, normalise defaults
 *
 * Parsing is lenient where Triton users need it to be: a well-formed field this
 * build does not know (a newer Triton field, a typo) is dropped with a warning
 * instead of failing the model, and valid Triton fields hotpath ignores are
 * reported the same way. Everything else fails with a ModelConfigError that
 * names the file, line and column: the syntax is checked first, schema-free,
 * by pbtxt-syntax.ts (which also finds the unknown fields exactly), and
 * protobuf-es's errors, which carry no position, are located afterwards.
 */
import { create, isFieldSet, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { fromText } from '@bufbuild/protobuf/txtpb';
import {
  DataType,
  ModelConfigSchema,
  ModelInputSchema,
  ModelInstanceGroup_Kind,
  ModelInstanceGroup_KindSchema,
  ModelInstanceGroupSchema,
  ModelOutputSchema,
  ModelVersionPolicySchema,
  ModelVersionPolicy_LatestSchema,
  type ModelConfig,
  type ModelInput,
  type ModelOutput,
} from '../generated/model_config_pb.js';
import { dataTypeName, dataTypeToOrtType } from './datatypes.js';
import { ModelConfigError } from './model-config-error.js';
import {
  blankSpans,
  findField,
  parsePbtxt,
  PbtxtSyntaxError,
  tokenStartAt,
  type PbtxtField,
  type PbtxtValue,
  type TextPosition,
} from './pbtxt-syntax.js';

export { ModelConfigError } from './model-config-error.js';

export interface ParsedModelConfig {
  readonly config: ModelConfig;
  /** Human-readable, each prefixed with "<file>:<line>: " where a line is known. */
  readonly warnings: string[];
}

/** The only platform and backend names hotpath serves. */
export const ONNX_PLATFORM = 'onnxruntime_onnx';
export const ONNX_BACKEND = 'onnxruntime';

// A config with more unknown fields than this is not a Triton config.
const MAX_UNKNOWN_FIELDS = 256;

/**
 * Parses config.pbtxt text. Throws ModelConfigError("<file>:<line>:<column>: <reason>")
 * on a syntax or type error, wherever it is; well-formed unknown fields are
 * removed and reported.
 */
export function parseModelConfigText(text: string, file: string): ParsedModelConfig {
  const fields = parseSyntax(text, file);
  const unknown: UnknownField[] = [];
  collectUnknownFields(fields, ModelConfigSchema, unknown);
  if (unknown.length > MAX_UNKNOWN_FIELDS) {
    throw new ModelConfigError(file, undefined, `${unknown.length} unknown fields (more than ${MAX_UNKNOWN_FIELDS}): this is not a Triton model config`);
  }
  const warnings = unknown.map(({ field, owner }) => `${file}:${field.at.line}: unknown field '${field.name}' in ${owner} ignored`);
  const known = blankSpans(text, unknown.map(({ field }) => field));
  let config: ModelConfig;
  try {
    config = fromText(ModelConfigSchema, known);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const where = locateError(known, message);
    throw new ModelConfigError(file, where?.line, message, where?.column);
  }
  warnings.push(...unsupportedFieldWarnings(config, unknown.length === 0 ? fields : parseSyntax(known, file), file));
  return { config, warnings };
}

function parseSyntax(text: string, file: string): PbtxtField[] {
  try {
    return parsePbtxt(text);
  } catch (err) {
    if (err instanceof PbtxtSyntaxError) throw new ModelConfigError(file, err.position.line, err.reason, err.position.column);
    throw err;
  }
}

interface UnknownField {
  readonly field: PbtxtField;
  /** The message it is written in, for the warning: `ModelInput`, `map entry`. */
  readonly owner: string;
}

/**
 * Adds to `out` the fields that `schema` does not know, at any depth below
 * fields it does know. Values are not checked here; fromText does that.
 */
function collectUnknownFields(fields: readonly PbtxtField[], schema: DescMessage, out: UnknownField[]): void {
  for (const field of fields) {
    // ModelConfig's proto3 schema has no groups, so a field's text name is its name.
    const known = schema.fields.find((f) => f.name === field.name);
    if (known !== undefined) collectInValue(known, field.value, out);
    else if (!schema.proto.reservedName.includes(field.name)) out.push({ field, owner: shortTypeName(schema.typeName) });
  }
}

function collectInValue(known: DescField, value: PbtxtValue, out: UnknownField[]): void {
  if (value.kind === 'list') {
    for (const item of value.items) collectInValue(known, item, out);
    return;
  }
  if (value.kind !== 'message') return;
  if (known.fieldKind === 'message' || (known.fieldKind === 'list' && known.listKind === 'message')) {
    collectUnknownFields(value.fields, known.message, out);
  } else if (known.fieldKind === 'map') {
    for (const entry of value.fields) {
      if (entry.name === 'value' && known.mapKind === 'message' && entry.value.kind === 'message') {
        collectUnknownFields(entry.value.fields, known.message, out);
      } else if (entry.name !== 'key' && entry.name !== 'value') out.push({ field: entry, owner: 'map entry' });
    }
  }
}

function shortTypeName(typeName: string): string {
  return typeName.startsWith('inference.') ? typeName.slice('inference.'.length) : typeName;
}

function parseFailsWith(text: string, message: string): boolean {
  try {
    fromText(ModelConfigSchema, text);
    return false;
  } catch (err) {
    return (err instanceof Error ? err.message : String(err)) === message;
  }
}

/**
 * Finds where protobuf-es's `message` (which has no position) arises in
 * `text`, which is syntactically valid: the shortest prefix that fails with
 * the same message ends in the offending token. The parser reads left to
 * right, so a shorter prefix either parses or fails differently (typically at
 * end of input), which makes the search monotone: bisect over lines, then
 * walk the line. Undefined when no prefix fails that way.
 */
function locateError(text: string, message: string): TextPosition | undefined {
  const lineEnds = [...text.matchAll(/\n/g)].map((m) => m.index).concat(text.length);
  if (!parseFailsWith(text, message)) return undefined;
  let low = 0;
  let high = lineEnds.length - 1;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (parseFailsWith(text.slice(0, lineEnds[mid]), message)) high = mid;
    else low = mid + 1;
  }
  const lineStart = low === 0 ? 0 : lineEnds[low - 1]! + 1;
  for (let end = lineStart; end <= lineEnds[low]!; end++) {
    if (parseFailsWith(text.slice(0, end), message)) return tokenStartAt(text, end);
  }
  return undefined;
}

// Fields hotpath acts on. Any other field that is set parses fine but is
// ignored, and the user is told so.
const SUPPORTED_MODEL_FIELDS = new Set([
  'name', 'platform', 'backend', 'max_batch_size', 'input', 'output', 'version_policy',
  'instance_group', 'dynamic_batching', 'model_warmup', 'parameters', 'default_model_filename',
  'response_cache',
]);
const SUPPORTED_TENSOR_FIELDS = new Set(['name', 'data_type', 'dims', 'reshape']);
const SUPPORTED_INSTANCE_GROUP_FIELDS = new Set(['count', 'kind', 'name', 'gpus']);

/**
 * Warnings for fields that are set but that hotpath ignores. `fields` (the
 * parsed text) only places them on a line; a config that was not text (a
 * load's JSON config override) passes none and gets `file` alone.
 */
export function unsupportedFieldWarnings(config: ModelConfig, fields: readonly PbtxtField[], file: string): string[] {
  const warnings: string[] = [];
  const warn = (field: string, owner: string): void => {
    const line = findField(fields, field)?.at.line;
    const where = line === undefined ? file : `${file}:${line}`;
    warnings.push(`${where}: field '${field}'${owner} is not supported by hotpath and is ignored`);
  };
  const check = <T extends DescMessage>(schema: T, message: unknown, supported: Set<string>, owner: string): void => {
    for (const field of schema.fields) {
      if (!supported.has(field.name) && isFieldSet(message as never, field)) warn(field.name, owner);
    }
  };
  check(ModelConfigSchema, config, SUPPORTED_MODEL_FIELDS, '');
  config.input.forEach((input) => check(ModelInputSchema, input, SUPPORTED_TENSOR_FIELDS, ` in input '${input.name}'`));
  config.output.forEach((output) =>
    check(ModelOutputSchema, output, SUPPORTED_TENSOR_FIELDS, ` in output '${output.name}'`),
  );
  config.instanceGroup.forEach((group, i) =>
    check(ModelInstanceGroupSchema, group, SUPPORTED_INSTANCE_GROUP_FIELDS, ` in instance_group[${i}]`),
  );
  return warnings;
}

export interface ValidationContext {
  /** Used in error messages: the config file, or the model directory when there is none. */
  readonly file: string;
  /** The model's directory name, which `name` must equal. */
  readonly modelName: string;
}

/**
 * Checks a (completed) config against what Triton accepts and hotpath can
 * serve, and normalises it in place the way Triton does: name from the
 * directory, platform and backend, default version policy, instance-group
 * count, kind and name. Returns the same config and any warnings; throws
 * ModelConfigError naming the field, the expected and the actual value.
 */
export function validateModelConfig(
  config: ModelConfig,
  ctx: ValidationContext,
): { config: ModelConfig; warnings: string[] } {
  const warnings: string[] = [];
  const fail = (reason: string): never => {
    throw new ModelConfigError(ctx.file, undefined, reason);
  };

  if (config.name === '') config.name = ctx.modelName;
  else if (config.name !== ctx.modelName) {
    fail(`name: expected '${ctx.modelName}' (the model directory name), got '${config.name}'`);
  }

  if (config.platform !== '' && config.platform !== ONNX_PLATFORM) {
    fail(`platform: expected '${ONNX_PLATFORM}' (the only platform hotpath serves), got '${config.platform}'`);
  }
  if (config.backend !== '' && config.backend !== ONNX_BACKEND) {
    fail(`backend: expected '${ONNX_BACKEND}' (the only backend hotpath serves), got '${config.backend}'`);
  }
  config.platform = ONNX_PLATFORM;
  config.backend = ONNX_BACKEND;

  if (config.maxBatchSize < 0) fail(`max_batch_size: expected >= 0, got ${config.maxBatchSize}`);

  validateTensors('input', config.input, config.maxBatchSize, fail);
  validateTensors('output', config.output, config.maxBatchSize, fail);
  validateVersionPolicy(config, fail);
  warnings.push(...normaliseInstanceGroups(config, ctx.file, fail));
  validateDynamicBatching(config, fail);
  validateWarmup(config, fail);
  return { config, warnings };
}

type Fail = (reason: string) => never;

function validateTensors(
  kind: 'input' | 'output',
  tensors: ReadonlyArray<ModelInput | ModelOutput>,
  maxBatchSize: number,
  fail: Fail,
): void {
  const seen = new Set<string>();
  tensors.forEach((tensor, index) => {
    if (tensor.name === '') fail(`${kind}[${index}]: name must be set`);
    const what = `${kind} '${tensor.name}'`;
    if (seen.has(tensor.name)) fail(`${what}: declared more than once; ${kind} names must be unique`);
    seen.add(tensor.name);

    if (tensor.dataType === DataType.TYPE_INVALID) {
      fail(`${what}: data_type must be set (expected a TYPE_* value, got TYPE_INVALID)`);
    }
    if (dataTypeToOrtType(tensor.dataType) === undefined) {
      fail(`${what}: data_type ${dataTypeName(tensor.dataType)} is not supported by onnxruntime-node`);
    }

    const dims = tensor.dims.map(Number);
    const reshape = tensor.reshape?.shape.map(Number);
    // Scalars (rank 0): in a model without batching, `dims: []` is the
    // tensor's whole shape, a scalar, which V2 clients send with shape [].
    // Triton's own way, `dims: [1]` with `reshape: { shape: [] }`, works with
    // or without batching (with batching it is a batch of scalars). A batching
    // model's per-row dims stay non-empty, as Triton requires.
    if (dims.length === 0 && reshape === undefined && maxBatchSize > 0) {
      fail(
        `${what}: dims must list at least one dimension when max_batch_size > 0 ` +
          `(for a batch of scalars write dims: [1] with reshape: { shape: [] }), got []`,
      );
    }
    checkDims(`${what}: dims`, dims, fail);
    if (reshape !== undefined) {
      checkDims(`${what}: reshape.shape`, reshape, fail);
      const dimsCount = elementCount(dims);
      const reshapeCount = elementCount(reshape);
      if (dimsCount !== undefined && reshapeCount !== undefined && dimsCount !== reshapeCount) {
        fail(
          `${what}: reshape.shape [${reshape.join(', ')}] has ${reshapeCount} elements, ` +
            `expected ${dimsCount} to match dims [${dims.join(', ')}]`,
        );
      }
    }
  });
}

function checkDims(what: string, dims: readonly number[], fail: Fail): void {
  dims.forEach((dim, i) => {
    if (dim < 1 && dim !== -1) fail(`${what}[${i}]: expected >= 1 or -1 (variable-size), got ${dim}`);
  });
}

/** Product of fixed dims; undefined when any dim is variable. */
function elementCount(dims: readonly number[]): number | undefined {
  return dims.includes(-1) ? undefined : dims.reduce((product, dim) => product * dim, 1);
}

function validateVersionPolicy(config: ModelConfig, fail: Fail): void {
  const policy = config.versionPolicy?.policyChoice;
  if (policy === undefined || policy.case === undefined) {
    // Triton's default: serve only the highest-numbered version.
    config.versionPolicy = create(ModelVersionPolicySchema, {
      policyChoice: { case: 'latest', value: create(ModelVersionPolicy_LatestSchema, { numVersions: 1 }) },
    });
    return;
  }
  if (policy.case === 'latest' && policy.value.numVersions < 1) {
    fail(`version_policy.latest.num_versions: expected >= 1, got ${policy.value.numVersions}`);
  }
  if (policy.case === 'specific') {
    for (const version of policy.value.versions) {
      if (version < 0n) fail(`version_policy.specific.versions: expected >= 0, got ${version}`);
    }
  }
}

function normaliseInstanceGroups(config: ModelConfig, file: string, fail: Fail): string[] {
  const warnings: string[] = [];
  if (config.instanceGroup.length === 0) {
    config.instanceGroup.push(create(ModelInstanceGroupSchema, { count: 1, kind: ModelInstanceGroup_Kind.CPU }));
  }
  config.instanceGroup.forEach((group, i) => {
    const what = `instance_group[${i}]`;
    if (group.name === '') group.name = `${config.name}_${i}`;
    // proto3 cannot tell "count: 0" from absent; Triton treats both as 1.
    if (group.count === 0) group.count = 1;
    if (group.count < 0) fail(`${what}: count: expected >= 1, got ${group.count}`);
    const badGpu = group.gpus.find((gpu) => gpu < 0);
    if (badGpu !== undefined) fail(`${what}: gpus: expected device ordinals >= 0, got ${badGpu}`);
    if (group.gpus.length > 0 && group.kind !== ModelInstanceGroup_Kind.GPU) {
      warnings.push(`${file}: ${what} '${group.name}' lists gpus but is not KIND_GPU; gpus is ignored`);
    }
    switch (group.kind) {
      case ModelInstanceGroup_Kind.AUTO:
        // Triton resolves AUTO to CPU on a host without GPUs, as hotpath always is for ORT.
        group.kind = ModelInstanceGroup_Kind.CPU;
        break;
      case ModelInstanceGroup_Kind.CPU:
        break;
      case ModelInstanceGroup_Kind.GPU:
        // Where it runs (the native executor on the device, or onnxruntime on
        // CPU with the reason) is decided at load: repository/native-loader.ts.
        break;
      default:
        fail(
          `${what}: kind: expected KIND_CPU, KIND_GPU or KIND_AUTO, got ` +
            `${ModelInstanceGroup_KindSchema.values.find((v) => v.number === group.kind)?.name ?? group.kind}`,
        );
    }
  });
  return warnings;
}

function validateDynamicBatching(config: ModelConfig, fail: Fail): void {
  if (config.schedulingChoice.case !== 'dynamicBatching') return;
  const batching = config.schedulingChoice.value;
  if (config.maxBatchSize === 0) {
    fail('dynamic_batching: requires max_batch_size > 0 (a model that cannot batch cannot be batched), got max_batch_size 0');
  }
  for (const size of batching.preferredBatchSize) {
    if (size < 1 || size > config.maxBatchSize) {
      fail(`dynamic_batching.preferred_batch_size: expected values in [1, ${config.maxBatchSize}] (max_batch_size), got ${size}`);
    }
  }
  const levels = batching.priorityLevels;
  const defaultLevel = batching.defaultPriorityLevel;
  if (levels > 0n && (defaultLevel < 1n || defaultLevel > levels)) {
    fail(`dynamic_batching.default_priority_level: expected a value in [1, ${levels}], got ${defaultLevel}`);
  }
}

function validateWarmup(config: ModelConfig, fail: Fail): void {
  const inputs = new Map(config.input.map((input) => [input.name, input]));
  config.modelWarmup.forEach((sample, i) => {
    const what = `model_warmup[${i}]${sample.name === '' ? '' : ` '${sample.name}'`}`;
    if (sample.batchSize < 1) fail(`${what}: batch_size: expected >= 1, got ${sample.batchSize}`);
    if (config.maxBatchSize === 0 && sample.batchSize !== 1) {
      fail(`${what}: batch_size: expected 1 for a model with max_batch_size 0, got ${sample.batchSize}`);
    }
    if (config.maxBatchSize > 0 && sample.batchSize > config.maxBatchSize) {
      fail(`${what}: batch_size: expected <= max_batch_size ${config.maxBatchSize}, got ${sample.batchSize}`);
    }
    for (const [name, input] of Object.entries(sample.inputs)) {
      const declared = inputs.get(name);
      if (declared === undefined) {
        fail(`${what}: input '${name}' is not an input of the model (expected one of: ${[...inputs.keys()].join(', ')})`);
      }
      if (input.dataType !== declared.dataType) {
        fail(
          `${what}: input '${name}': data_type: expected ${dataTypeName(declared.dataType)}, ` +
            `got ${dataTypeName(input.dataType)}`,
        );
      }
      if (input.inputDataType.case === undefined) {
        fail(`${what}: input '${name}': expected one of zero_data, random_data or input_data_file`);
      }
      input.dims.forEach((dim, d) => {
        if (dim < 1n) fail(`${what}: input '${name}': dims[${d}]: expected >= 1 (warm-up shapes are concrete), got ${dim}`);
      });
    }
    for (const name of inputs.keys()) {
      if (!(name in sample.inputs)) fail(`${what}: missing input '${name}' (every model input needs warm-up data)`);
    }
  });
}
