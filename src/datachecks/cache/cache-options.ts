/**
 * `--cache-config`, in Triton's syntax: `--cache-config <cache>,<key>=<value>`,
 * repeatable. hotpath has Triton's `local` cache only, with its one key,
 * `size` (bytes; hotpath also takes `512MiB`-style sizes). The cache is on
 * when a size above 0 is given; a model then opts in with
 * `response_cache { enable: true }` in its config.pbtxt.
 */
import { byteSizeFlag, UsageError } from '../../common/flag-values.js';
import type { FlagValues, OptionEntry } from '../../common/option-table.js';

export interface CacheOptions {
  /** `--cache-config local,size=BYTES` (or Triton's older `--response-cache-byte-size`): the response cache's size; undefined: no cache. */
  responseCacheBytes: number | undefined;
}

export const CACHE_OPTIONS: readonly OptionEntry<object>[] = [{
  flags: [
    { name: 'cache-config', arg: 'local,size=SIZE', repeatable: true, triton: true,
      help: "the response cache: SIZE bytes of answers, least recently used evicted first, charged to each model's tenant; models opt in with response_cache { enable: true } (README, Data checks)" },
    { name: 'response-cache-byte-size', arg: 'SIZE', triton: true, help: "Triton's older spelling of --cache-config local,size=SIZE (0 = no cache)" },
  ],
  defaults: (): CacheOptions => ({ responseCacheBytes: undefined }),
  parse: (values): Partial<CacheOptions> => {
    const fromConfig = cacheSizeBytes(values);
    const raw = values['response-cache-byte-size'] as string | undefined;
    if (raw === undefined) return values['cache-config'] === undefined ? {} : { responseCacheBytes: fromConfig };
    const bytes = raw.trim() === '0' ? undefined : byteSizeFlag('--response-cache-byte-size', raw);
    if (values['cache-config'] !== undefined && fromConfig !== bytes) {
      throw new UsageError(`--response-cache-byte-size=${raw} and --cache-config disagree; expected one of them, or the same size`);
    }
    return { responseCacheBytes: bytes };
  },
  check: (o: CacheOptions, name) => {
    const bytes = o.responseCacheBytes;
    if (bytes !== undefined && !(Number.isInteger(bytes) && bytes > 0)) {
      throw new UsageError(`${name('responseCacheBytes')}: expected a positive size in bytes (or undefined for no cache), got ${bytes}`);
    }
  },
  fields: { 'cache-config': 'responseCacheBytes', 'response-cache-byte-size': 'responseCacheBytes' },
  warn: cacheWarnings,
}];

/** Triton's caches other than local: accepted with a warning, no cache from them. */
const TRITON_CACHES: ReadonlySet<string> = new Set(['redis']);

function cacheWarnings(values: FlagValues): string[] {
  return ((values['cache-config'] ?? []) as readonly string[])
    .filter((spec) => TRITON_CACHES.has(spec.split(',')[0]!))
    .map((spec) => `--cache-config ${spec}: no effect here: hotpath has only the local cache (--cache-config local,size=SIZE)`);
}

/** The cache's size in bytes; undefined: no cache. Throws UsageError. */
export function cacheSizeBytes(values: { 'cache-config'?: unknown }): number | undefined {
  const specs = (values['cache-config'] ?? []) as string[];
  let size: number | undefined;
  for (const spec of specs) {
    const comma = spec.indexOf(',');
    const name = comma < 0 ? spec : spec.slice(0, comma);
    // Triton's other caches (redis) are not here: warned about (cacheWarnings), not fatal.
    if (TRITON_CACHES.has(name)) continue;
    if (name !== 'local') {
      throw new UsageError(`--cache-config: expected 'local,<key>=<value>' (the only cache hotpath has), got '${spec}'`);
    }
    const setting = comma < 0 ? '' : spec.slice(comma + 1);
    const eq = setting.indexOf('=');
    const key = eq < 0 ? setting : setting.slice(0, eq);
    if (key !== 'size' || eq < 0) {
      throw new UsageError(`--cache-config: expected 'local,size=<bytes>' (the local cache's one setting), got '${spec}'`);
    }
    const raw = setting.slice(eq + 1);
    // Triton's size=0 is a cache of nothing: off.
    size = raw.trim() === '0' ? 0 : byteSizeFlag('--cache-config local,size', raw);
  }
  return size === undefined || size === 0 ? undefined : size;
}
