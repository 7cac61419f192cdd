/**
 * Triton's model control modes (`--model-control-mode`): which models load at
 * start-up, whether clients may load and unload models, and whether the
 * repository is polled for changes. The one place that decides, so both front
 * doors (gRPC and REST call the same ModelManager methods) refuse alike.
 *
 * - `default` (no flag): every model loads at start-up, and load and unload
 *   are allowed. hotpath's own default; Triton's is `none`.
 * - `none`: every model loads at start-up; load and unload are refused.
 * - `explicit`: only the `--load-model` models load at start-up (`*` = all);
 *   load and unload are allowed.
 * - `poll`: every model loads at start-up, and the repository is rescanned
 *   every `--repository-poll-secs`; load and unload are refused.
 */
import { echo } from '../common/echo.js';
import { unavailable, type ServingError } from '../common/serving-error.js';

export type ModelControlMode = 'default' | 'none' | 'explicit' | 'poll';

/** The modes a user can name (`default` is what no flag means). */
export const MODEL_CONTROL_MODES: readonly ModelControlMode[] = ['none', 'explicit', 'poll'];

/** The index reason of a model explicit mode did not load at start-up. */
export const NOT_LOADED_REASON = 'not loaded (--model-control-mode=explicit: load it with the repository load API)';

/** `--load-model '*'`: every model in the repository. */
export const ALL_MODELS = '*';

export interface ModelControlSettings {
  readonly mode: ModelControlMode;
  /** `--load-model` names; only explicit mode reads them. */
  readonly startupModels: readonly string[];
  /** Poll mode: time between the end of one repository scan and the start of the next. */
  readonly pollIntervalMs: number;
}

export const DEFAULT_MODEL_CONTROL: ModelControlSettings = { mode: 'default', startupModels: [], pollIntervalMs: 15_000 };

/**
 * Triton's words, kept verbatim because clients and operators match on them;
 * Triton answers them for `none` as well as `poll`, and so does hotpath, with
 * what the mode really is after them.
 */
const TRITON_REFUSAL = 'explicit model load / unload is not allowed if polling is enabled';

/** The refusal of a client's load or unload in this mode; undefined when it is allowed. */
export function loadUnloadRefusal(mode: ModelControlMode, action: 'load' | 'unload', model: string): ServingError | undefined {
  if (mode === 'default' || mode === 'explicit') return undefined;
  const why = mode === 'poll'
    ? 'the repository is polled (--model-control-mode=poll): change the repository instead'
    : 'the server runs with --model-control-mode=none: restart it with --model-control-mode=explicit to load and unload models';
  return unavailable(`${TRITON_REFUSAL} (cannot ${action} model ${echo(model)}: ${why})`);
}

/** The models to load at start-up, from the repository's model directories. */
export function startupModelNames(settings: ModelControlSettings, onDisk: readonly string[]): string[] {
  if (settings.mode !== 'explicit' || settings.startupModels.includes(ALL_MODELS)) return [...onDisk];
  // A named model missing from the repository is still attempted, so its
  // failure is recorded and the server reports it instead of ignoring it.
  return [...new Set(settings.startupModels)];
}
