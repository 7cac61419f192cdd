/**
 * The model repository's flags (options table, common/option-table.ts):
 * where the models are (one or more roots, as Triton takes them), which load
 * at start-up (model control), how configs are completed, and how models run.
 */
import path from 'node:path';
import { booleanFlag, choiceFlag, integerFlag, numberFlag, UsageError } from '../common/flag-values.js';
import { integerIn, isBoolean, option, type FlagValues, type OptionEntry } from '../common/option-table.js';
import { DEFAULT_MAX_BATCH_SIZE } from './config-autocomplete.js';
import { ALL_MODELS, MODEL_CONTROL_MODES, type ModelControlMode } from './model-control.js';
import { modelNameProblem } from './model-directory.js';

export interface RepositoryOptions {
  /** `--model-repository` (or `--model-store`), repeatable: the repository roots, absolute, in order. */
  modelRepositories: readonly string[];
  /** 'default' when no --model-control-mode is given (see repository/model-control.ts). */
  modelControlMode: ModelControlMode;
  /** `--load-model` names, in order; '*' = every model. */
  startupModels: readonly string[];
  repositoryPollSecs: number;
  autoCompleteConfig: boolean;
  /** `--backend-config=onnxruntime,default-max-batch-size=N`: max_batch_size of auto-completed configs that can batch. */
  defaultMaxBatchSize: number;
  intraOpThreads: number;
  /** `--model-load-concurrency` (Triton's `--model-load-thread-count`): models loaded and warmed at once. */
  modelLoadConcurrency: number;
  defaultWarmup: boolean;
}

const strings = (raw: unknown): string[] => (raw === undefined ? [] : [...(raw as readonly string[])]);

/** Both spellings (--model-store is read as --model-repository), every value in order, each root once. */
function roots(values: FlagValues): string[] | undefined {
  const given = strings(values['model-repository']);
  if (given.length === 0) return undefined;
  const empty = given.find((dir) => dir === '');
  if (empty !== undefined) throw new UsageError("--model-repository: expected a directory, got ''");
  return [...new Set(given.map((dir) => path.resolve(dir)))];
}

function modelControl(values: FlagValues): Partial<RepositoryOptions> {
  const rawMode = values['model-control-mode'] as string | undefined;
  // Triton writes the modes in capitals too (--model-control-mode=EXPLICIT).
  const mode: ModelControlMode = rawMode === undefined ? 'default' : choiceFlag('--model-control-mode', rawMode, MODEL_CONTROL_MODES);
  const startupModels = strings(values['load-model']);
  if (startupModels.length > 0 && mode !== 'explicit') {
    throw new UsageError(
      `--load-model: expected only with --model-control-mode=explicit, got it with ${rawMode === undefined ? 'no --model-control-mode' : `--model-control-mode=${rawMode}`} ` +
        '(every model loads at start-up in the other modes)',
    );
  }
  const rawPoll = (values['repository-poll-secs'] as string | undefined) ?? '15';
  const repositoryPollSecs = numberFlag('--repository-poll-secs', rawPoll, 0, 86400);
  if (mode === 'poll' && repositoryPollSecs === 0) {
    throw new UsageError(`--repository-poll-secs: expected a number above 0 with --model-control-mode=poll, got '${rawPoll}'`);
  }
  return { modelControlMode: mode, startupModels, repositoryPollSecs };
}

/** `--disable-auto-complete-config` and Triton's `--strict-model-config` say the same thing, inverted. */
function autoComplete(values: FlagValues): Partial<RepositoryOptions> {
  const disabled = booleanFlag('--disable-auto-complete-config', values['disable-auto-complete-config'] as string | undefined, undefined);
  const strict = booleanFlag('--strict-model-config', values['strict-model-config'] as string | undefined, undefined);
  if (disabled === undefined && strict === undefined) return {};
  if (disabled !== undefined && strict !== undefined && disabled !== strict) {
    throw new UsageError(`--disable-auto-complete-config=${disabled} and --strict-model-config=${strict} disagree; expected one of them, or the same value`);
  }
  return { autoCompleteConfig: !(disabled ?? strict ?? false) };
}

/**
 * `--backend-config=<backend>,<setting>=<value>` (or a global
 * `<setting>=<value>`): hotpath's one backend is onnxruntime, and its one
 * setting that means something here is default-max-batch-size. The others
 * are accepted and warned about (backendConfigWarnings).
 */
function backendSettings(values: FlagValues): { maxBatch: number | undefined; ignored: string[] } {
  let maxBatch: number | undefined;
  const ignored: string[] = [];
  for (const spec of strings(values['backend-config'])) {
    const comma = spec.indexOf(',');
    const eqBeforeComma = spec.indexOf('=') >= 0 && (comma < 0 || spec.indexOf('=') < comma);
    const backend = eqBeforeComma ? '' : spec.slice(0, comma < 0 ? spec.length : comma);
    const setting = eqBeforeComma ? spec : comma < 0 ? '' : spec.slice(comma + 1);
    const eq = setting.indexOf('=');
    if (eq <= 0) throw new UsageError(`--backend-config: expected <backend>,<setting>=<value> (e.g. onnxruntime,default-max-batch-size=8), got '${spec}'`);
    const key = setting.slice(0, eq);
    const value = setting.slice(eq + 1);
    if (key === 'default-max-batch-size' && (backend === '' || backend === 'onnxruntime')) {
      maxBatch = integerFlag('--backend-config default-max-batch-size', value, 0, 1 << 30);
    } else {
      ignored.push(spec);
    }
  }
  return { maxBatch, ignored };
}

export const REPOSITORY_OPTIONS: readonly OptionEntry<object>[] = [
  {
    flags: [
      { name: 'model-repository', arg: 'DIR', repeatable: true, triton: true,
        help: 'Triton-layout model repository (required); repeatable: every root is served, and a model name in two roots fails to load' },
      { name: 'model-store', arg: 'DIR', repeatable: true, triton: true, aliasOf: 'model-repository', help: 'the same as --model-repository' },
    ],
    defaults: (): Pick<RepositoryOptions, 'modelRepositories'> => ({ modelRepositories: [] }),
    parse: (values) => {
      const dirs = roots(values);
      return dirs === undefined ? {} : { modelRepositories: dirs };
    },
    check: (o: Pick<RepositoryOptions, 'modelRepositories'>, name) => {
      const dirs = o.modelRepositories;
      if (!Array.isArray(dirs) || dirs.length === 0) throw new UsageError(`${name('modelRepositories')} (or --model-store) is required`);
      const bad = dirs.find((dir) => typeof dir !== 'string' || dir === '');
      if (bad !== undefined) throw new UsageError(`${name('modelRepositories')}: expected directories, got '${String(bad)}'`);
    },
    fields: { 'model-repository': 'modelRepositories', 'model-store': 'modelRepositories' },
  },
  {
    flags: [
      { name: 'model-control-mode', arg: 'MODE', triton: true,
        help: "none|explicit|poll; without it every model loads at start-up and load/unload are allowed (Triton's default is none, which refuses them)" },
      { name: 'load-model', arg: 'NAME', repeatable: true, triton: true, help: "explicit mode: a model to load at start-up (repeatable; '*' = all)" },
      { name: 'repository-poll-secs', arg: 'S', triton: true, help: 'poll mode: seconds between repository scans (default 15)' },
    ],
    defaults: (): Pick<RepositoryOptions, 'modelControlMode' | 'startupModels' | 'repositoryPollSecs'> => ({
      modelControlMode: 'default', startupModels: [], repositoryPollSecs: 15,
    }),
    parse: modelControl,
    check: (o: Pick<RepositoryOptions, 'modelControlMode' | 'startupModels' | 'repositoryPollSecs'>, name) => {
      if (o.modelControlMode !== 'default' && !MODEL_CONTROL_MODES.includes(o.modelControlMode)) {
        throw new UsageError(`${name('modelControlMode')}: expected one of ${MODEL_CONTROL_MODES.join('|')}, got '${o.modelControlMode}'`);
      }
      for (const model of o.startupModels) {
        const problem = model === ALL_MODELS ? undefined : modelNameProblem(model);
        if (problem !== undefined) throw new UsageError(`${name('startupModels')}: ${problem}, got '${model}'`);
      }
      if (o.startupModels.includes(ALL_MODELS) && o.startupModels.length > 1) {
        throw new UsageError(`${name('startupModels')}: expected '${ALL_MODELS}' alone (it already means every model), got ${o.startupModels.map((n) => `'${n}'`).join(', ')}`);
      }
      if (!(o.repositoryPollSecs >= 0 && o.repositoryPollSecs <= 86400)) {
        throw new UsageError(`${name('repositoryPollSecs')}: expected a number in 0..86400, got ${o.repositoryPollSecs}`);
      }
    },
    fields: { 'model-control-mode': 'modelControlMode', 'load-model': 'startupModels', 'repository-poll-secs': 'repositoryPollSecs' },
  },
  {
    flags: [
      { name: 'disable-auto-complete-config', triton: true,
        help: 'do not complete configs from the ONNX model: a config must name every input and output, with data_type and dims (default: complete)' },
      { name: 'strict-model-config', triton: true, help: 'true = --disable-auto-complete-config (default false)' },
    ],
    defaults: () => ({ autoCompleteConfig: true }),
    parse: autoComplete,
    check: (o: Pick<RepositoryOptions, 'autoCompleteConfig'>, name) => {
      const problem = isBoolean(o.autoCompleteConfig);
      if (problem !== undefined) throw new UsageError(`${name('autoCompleteConfig')}: ${problem}, got ${String(o.autoCompleteConfig)}`);
    },
    fields: { 'disable-auto-complete-config': 'autoCompleteConfig', 'strict-model-config': 'autoCompleteConfig' },
  },
  {
    flags: [{
      name: 'backend-config', arg: 'BACKEND,KEY=VALUE', repeatable: true, triton: true,
      help: `onnxruntime,default-max-batch-size=N: max_batch_size of auto-completed configs whose model can batch (default ${DEFAULT_MAX_BATCH_SIZE}); a config that sets max_batch_size keeps it. Other settings are accepted with a warning (no other backend here)`,
    }],
    defaults: () => ({ defaultMaxBatchSize: DEFAULT_MAX_BATCH_SIZE }),
    parse: (values) => {
      const { maxBatch } = backendSettings(values);
      return maxBatch === undefined ? {} : { defaultMaxBatchSize: maxBatch };
    },
    check: (o: Pick<RepositoryOptions, 'defaultMaxBatchSize'>, name) => {
      const problem = integerIn(0, 1 << 30)(o.defaultMaxBatchSize);
      if (problem !== undefined) throw new UsageError(`${name('defaultMaxBatchSize')}: ${problem}, got ${o.defaultMaxBatchSize}`);
    },
    fields: { 'backend-config': 'defaultMaxBatchSize' },
    warn: (values) =>
      backendSettings(values).ignored.map((spec) => `--backend-config=${spec}: no effect here: hotpath's one backend is onnxruntime, and default-max-batch-size is its one setting`),
  },
  option({
    flag: 'intra-op-threads', field: 'intraOpThreads', arg: 'N', default: 1,
    help: 'onnxruntime intra-op threads per worker (default 1)',
    parse: (raw, name) => integerFlag(name, raw, 1, 1024),
    check: integerIn(1, 1024),
  }),
  {
    flags: [
      { name: 'model-load-concurrency', arg: 'N', help: 'models loaded and warmed at once (default 2)' },
      { name: 'model-load-thread-count', arg: 'N', triton: true, help: 'the same as --model-load-concurrency' },
    ],
    defaults: () => ({ modelLoadConcurrency: 2 }),
    parse: (values) => {
      const own = values['model-load-concurrency'] as string | undefined;
      const triton = values['model-load-thread-count'] as string | undefined;
      if (own !== undefined && triton !== undefined && own !== triton) {
        throw new UsageError(`--model-load-concurrency and --model-load-thread-count are the same flag; expected one value, got '${own}' and '${triton}'`);
      }
      if (own === undefined && triton === undefined) return {};
      return { modelLoadConcurrency: integerFlag(own === undefined ? '--model-load-thread-count' : '--model-load-concurrency', (own ?? triton)!, 1, 64) };
    },
    check: (o: Pick<RepositoryOptions, 'modelLoadConcurrency'>, name) => {
      const problem = integerIn(1, 64)(o.modelLoadConcurrency);
      if (problem !== undefined) throw new UsageError(`${name('modelLoadConcurrency')}: ${problem}, got ${o.modelLoadConcurrency}`);
    },
    fields: { 'model-load-concurrency': 'modelLoadConcurrency', 'model-load-thread-count': 'modelLoadConcurrency' },
  },
  {
    flags: [{ name: 'no-default-warmup', help: 'skip the default warm-up of models without model_warmup' }],
    defaults: () => ({ defaultWarmup: true }),
    parse: (values) => {
      const raw = values['no-default-warmup'] as string | undefined;
      return raw === undefined ? {} : { defaultWarmup: !booleanFlag('--no-default-warmup', raw, false) };
    },
    check: (o: Pick<RepositoryOptions, 'defaultWarmup'>, name) => {
      const problem = isBoolean(o.defaultWarmup);
      if (problem !== undefined) throw new UsageError(`${name('defaultWarmup')}: ${problem}, got ${String(o.defaultWarmup)}`);
    },
    fields: { 'no-default-warmup': 'defaultWarmup' },
  },
];
