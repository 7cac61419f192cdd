/**
 * The serve flags of the payload archive, parsed with the command line's one
 * message format per flag (common/flag-values.ts):
 *
 *   --archive DIR                 turn it on, writing to DIR (created when missing)
 *   --archive-sample-rate R       fraction of requests archived, 0..1 (default 1)
 *   --archive-max-bytes SIZE      retention: all segments together (default 1GiB)
 *   --archive-segment-size SIZE   rotation size (default 64MiB, or a quarter of the bound when smaller)
 *   --archive-queue-size SIZE     bytes waiting to be written before records are dropped (default 64MiB)
 */
import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { byteSizeFlag, numberFlag, UsageError } from '../../common/flag-values.js';
import type { OptionEntry } from '../../common/option-table.js';
import type { ArchiveSettings } from './payload-archive.js';

const MIN_SEGMENT_BYTES = 4096;
const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;

const FLAGS = ['archive', 'archive-sample-rate', 'archive-max-bytes', 'archive-segment-size', 'archive-queue-size'] as const;

export interface ArchiveOptions {
  /** `--archive DIR` and its flags: the payload archive; undefined: off. */
  archive: ArchiveSettings | undefined;
}

export const ARCHIVE_OPTIONS: readonly OptionEntry<object>[] = [{
  flags: [
    { name: 'archive', arg: 'DIR',
      help: "archive sampled requests with their answers or errors in DIR (README, Data checks); 'hotpath archive ls|cat DIR' inspects it, 'hotpath replay' sends it to a server" },
    { name: 'archive-sample-rate', arg: 'R',
      help: "fraction of requests archived, 0..1 (default 1); a model's config parameter hotpath_archive_sample_rate overrides it" },
    { name: 'archive-max-bytes', arg: 'SIZE', help: "the archive's size bound; the oldest segments are deleted (default 1GiB)" },
    { name: 'archive-segment-size', arg: 'SIZE', help: 'segment files are rotated at this size (default 64MiB, at most a quarter of --archive-max-bytes when that is smaller)' },
    { name: 'archive-queue-size', arg: 'SIZE',
      help: 'bytes waiting to be written, at most; beyond it records are dropped and counted in hotpath_archive_dropped_total (default 64MiB)' },
  ],
  defaults: (): ArchiveOptions => ({ archive: undefined }),
  parse: (values): Partial<ArchiveOptions> => ({ archive: archiveSettings(values) }),
  check: (o: ArchiveOptions, name) => {
    const a = o.archive;
    if (a === undefined) return;
    if (!(a.sampleRate >= 0 && a.sampleRate <= 1)) throw new UsageError(`${name('archive')}.sampleRate: expected a number in 0..1, got ${a.sampleRate}`);
    if (!(a.segmentBytes >= MIN_SEGMENT_BYTES && a.segmentBytes <= a.maxBytes)) {
      throw new UsageError(`${name('archive')}.segmentBytes: expected ${MIN_SEGMENT_BYTES}..maxBytes (${a.maxBytes}), got ${a.segmentBytes}`);
    }
    writableDirectory(a.dir);
  },
  fields: Object.fromEntries(FLAGS.map((flag) => [flag, 'archive'])),
}];

/** The archive's settings; undefined without --archive. */
export function archiveSettings(values: Readonly<Record<string, unknown>>): ArchiveSettings | undefined {
  const raw = (flag: (typeof FLAGS)[number]) => values[flag] as string | undefined;
  const dir = raw('archive');
  if (dir === undefined) {
    const stray = FLAGS.find((flag) => raw(flag) !== undefined);
    if (stray !== undefined) throw new UsageError(`--${stray}: given without --archive; expected --archive DIR with it`);
    return undefined;
  }
  if (dir === '') throw new UsageError("--archive: expected a directory, got ''");
  const maxBytes = byteSizeFlag('--archive-max-bytes', raw('archive-max-bytes') ?? '1GiB');
  if (maxBytes < 4 * MIN_SEGMENT_BYTES) {
    throw new UsageError(`--archive-max-bytes: expected at least ${4 * MIN_SEGMENT_BYTES} bytes, got '${raw('archive-max-bytes')}'`);
  }
  const segmentFlag = raw('archive-segment-size');
  const segmentBytes = segmentFlag === undefined
    ? Math.min(DEFAULT_SEGMENT_BYTES, Math.floor(maxBytes / 4))
    : byteSizeFlag('--archive-segment-size', segmentFlag, maxBytes);
  if (segmentBytes < MIN_SEGMENT_BYTES) {
    throw new UsageError(`--archive-segment-size: expected at least ${MIN_SEGMENT_BYTES} bytes, got '${segmentFlag}'`);
  }
  return {
    dir: writableDirectory(dir),
    sampleRate: numberFlag('--archive-sample-rate', raw('archive-sample-rate') ?? '1', 0, 1),
    maxBytes,
    segmentBytes,
    queueBytes: byteSizeFlag('--archive-queue-size', raw('archive-queue-size') ?? '64MiB'),
  };
}

/** The directory, created when missing and checked now, so one that cannot be written exits 2 naming it. */
function writableDirectory(dir: string): string {
  const resolved = path.resolve(dir);
  try {
    mkdirSync(resolved, { recursive: true });
    accessSync(resolved, constants.W_OK);
  } catch (err) {
    throw new UsageError(`--archive: expected a directory hotpath can write, got '${dir}' (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  return resolved;
}
