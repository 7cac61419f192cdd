/**
 * `hotpath serve`'s options: the table (common/option-table.ts) assembled
 * from the flag groups that live beside their features, and the three things
 * it drives:
 *
 *   - `readServeCommandLine(argv)`: the command line → checked options, with
 *     the warnings its flags deserve and each flag as the user wrote it;
 *   - `fillServeOptions(given)`: createServer's typed options → the same
 *     checked options, defaults from the same table;
 *   - `SERVE_USAGE`: the help text.
 */
import { readFlags, usageLines, type FlagSpec, type OptionEntry, type OptionNamer } from '../common/option-table.js';
import { ARCHIVE_OPTIONS, type ArchiveOptions } from '../datachecks/archive/archive-options.js';
import { CACHE_OPTIONS, type CacheOptions } from '../datachecks/cache/cache-options.js';
import { LOG_OPTIONS, type LogOptions, type MetricsOptions } from '../observability/log-options.js';
import { PATROL_OPTIONS, type PatrolOptions } from '../patrol/patrol-options.js';
import { REPOSITORY_OPTIONS, type RepositoryOptions } from '../repository/repository-options.js';
import { ROUTES_OPTIONS, type RoutesOptions } from '../routing/routes-options.js';
import { ACCESS_OPTIONS, type AccessOptions } from '../security/access-options.js';
import { CONNECTION_OPTIONS, type ConnectionOptions } from '../security/connection-options.js';
import { DOOR_LIMIT_OPTIONS, type DoorLimitOptions } from '../security/door-limit-options.js';
import { TLS_OPTIONS, type TlsOptions } from '../security/tls-options.js';
import { DOOR_OPTIONS, type DoorOptions } from '../server/door-options.js';
import { MEMORY_OPTIONS, type MemoryOptions } from '../tenancy/memory-options.js';
import { LIFECYCLE_OPTIONS, type LifecycleOptions } from './lifecycle-options.js';
import { TRITON_NO_EFFECT_OPTIONS } from './triton-flags.js';

/** Every option of `hotpath serve`, typed and filled (createServer takes them camelCased; durations in ms, sizes in bytes). */
export type ServeOptions = RepositoryOptions &
  DoorOptions &
  ConnectionOptions &
  TlsOptions &
  DoorLimitOptions &
  AccessOptions &
  MemoryOptions &
  LifecycleOptions &
  LogOptions &
  MetricsOptions &
  RoutesOptions &
  ArchiveOptions &
  CacheOptions &
  PatrolOptions;

/** The table, in the usage's order. Each group's entries are typed by their own slice of ServeOptions. */
const SECTIONS: readonly { readonly title: string; readonly entries: readonly OptionEntry<object>[] }[] = [
  { title: 'model repository', entries: REPOSITORY_OPTIONS },
  { title: 'front doors', entries: [...DOOR_OPTIONS, ...TLS_OPTIONS, ...CONNECTION_OPTIONS, ...DOOR_LIMIT_OPTIONS] },
  { title: 'model life cycle and shutdown', entries: LIFECYCLE_OPTIONS },
  { title: 'tenants, memory and access', entries: [...MEMORY_OPTIONS, ...ACCESS_OPTIONS] },
  { title: 'routes and data checks', entries: [...ROUTES_OPTIONS, ...ARCHIVE_OPTIONS, ...CACHE_OPTIONS] },
  { title: 'logs, metrics and the leak patrol', entries: [...LOG_OPTIONS, ...PATROL_OPTIONS] },
  { title: "tritonserver's flags accepted with no effect here (a warning says why)", entries: TRITON_NO_EFFECT_OPTIONS },
];

// The checks see the whole filled options; each entry declares the slice it reads.
const ENTRIES: readonly OptionEntry<Record<string, unknown>>[] = SECTIONS.flatMap((s) => s.entries) as readonly OptionEntry<Record<string, unknown>>[];
const FLAGS: readonly FlagSpec[] = ENTRIES.flatMap((entry) => entry.flags);

/** Field → the first flag that sets it, for naming fields in checks' messages. */
const FLAG_OF_FIELD: ReadonlyMap<string, string> = (() => {
  const map = new Map<string, string>();
  for (const entry of ENTRIES) for (const [flag, field] of Object.entries(entry.fields ?? {})) if (!map.has(field)) map.set(field, flag);
  return map;
})();

/** Names a field by its flag (`--grpc-port`), as the command line's messages do. */
const flagNamer: OptionNamer = (field) => {
  const flag = FLAG_OF_FIELD.get(field);
  return flag === undefined ? field : `--${flag}`;
};

/** Names a field as createServer's caller wrote it. */
const fieldNamer: OptionNamer = (field) => field;

/** Every option's default, from the table. `modelRepositories` is empty: the caller must give one. */
export function serveDefaults(): ServeOptions {
  return Object.assign({}, ...ENTRIES.map((entry) => entry.defaults())) as ServeOptions;
}

function checkAll(options: ServeOptions, name: OptionNamer): void {
  for (const entry of ENTRIES) entry.check?.(options as unknown as Record<string, unknown>, name);
}

export interface ServeCommandLine {
  readonly options: ServeOptions;
  /** One line each: Triton's flags that have no effect here, and why. */
  readonly warnings: readonly string[];
  /** Each flag given, as written (a prefix, say), by its full name: `--http-p` for `http-port`. */
  readonly written: ReadonlyMap<string, string>;
}

/** The command line → checked options. Throws UsageError (exit 2), UnknownFlagError for a flag nobody has. */
export function readServeCommandLine(argv: readonly string[]): ServeCommandLine {
  const { values, written } = readFlags(argv, FLAGS);
  const options = serveDefaults() as unknown as Record<string, unknown>;
  for (const entry of ENTRIES) Object.assign(options, entry.parse(values));
  checkAll(options as unknown as ServeOptions, flagNamer);
  const warnings = ENTRIES.flatMap((entry) => entry.warn?.(values) ?? []);
  return { options: options as unknown as ServeOptions, warnings, written };
}

/** The command line → checked options (readServeCommandLine without the warnings). */
export function parseServeOptions(argv: readonly string[]): ServeOptions {
  return readServeCommandLine(argv).options;
}

/**
 * createServer's options → checked options: the table's defaults, then what
 * the caller set (undefined leaves the default), then every check the
 * command line makes, naming the caller's fields. Throws UsageError.
 */
export function fillServeOptions(given: Partial<ServeOptions>): ServeOptions {
  const filled = { ...serveDefaults(), ...definedOnly(given) };
  checkAll(filled, fieldNamer);
  return filled;
}

function definedOnly<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** The flags' names (without `--`), every one the table knows. */
export const SERVE_FLAG_NAMES: readonly string[] = FLAGS.map((flag) => flag.name);

export const SERVE_USAGE = `usage: hotpath serve --model-repository DIR [options]
       hotpath tritonserver ...  or  hotpath --model-store=DIR ...   (a tritonserver command line)
       hotpath archive ls|cat DIR        (hotpath archive --help)
       hotpath replay --archive DIR --url HOST:PORT [options]   (hotpath replay --help)
       hotpath drift-reference --model-dir DIR --archive DIR|--csv FILE   (hotpath drift-reference --help)
       hotpath perf -m MODEL -u HOST:PORT [options]   (hotpath perf --help: load and latency, as perf_analyzer)
       hotpath tune -m MODEL --p99-ms MS -u HOST:PORT [options]   (hotpath tune --help: batching settings, as Model Analyzer)
       hotpath --version | --help

Boolean flags (BOOL) take --flag, --flag=true|false or --flag true|false (also 1|0|on|off).
Sizes take 4096, 512MiB / 512Mi, 2GiB / 2Gi, 100MB. [T] marks Triton's name for a flag.
A long flag may be shortened to any unambiguous prefix (--model-repo), as tritonserver takes it.
${SECTIONS.map((section) => `\n${section.title}:\n${usageLines(section.entries.flatMap((entry) => entry.flags))}`).join('')}
  --version                    print the version and exit
  --help, -h                   print this and exit

signals: SIGTERM or SIGINT drains and exits 0 (1 when the drain timed out or a worker thread is stuck,
         always within --drain-delay + --drain-timeout + 4 s); a second signal exits at once (code 1).
         SIGHUP reloads the TLS certificate files and the routes file (a file that fails its
         checks is logged, and the current certificates or routes stay).
`;

