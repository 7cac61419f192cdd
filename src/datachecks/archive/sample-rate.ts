/**
 * A model's own archive sample rate: the config.pbtxt parameter
 *
 *     parameters { key: "hotpath_archive_sample_rate" value: { string_value: "0.1" } }
 *
 * a number in 0..1 that overrides `--archive-sample-rate` for that model
 * (0: never archived). Read once per loaded config (the parameters object is
 * the key of a cache), so the request path pays a WeakMap lookup. A value
 * that is not a number in 0..1 is ignored, with one warning per config.
 */

export const ARCHIVE_SAMPLE_RATE_PARAMETER = 'hotpath_archive_sample_rate';

/** A config's `parameters` map, as ModelConfig carries it. */
export type ConfigParameters = Readonly<Record<string, { readonly stringValue: string } | undefined>>;

const cache = new WeakMap<object, number | undefined>();

/** The rate for a model with `parameters`: its override, else `fallback`. */
export function modelSampleRate(
  parameters: ConfigParameters | undefined,
  fallback: number,
  onInvalid: (problem: string) => void,
): number {
  if (parameters === undefined) return fallback;
  if (!cache.has(parameters)) {
    const parsed = parseSampleRate(parameters[ARCHIVE_SAMPLE_RATE_PARAMETER]?.stringValue);
    if (typeof parsed === 'string') onInvalid(parsed);
    cache.set(parameters, typeof parsed === 'number' ? parsed : undefined);
  }
  return cache.get(parameters) ?? fallback;
}

/** The override's value; undefined when absent, a problem (string) when invalid. */
export function parseSampleRate(raw: string | undefined): number | string | undefined {
  if (raw === undefined) return undefined;
  const value = raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    return `parameter '${ARCHIVE_SAMPLE_RATE_PARAMETER}': expected a number in 0..1, got '${raw.slice(0, 64)}'`;
  }
  return value;
}
