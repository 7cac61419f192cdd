/**
 * Completing a model's config from the ONNX model, or, with auto-complete off
 * (`--disable-auto-complete-config`, Triton's `--strict-model-config=true`),
 * requiring the config to say it all. Strictness is judged against what
 * auto-complete would have filled, so the two can never disagree on what
 * "complete" means.
 *
 * As in Triton, a strict config still gets its name, platform, backend and
 * default instance group filled: those are normalisation, not auto-complete.
 */
import type { ModelConfig, ModelInput, ModelOutput } from '../generated/model_config_pb.js';
import { DataType } from '../generated/model_config_pb.js';
import { completeModelConfig, type ModelIo } from './config-autocomplete.js';
import { ModelConfigError } from './model-config-error.js';

/** How the config is completed (flag spellings are for the error message). */
const STRICT_FLAGS = '--disable-auto-complete-config / --strict-model-config=true';

/**
 * The model's config completed from its ONNX inputs and outputs. With
 * `autoComplete` false, throws ModelConfigError when there is no config or
 * when it leaves anything to complete, naming each missing field.
 */
export function completeConfig(
  config: ModelConfig | undefined,
  modelName: string,
  io: ModelIo,
  opts: { readonly file: string; readonly autoComplete: boolean; readonly defaultMaxBatchSize?: number | undefined },
): ModelConfig {
  if (config === undefined && !opts.autoComplete) {
    throw new ModelConfigError(
      opts.file,
      undefined,
      `no config.pbtxt, and auto-complete is off (${STRICT_FLAGS}): expected a config naming every input and output`,
    );
  }
  const completed = completeModelConfig(config, modelName, io, { file: opts.file, defaultMaxBatchSize: opts.defaultMaxBatchSize });
  if (opts.autoComplete || config === undefined) return completed;
  const missing = autoCompletedFields(config, completed);
  if (missing.length > 0) {
    throw new ModelConfigError(
      opts.file,
      undefined,
      `incomplete config and auto-complete is off (${STRICT_FLAGS}): ${missing.join('; ')}`,
    );
  }
  return completed;
}

/** What auto-complete filled in `completed` that `written` left out, one phrase each. */
export function autoCompletedFields(written: ModelConfig, completed: ModelConfig): string[] {
  const missing: string[] = [];
  if (written.maxBatchSize !== completed.maxBatchSize) {
    missing.push(
      `max_batch_size: not set (the model can batch; auto-complete would set ${completed.maxBatchSize}; ` +
        'write it, or write dims with the full shape for a model that does not batch)',
    );
  }
  missing.push(...tensorGaps('input', written.input, completed.input));
  missing.push(...tensorGaps('output', written.output, completed.output));
  return missing;
}

function tensorGaps(
  kind: 'input' | 'output',
  written: ReadonlyArray<ModelInput | ModelOutput>,
  completed: ReadonlyArray<ModelInput | ModelOutput>,
): string[] {
  const gaps: string[] = [];
  const byName = new Map(written.map((tensor) => [tensor.name, tensor]));
  for (const tensor of completed) {
    const mine = byName.get(tensor.name);
    if (mine === undefined) {
      gaps.push(`${kind} '${tensor.name}': not in the config (the ONNX model has it)`);
      continue;
    }
    if (mine.dataType === DataType.TYPE_INVALID) gaps.push(`${kind} '${tensor.name}': data_type not set`);
    const sameDims = mine.dims.length === tensor.dims.length && mine.dims.every((d, i) => d === tensor.dims[i]);
    if (!sameDims || (mine.reshape === undefined) !== (tensor.reshape === undefined)) {
      gaps.push(`${kind} '${tensor.name}': dims not set`);
    }
  }
  return gaps;
}
