/**
 * Triton's config override: a load request (RepositoryModelLoad, or REST
 * `POST /v2/repository/models/{m}/load`) whose `config` parameter carries a
 * whole ModelConfig as JSON. It replaces config.pbtxt for that load; it is
 * not a patch, so anything it leaves out is what auto-complete (or strict
 * mode's refusal) makes of it, exactly as for a config.pbtxt that leaves it
 * out. After parsing, the override goes through the same completion and
 * checks as config.pbtxt (model-loader.ts).
 *
 * The JSON is protobuf's JSON mapping of ModelConfig, as Triton reads it:
 * field names in snake_case or lowerCamelCase, enums by name
 * (`"data_type": "TYPE_FP32"`), 64-bit integers as numbers or strings.
 * Unlike config.pbtxt, an unknown key fails instead of being dropped with a
 * warning: the override comes from a program whose caller never sees the
 * server's log, and a typo silently ignored would load a config nobody asked
 * for.
 *
 * Pure; safe in any thread.
 */
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ModelConfigSchema, type ModelConfig } from '../generated/model_config_pb.js';
import { ModelConfigError } from './model-config-error.js';
import { unsupportedFieldWarnings } from './model-config.js';

/** The load parameter that carries the override (Triton's name). */
export const CONFIG_OVERRIDE_PARAMETER = 'config';

/**
 * Stands where a config.pbtxt path stands in messages about an overridden
 * config (ModelConfigError's `file`): "config override: max_batch_size: ...".
 */
export const CONFIG_OVERRIDE_SOURCE = 'config override';

export interface ConfigOverride {
  /** The parsed config, not yet completed or validated; each load works on its own clone. */
  readonly config: ModelConfig;
  /** Fields set that hotpath ignores, for the server's log. */
  readonly warnings: string[];
}

/**
 * Parses the `config` parameter's JSON. Throws ModelConfigError (source
 * CONFIG_OVERRIDE_SOURCE) naming what is wrong: not JSON, not an object, an
 * unknown key, or a value of the wrong type, with the field it is in.
 */
export function parseConfigOverride(json: string): ConfigOverride {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    fail(`expected a ModelConfig as JSON, got text that is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail(`expected a ModelConfig as a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
  }
  let config: ModelConfig;
  try {
    // The value parsed above, not the text again: one JSON parse per override.
    config = fromJson(ModelConfigSchema, value as JsonValue);
  } catch (err) {
    // protobuf-es names the message or field and the value; the package prefix only adds noise.
    fail((err instanceof Error ? err.message : String(err)).replaceAll('inference.', ''));
  }
  return { config, warnings: unsupportedFieldWarnings(config, [], CONFIG_OVERRIDE_SOURCE) };
}

function fail(reason: string): never {
  throw new ModelConfigError(CONFIG_OVERRIDE_SOURCE, undefined, reason);
}
