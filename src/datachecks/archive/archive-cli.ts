/**
 * `hotpath archive ls|cat DIR`: inspects a payload archive.
 *
 *   ls   one line per segment: records, bytes, the time range, and any torn
 *        or corrupt tail that was skipped; then the totals (`--json`: one
 *        JSON object instead)
 *   cat  one JSON object per record, oldest first: the header, the request's
 *        inputs and the answer's outputs as values (`--model M` only that
 *        model's; `--limit N` the first N; `--no-data` without tensor data)
 *
 * Both read the archive as it is when they start (archive-reader.ts), so
 * they work on the directory of a running server.
 */
import { parseArgs } from 'node:util';
import { status } from '@grpc/grpc-js';
import type { OutputTensor } from '../../client/tensors.js';
import { integerFlag, UsageError } from '../../common/flag-values.js';
import { ArchiveDirectoryError, ArchiveReader, archivedRequest, archivedResponse, type ArchiveRecord } from './archive-reader.js';
import { decodeAnswer, decodeInputs, jsonData, jsonParameters } from './tensor-values.js';

export const ARCHIVE_COMMAND_USAGE = `usage: hotpath archive ls DIR [--json]
       hotpath archive cat DIR [--model M] [--limit N] [--no-data]

  ls          segments of the archive in DIR: records, bytes, time range, skipped tails
  cat         records as JSON lines: time, request_id, model, version, latency_ms, status,
              the request's inputs and parameters, the answer's outputs
  --json      ls: one JSON object instead of the table
  --model M   cat: only records of model M
  --limit N   cat: at most N records
  --no-data   cat: tensors without their data (name, datatype, shape only)
`;

/** Runs `hotpath archive ...`; writes to `out`. Exit code 2 for a usage error. */
export async function archiveCommand(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<void> {
  try {
    const [action, ...rest] = argv;
    if (action === undefined || action === '--help' || action === '-h') {
      if (action === undefined) throw new UsageError('expected ls or cat');
      out.write(ARCHIVE_COMMAND_USAGE);
      return;
    }
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean' },
        model: { type: 'string' },
        limit: { type: 'string' },
        'no-data': { type: 'boolean' },
      },
    });
    if (positionals.length !== 1) throw new UsageError(`expected one archive directory, got ${positionals.length}`);
    const dir = positionals[0]!;
    if (action === 'ls') return await list(dir, values.json === true, out);
    if (action === 'cat') {
      const limit = values.limit === undefined ? Infinity : integerFlag('--limit', values.limit, 0, Number.MAX_SAFE_INTEGER);
      return await cat(dir, { model: values.model, limit, data: values['no-data'] !== true }, out);
    }
    throw new UsageError(`expected ls or cat, got '${action}'`);
  } catch (err) {
    const usage = err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'));
    if (!usage && !(err instanceof ArchiveDirectoryError)) throw err;
    process.stderr.write(`hotpath archive: ${(err as Error).message}\n${usage ? `\n${ARCHIVE_COMMAND_USAGE}` : ''}`);
    process.exitCode = 2;
  }
}

interface SegmentLine {
  segment: string;
  records: number;
  bytes: number;
  first: string | null;
  last: string | null;
  skipped: { offset: number; bytes: number; reason: string } | null;
  missing: boolean;
  undecodable: number;
}

async function list(dir: string, json: boolean, out: NodeJS.WritableStream): Promise<void> {
  const reader = new ArchiveReader(dir);
  const lines: SegmentLine[] = [];
  for await (const read of reader.segmentReads()) {
    let first = Infinity;
    let last = -Infinity;
    for (const record of read.records) {
      first = Math.min(first, record.timeUnixMs);
      last = Math.max(last, record.timeUnixMs);
    }
    lines.push({
      segment: read.segment.name,
      records: read.records.length,
      bytes: read.segment.bytes,
      first: read.records.length === 0 ? null : iso(first),
      last: read.records.length === 0 ? null : iso(last),
      skipped: read.tail === undefined ? null : { offset: read.tail.offset, bytes: read.tail.bytes, reason: read.tail.reason },
      missing: read.missing,
      undecodable: read.undecodable,
    });
  }
  const withRecords = lines.filter((line) => line.first !== null);
  const total = {
    segments: lines.length,
    records: lines.reduce((sum, line) => sum + line.records, 0),
    bytes: lines.reduce((sum, line) => sum + line.bytes, 0),
    first: withRecords.length === 0 ? null : withRecords.map((line) => line.first!).sort()[0]!,
    last: withRecords.length === 0 ? null : withRecords.map((line) => line.last!).sort().at(-1)!,
    skipped_bytes: lines.reduce((sum, line) => sum + (line.skipped?.bytes ?? 0), 0),
  };
  if (json) {
    out.write(`${JSON.stringify({ dir, segments: lines, total })}\n`);
    return;
  }
  const rows = [['segment', 'records', 'bytes', 'first', 'last', 'skipped']];
  for (const line of lines) {
    const skipped = line.missing
      ? 'deleted while listing'
      : line.skipped === null
        ? ''
        : `${line.skipped.bytes} bytes at ${line.skipped.offset} (${line.skipped.reason})`;
    rows.push([line.segment, String(line.records), String(line.bytes), line.first ?? '-', line.last ?? '-', skipped]);
  }
  rows.push(['total', String(total.records), String(total.bytes), total.first ?? '-', total.last ?? '-', total.skipped_bytes > 0 ? `${total.skipped_bytes} bytes` : '']);
  out.write(table(rows));
}

async function cat(
  dir: string,
  options: { model: string | undefined; limit: number; data: boolean },
  out: NodeJS.WritableStream,
): Promise<void> {
  const reader = new ArchiveReader(dir);
  let written = 0;
  for await (const record of reader.records()) {
    if (written >= options.limit) break;
    if (options.model !== undefined && record.model !== options.model) continue;
    const ok = out.write(`${JSON.stringify(recordJson(record, options.data))}\n`);
    written += 1;
    if (!ok) await new Promise((resolve) => out.once('drain', resolve));
  }
}

/** One record as `cat` prints it. */
export function recordJson(record: ArchiveRecord, data = true): Record<string, unknown> {
  const request = archivedRequest(record);
  const response = archivedResponse(record);
  const tensors = (decode: () => Record<string, OutputTensor>) => {
    try {
      return Object.values(decode()).map((tensor) => ({
        name: tensor.name,
        datatype: tensor.datatype,
        shape: tensor.shape,
        ...(data ? { data: jsonData(tensor) } : {}),
      }));
    } catch (err) {
      // A request the server refused may hold tensors that do not decode; show why instead.
      return { error: err instanceof Error ? err.message : String(err) };
    }
  };
  return {
    segment: record.segment,
    offset: record.offset,
    time: iso(record.timeUnixMs),
    request_id: record.requestId,
    model: record.model,
    version: record.version,
    ...(record.route ? { route: record.route } : {}),
    ...(record.arm ? { arm: record.arm } : {}),
    latency_ms: record.latencyNs / 1e6,
    status: { code: status[record.statusCode] ?? String(record.statusCode), ...(record.statusMessage ? { message: record.statusMessage } : {}) },
    request: {
      id: request.id,
      model_name: request.modelName,
      model_version: request.modelVersion,
      parameters: jsonParameters(request.parameters),
      inputs: tensors(() => decodeInputs(request)),
      outputs: request.outputs.map((output) => output.name),
    },
    ...(response === undefined
      ? {}
      : { response: { model_name: response.modelName, model_version: response.modelVersion, outputs: tensors(() => decodeAnswer(response)) } }),
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()).join('\n') + '\n';
}
