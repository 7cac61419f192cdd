/**
 * `--cache-config`, in Triton's syntax: `--cache-config <cache>,<key>=<value>`,
 * repeatable. hotpath has Triton's `local` cache only, with its one key,
 * `size` (bytes; hotpath also takes `512MiB`-style sizes). The cache is on
 * when a size above 0 is given; a model then opts in with
 * `response_cache { enable: true }` in its config.pbtxt.
 */
import { byteSizeFlag, UsageError } from '../../common/flag-values.js';

export const CACHE_USAGE = `  --cache-config local,size=SIZE  the response cache (Triton's syntax): SIZE bytes of answers, least
                               recently used evicted first, charged to each model's tenant; models opt in
                               with response_cache { enable: true } (README, Data checks)
`;

export function cacheFlagOptions() {
  return { 'cache-config': { type: 'string' as const, multiple: true as const, default: [] as string[] } };
}

/** The cache's size in bytes; undefined: no cache. Throws UsageError. */
export function cacheSizeBytes(values: { 'cache-config'?: unknown }): number | undefined {
  const specs = (values['cache-config'] ?? []) as string[];
  let size: number | undefined;
  for (const spec of specs) {
    const comma = spec.indexOf(',');
    const name = comma < 0 ? spec : spec.slice(0, comma);
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
