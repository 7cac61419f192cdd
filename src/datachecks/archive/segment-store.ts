/**
 * The archive's writing side: appends framed records to the current segment,
 * rotates segments by size, deletes the oldest segments to keep the whole
 * directory under its byte bound, and syncs when asked (the writer thread
 * asks on a timer: batched fsync).
 *
 * The bound holds after every `append`: room for a record is made before it
 * is written (oldest segments first; never the current one), and a record
 * that could never fit is refused. A new store never appends to an existing
 * segment: it starts the next sequence number, so a torn tail left by a
 * killed writer stays the end of its own file.
 *
 * Synchronous file calls: it runs on the archive's writer thread
 * (archive-writer-thread.ts), never on the main thread. Not thread-safe; one
 * store per directory.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  statSync,
  unlinkSync,
  writevSync,
} from 'node:fs';
import path from 'node:path';
import {
  FILE_HEADER_BYTES,
  FRAME_HEADER_BYTES,
  SEGMENT_MAGIC,
  frameHeader,
  segmentFileName,
  segmentSequence,
} from './record-format.js';

export interface SegmentStoreOptions {
  readonly dir: string;
  /** A segment is closed and the next one started before it would pass this size. */
  readonly segmentBytes: number;
  /** Every segment together stays at or under this; the oldest go first. */
  readonly maxBytes: number;
}

export interface AppendResult {
  readonly records: number;
  /** Bytes written, frames and segment headers included. */
  readonly bytes: number;
  /** Records refused because alone they exceed the byte bound. */
  readonly tooLarge: number;
}

interface ClosedSegment {
  readonly file: string;
  readonly bytes: number;
}

export class SegmentStore {
  private readonly closed: ClosedSegment[] = [];
  private closedBytes = 0;
  private sequence = 0;
  private fd: number | undefined;
  private currentFile = '';
  private currentBytes = 0;
  private dirty = false;

  constructor(private readonly options: SegmentStoreOptions) {
    if (!(options.segmentBytes > FILE_HEADER_BYTES + FRAME_HEADER_BYTES) || !(options.maxBytes >= options.segmentBytes)) {
      throw new RangeError(
        `SegmentStore: expected ${FILE_HEADER_BYTES + FRAME_HEADER_BYTES} < segmentBytes <= maxBytes, got ${options.segmentBytes} and ${options.maxBytes}`,
      );
    }
    mkdirSync(options.dir, { recursive: true });
    for (const entry of readdirSync(options.dir)) {
      const sequence = segmentSequence(entry);
      if (sequence === undefined) continue;
      const file = path.join(options.dir, entry);
      const bytes = statSync(file).size;
      this.closed.push({ file, bytes });
      this.closedBytes += bytes;
      this.sequence = Math.max(this.sequence, sequence);
    }
    this.closed.sort((a, b) => segmentSequence(path.basename(a.file))! - segmentSequence(path.basename(b.file))!);
  }

  /** Bytes of every segment, the current one included. */
  get totalBytes(): number {
    return this.closedBytes + this.currentBytes;
  }

  /** Appends each payload as one framed record. */
  append(payloads: readonly Uint8Array[]): AppendResult {
    let records = 0;
    let bytes = 0;
    let tooLarge = 0;
    let chunks: Uint8Array[] = [];
    const flush = () => {
      if (chunks.length === 0) return;
      writeAll(this.fd!, chunks);
      chunks = [];
      this.dirty = true;
    };
    for (const payload of payloads) {
      const frameBytes = FRAME_HEADER_BYTES + payload.byteLength;
      if (FILE_HEADER_BYTES + frameBytes > this.options.maxBytes) {
        tooLarge += 1;
        continue;
      }
      const fresh = this.fd === undefined || this.currentBytes === FILE_HEADER_BYTES;
      if (this.fd === undefined || (!fresh && this.currentBytes + frameBytes > this.options.segmentBytes)) {
        flush();
        bytes += this.rotate();
      }
      this.makeRoom(frameBytes);
      chunks.push(frameHeader(payload), payload);
      this.currentBytes += frameBytes;
      bytes += frameBytes;
      records += 1;
    }
    flush();
    return { records, bytes, tooLarge };
  }

  /** fsync of the current segment, when something was written since the last one. */
  sync(): void {
    if (this.fd === undefined || !this.dirty) return;
    fsyncSync(this.fd);
    this.dirty = false;
  }

  /** Syncs and closes the current segment; the store takes no more records. */
  close(): void {
    if (this.fd === undefined) return;
    this.sync();
    closeSync(this.fd);
    this.fd = undefined;
  }

  /**
   * After a failed write: the current segment is given up (closed as it is
   * on disk, a partial frame at its end being a torn tail), and the next
   * append starts a new one.
   */
  abandonCurrent(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // The descriptor is gone either way.
    }
    this.fd = undefined;
    this.dirty = false;
    let bytes = this.currentBytes;
    try {
      bytes = statSync(this.currentFile).size;
    } catch {
      // Keep the logical size.
    }
    this.closed.push({ file: this.currentFile, bytes });
    this.closedBytes += bytes;
    this.currentBytes = 0;
  }

  /** Deletes the oldest closed segments until `extra` more bytes fit under the bound. */
  private makeRoom(extra: number): void {
    while (this.closed.length > 0 && this.closedBytes + this.currentBytes + extra > this.options.maxBytes) {
      const oldest = this.closed.shift()!;
      this.closedBytes -= oldest.bytes;
      try {
        unlinkSync(oldest.file);
      } catch (err) {
        // Deleted by hand meanwhile: the space is free all the same.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }

  /** Closes the current segment (synced) and starts the next; returns the new file's header bytes. */
  private rotate(): number {
    if (this.fd !== undefined) {
      this.close();
      this.closed.push({ file: this.currentFile, bytes: this.currentBytes });
      this.closedBytes += this.currentBytes;
      this.currentBytes = 0;
    }
    this.makeRoom(FILE_HEADER_BYTES);
    this.sequence += 1;
    this.currentFile = path.join(this.options.dir, segmentFileName(this.sequence));
    // 'wx': a segment is only ever created, never reopened.
    this.fd = openSync(this.currentFile, 'wx');
    writeAll(this.fd, [SEGMENT_MAGIC]);
    this.currentBytes = FILE_HEADER_BYTES;
    this.dirty = true;
    return FILE_HEADER_BYTES;
  }
}

/** writev until every byte is written (writev may write less than asked). */
function writeAll(fd: number, chunks: Uint8Array[]): void {
  let pending = chunks;
  // IOV_MAX is 1024 on Linux.
  while (pending.length > 0) {
    const batch = pending.slice(0, 1024);
    let written = writevSync(fd, batch);
    let consumed = 0;
    while (consumed < batch.length && written >= batch[consumed]!.byteLength) {
      written -= batch[consumed]!.byteLength;
      consumed += 1;
    }
    const rest = pending.slice(consumed);
    if (written > 0) rest[0] = rest[0]!.subarray(written);
    pending = rest;
  }
}
