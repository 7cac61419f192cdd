/**
 * Reads a payload archive (record-format.ts).
 *
 * A reader takes a snapshot when it opens: the segments that exist then, each
 * up to the size it has then. Records written later (a server still archiving
 * to the directory, the very server a replay sends to) are not read, so
 * reading always ends. A segment deleted by retention meanwhile is reported
 * missing and skipped.
 *
 * In each segment, reading stops at the first torn or corrupt frame (see
 * scanFrames); the rest of that segment is reported as its tail and skipped,
 * and reading goes on with the next segment. A record whose checksum matches
 * but whose message cannot be decoded is counted and skipped.
 */
import { readdirSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import {
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../generated/grpc_service_pb.js';
import { decodeRecordPayload, scanFrames, segmentSequence, type DecodedRecord, type SegmentTail } from './record-format.js';

export interface SegmentSnapshot {
  readonly file: string;
  readonly name: string;
  readonly sequence: number;
  /** The size when the snapshot was taken: what is read. */
  readonly bytes: number;
}

export interface ArchiveRecord extends DecodedRecord {
  /** The segment's file name and the record's offset in it. */
  readonly segment: string;
  readonly offset: number;
}

export interface SegmentRead {
  readonly segment: SegmentSnapshot;
  readonly records: ArchiveRecord[];
  /** The torn or corrupt tail that was skipped; undefined when the segment read to its end. */
  readonly tail: SegmentTail | undefined;
  /** Records whose checksum matched but whose message could not be decoded (skipped). */
  readonly undecodable: number;
  /** Deleted (retention) between the snapshot and the read. */
  readonly missing: boolean;
}

export class ArchiveDirectoryError extends Error {}

/** The archive's segments now, oldest first. Throws ArchiveDirectoryError when `dir` is not a directory. */
export function snapshotSegments(dir: string): SegmentSnapshot[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ArchiveDirectoryError(
      `expected an archive directory, got '${dir}' (${code === 'ENOENT' ? 'it does not exist' : code === 'ENOTDIR' ? 'a file' : String(code)})`,
    );
  }
  const segments: SegmentSnapshot[] = [];
  for (const name of entries) {
    const sequence = segmentSequence(name);
    if (sequence === undefined) continue;
    const file = path.join(dir, name);
    try {
      segments.push({ file, name, sequence, bytes: statSync(file).size });
    } catch {
      // Deleted by retention between readdir and stat.
    }
  }
  return segments.sort((a, b) => a.sequence - b.sequence);
}

/** Reads one segment up to its snapshot size. */
export async function readSegment(segment: SegmentSnapshot): Promise<SegmentRead> {
  let bytes: Uint8Array;
  try {
    bytes = await readPrefix(segment.file, segment.bytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return { segment, records: [], tail: undefined, undecodable: 0, missing: true };
  }
  const scan = scanFrames(bytes);
  const records: ArchiveRecord[] = [];
  let undecodable = 0;
  for (const { offset, payload } of scan.records) {
    try {
      records.push({ ...decodeRecordPayload(payload), segment: segment.name, offset });
    } catch {
      undecodable += 1;
    }
  }
  return { segment, records, tail: scan.tail, undecodable, missing: false };
}

/** The archive as it is when opened (see the file comment). */
export class ArchiveReader {
  readonly segments: readonly SegmentSnapshot[];

  constructor(readonly dir: string) {
    this.segments = snapshotSegments(dir);
  }

  /** Each segment of the snapshot, read in turn (one segment in memory at a time). */
  async *segmentReads(): AsyncGenerator<SegmentRead> {
    for (const segment of this.segments) yield await readSegment(segment);
  }

  /** Every readable record, oldest first; `onSegment` sees each segment's read (tails, missing files). */
  async *records(onSegment?: (read: SegmentRead) => void): AsyncGenerator<ArchiveRecord> {
    for await (const read of this.segmentReads()) {
      onSegment?.(read);
      yield* read.records;
    }
  }
}

/** The archived request, decoded. */
export function archivedRequest(record: DecodedRecord): ModelInferRequest {
  return fromBinary(ModelInferRequestSchema, record.request);
}

/** The archived answer, decoded; undefined for a failed request. */
export function archivedResponse(record: DecodedRecord): ModelInferResponse | undefined {
  return record.response === undefined ? undefined : fromBinary(ModelInferResponseSchema, record.response);
}

/** The first `size` bytes of `file` (fewer if it is shorter now). */
async function readPrefix(file: string, size: number): Promise<Uint8Array> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await handle.read(buffer, filled, size - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    // A plain view, so decoded bytes fields are Uint8Arrays (not Buffers, whose slice() shares memory).
    return new Uint8Array(buffer.buffer, buffer.byteOffset, filled);
  } finally {
    await handle.close();
  }
}
