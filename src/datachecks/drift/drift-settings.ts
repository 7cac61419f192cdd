/**
 * A model's drift settings, from its config.pbtxt parameters:
 *
 *     parameters { key: "hotpath_drift" value: { string_value: "on" } }
 *
 * and optionally hotpath_drift_sample_rate (0..1, default 1),
 * hotpath_drift_window (rows, default 10000), hotpath_drift_window_s (a time
 * window in seconds on top of the row bound; 0, the default, means none),
 * hotpath_drift_max_features
 * (default 32), hotpath_drift_watch / hotpath_drift_act (PSI thresholds,
 * 0.1 and 0.25), hotpath_drift_action ('alert' or 'degrade'),
 * hotpath_drift_capture (N: with no reference file, the first N rows served
 * become the reference), hotpath_drift_interval_ms (how often PSI and KS are
 * computed, default 10000) and hotpath_drift_min_rows (rows the window needs
 * before a state is given, default 100). Parsed once per loaded config (a
 * WeakMap keyed by the parameters object); a bad value falls back to its
 * default with a problem reported once.
 */
import type { ConfigParameters } from '../archive/sample-rate.js';
import { DEFAULT_MAX_FEATURES } from './drift-reference.js';

export const DRIFT_PARAMETER = 'hotpath_drift';

export type DriftAction = 'alert' | 'degrade';

export interface DriftSettings {
  readonly sampleRate: number;
  readonly windowRows: number;
  /** 0: no time window; otherwise only rows recorded in the last this many seconds count. */
  readonly windowSeconds: number;
  readonly maxFeatures: number;
  readonly watch: number;
  readonly act: number;
  readonly action: DriftAction;
  readonly captureRows: number;
  readonly intervalMs: number;
  readonly minRows: number;
}

export const DRIFT_DEFAULTS: DriftSettings = {
  sampleRate: 1,
  windowRows: 10_000,
  windowSeconds: 0,
  maxFeatures: DEFAULT_MAX_FEATURES,
  watch: 0.1,
  act: 0.25,
  action: 'alert',
  captureRows: 0,
  intervalMs: 10_000,
  minRows: 100,
};

type Numeric = { key: keyof DriftSettings; parameter: string; min: number; max: number; integer: boolean };
const NUMERIC: readonly Numeric[] = [
  { key: 'sampleRate', parameter: 'hotpath_drift_sample_rate', min: 0, max: 1, integer: false },
  { key: 'windowRows', parameter: 'hotpath_drift_window', min: 1, max: 10_000_000, integer: true },
  { key: 'windowSeconds', parameter: 'hotpath_drift_window_s', min: 0, max: 30 * 86_400, integer: false },
  { key: 'maxFeatures', parameter: 'hotpath_drift_max_features', min: 1, max: 4096, integer: true },
  { key: 'watch', parameter: 'hotpath_drift_watch', min: 0, max: 1e9, integer: false },
  { key: 'act', parameter: 'hotpath_drift_act', min: 0, max: 1e9, integer: false },
  { key: 'captureRows', parameter: 'hotpath_drift_capture', min: 0, max: 10_000_000, integer: true },
  { key: 'intervalMs', parameter: 'hotpath_drift_interval_ms', min: 50, max: 86_400_000, integer: true },
  { key: 'minRows', parameter: 'hotpath_drift_min_rows', min: 1, max: 10_000_000, integer: true },
];

const cache = new WeakMap<object, DriftSettings | undefined>();

/** The model's settings, or undefined when drift is off for it. */
export function driftSettings(parameters: ConfigParameters | undefined, onInvalid: (problem: string) => void): DriftSettings | undefined {
  if (parameters === undefined) return undefined;
  if (!cache.has(parameters)) cache.set(parameters, parseDriftSettings(parameters, onInvalid));
  return cache.get(parameters);
}

export function parseDriftSettings(parameters: ConfigParameters, onInvalid: (problem: string) => void): DriftSettings | undefined {
  const on = parameters[DRIFT_PARAMETER]?.stringValue.trim().toLowerCase();
  if (on === undefined || on === 'off' || on === 'false' || on === '') return undefined;
  if (on !== 'on' && on !== 'true') {
    onInvalid(`parameter '${DRIFT_PARAMETER}': expected 'on' or 'off', got '${on.slice(0, 64)}'; drift stays off`);
    return undefined;
  }
  const settings: Record<string, unknown> = { ...DRIFT_DEFAULTS };
  for (const { key, parameter, min, max, integer } of NUMERIC) {
    const raw = parameters[parameter]?.stringValue;
    if (raw === undefined) continue;
    const value = raw.trim() === '' ? Number.NaN : Number(raw);
    if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
      onInvalid(`parameter '${parameter}': expected ${integer ? 'an integer' : 'a number'} in ${min}..${max}, got '${raw.slice(0, 64)}'`);
      continue;
    }
    settings[key] = value;
  }
  const action = parameters['hotpath_drift_action']?.stringValue.trim();
  if (action === 'alert' || action === 'degrade') settings['action'] = action;
  else if (action !== undefined) onInvalid(`parameter 'hotpath_drift_action': expected 'alert' or 'degrade', got '${action.slice(0, 64)}'`);
  return settings as unknown as DriftSettings;
}
