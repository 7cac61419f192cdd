/**
 * The payload archive (`--archive DIR`): a copy of each sampled request with
 * its answer or error, written to checksummed segment files
 * (record-format.ts) for inspection and replay.
 *
 * It never blocks the request path:
 *   - `record` is called once the answer is known. It samples, charges the
 *     entry's estimated size to a bounded queue and keeps a reference; a full
 *     queue drops the entry and counts it. Nothing is copied or encoded there.
 *   - On a later turn of the event loop (setImmediate: after the answer went
 *     out), queued entries are encoded (toBinary, one copy of the tensors) in
 *     slices and handed to the writer thread, their buffers transferred.
 *   - The writer thread (archive-writer-thread.ts) does every file call:
 *     append, rotation, retention and a batched fsync. The queue's charge for
 *     a batch is released when the thread acknowledges it, so a slow disk
 *     fills the queue and sheds records instead of memory.
 *
 * Sampling: `sampleRate` (`--archive-sample-rate`), overridden per model by
 * the config parameter `hotpath_archive_sample_rate` (a number in 0..1).
 *
 * Counters (records and bytes written, drops by reason) are read at scrape
 * time through `counts()`. Main thread only.
 */
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { toBinary } from '@bufbuild/protobuf';
import {
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../generated/grpc_service_pb.js';
import { ARCHIVE_DROP_REASONS, type ArchiveDropReason } from '../../observability/metric-names.js';
import { encodeRecordPayload, type ArchiveHeader } from './record-format.js';
import { modelSampleRate, type ConfigParameters } from './sample-rate.js';
import type { WriterCommand, WriterEvent, WriterSettings } from './writer-protocol.js';

export interface ArchiveSettings {
  /** The archive directory (created when missing). */
  readonly dir: string;
  /** Fraction of requests archived, 0..1; a model's `hotpath_archive_sample_rate` overrides it. */
  readonly sampleRate: number;
  /** Every segment together stays at or under this; the oldest are deleted first. */
  readonly maxBytes: number;
  /** Segments are rotated before they pass this size. */
  readonly segmentBytes: number;
  /** Bytes queued or being written, at most, before records are dropped (default 64 MiB). */
  readonly queueBytes?: number | undefined;
  /** Records queued for encoding, at most (default 4096). */
  readonly queueRecords?: number | undefined;
  /** How often the writer syncs what it wrote (default 1000 ms). */
  readonly fsyncIntervalMs?: number | undefined;
}

/**
 * One answered request, as the request path hands it over: the record's
 * header (model and version: those that scored it, the request's own when
 * none was resolved; statusCode 0 for an answer) but its time, and the messages.
 */
export interface ArchiveEntry extends Omit<ArchiveHeader, 'timeUnixMs'> {
  readonly request: ModelInferRequest;
  /** The answer; undefined for a failed request. */
  readonly response?: ModelInferResponse | undefined;
  /** The model's config parameters, for `hotpath_archive_sample_rate`; undefined when no model was resolved. */
  readonly modelParameters?: ConfigParameters | undefined;
}

export interface ArchiveCounts {
  /** Records written. */
  readonly records: number;
  /** Bytes written, frames and segment headers included. */
  readonly writtenBytes: number;
  readonly dropped: Readonly<Record<ArchiveDropReason, number>>;
  /** Records waiting for encoding. */
  readonly queued: number;
}

interface Pending {
  readonly entry: ArchiveEntry;
  readonly timeUnixMs: number;
  readonly estimate: number;
}

const DEFAULT_QUEUE_BYTES = 64 * 1024 * 1024;
const DEFAULT_QUEUE_RECORDS = 4096;
/** Records encoded per turn of the event loop, so encoding never holds the loop long. */
const ENCODE_SLICE = 64;
/** At most one error line per this interval: a full disk fails every batch. */
const ERROR_LOG_INTERVAL_MS = 10_000;
const CLOSE_TIMEOUT_MS = 10_000;

export class PayloadArchive {
  private readonly worker: Worker;
  private readonly log: Logger;
  private readonly queueBytes: number;
  private readonly queueRecords: number;
  private pending: Pending[] = [];
  private pendingBytes = 0;
  private inflightBytes = 0;
  private drainScheduled = false;
  private closing: Promise<void> | undefined;
  private broken = false;
  private records = 0;
  private writtenBytes = 0;
  private readonly dropped: Record<ArchiveDropReason, number> = Object.fromEntries(
    ARCHIVE_DROP_REASONS.map((reason) => [reason, 0]),
  ) as Record<ArchiveDropReason, number>;
  private idleWaiters: (() => void)[] = [];
  private lastErrorLogMs = -Infinity;
  private closedSignal: (() => void) | undefined;

  /**
   * Starts the writer thread. The directory is created and checked here, so
   * one that cannot be written stops start-up with a message naming it.
   */
  constructor(private readonly settings: ArchiveSettings, logger: Logger) {
    this.log = logger.child({ component: 'archive' });
    this.queueBytes = settings.queueBytes ?? DEFAULT_QUEUE_BYTES;
    this.queueRecords = settings.queueRecords ?? DEFAULT_QUEUE_RECORDS;
    mkdirSync(settings.dir, { recursive: true });
    accessSync(settings.dir, constants.W_OK);
    const workerData: WriterSettings = {
      dir: settings.dir,
      segmentBytes: settings.segmentBytes,
      maxBytes: settings.maxBytes,
      fsyncIntervalMs: settings.fsyncIntervalMs ?? 1000,
    };
    // No flags of the embedding process (`--input-type`, loaders): the writer needs none, and some fail a worker.
    this.worker = new Worker(writerModulePath(), { workerData, name: 'hotpath-archive-writer', execArgv: [] });
    // The server's own handles keep the process alive; close() refs it again to finish writing.
    this.worker.unref();
    this.worker.on('message', (event: WriterEvent) => this.onEvent(event));
    this.worker.on('error', (err) => this.fail(`the archive writer thread failed: ${err.message}`));
    this.worker.on('exit', () => {
      if (this.closedSignal === undefined) this.fail('the archive writer thread exited');
      this.closedSignal?.();
    });
    this.log.info(
      { dir: settings.dir, sample_rate: settings.sampleRate, max_bytes: settings.maxBytes, segment_bytes: settings.segmentBytes },
      'payload archive on',
    );
  }

  /**
   * The sample rate of a model with `parameters`: its own override, else
   * --archive-sample-rate. An invalid override is logged once per config.
   */
  rateFor(model: string, parameters: ArchiveEntry['modelParameters']): number {
    return modelSampleRate(parameters, this.settings.sampleRate, (problem) =>
      this.log.warn({ model, problem }, 'ignoring the model\'s archive sample rate'),
    );
  }

  /**
   * Offers one answered request. Never throws and never waits: a request not
   * sampled is ignored; one that does not fit the queue is dropped and counted.
   */
  record(entry: ArchiveEntry): void {
    try {
      const rate = this.rateFor(entry.model, entry.modelParameters);
      if (rate < 1 && !(Math.random() < rate)) return;
      if (this.closing !== undefined) return this.drop('closed');
      if (this.broken) return this.drop('write_error');
      const estimate = estimateBytes(entry);
      if (this.pending.length >= this.queueRecords || this.pendingBytes + this.inflightBytes + estimate > this.queueBytes) {
        return this.drop('queue_full');
      }
      this.pending.push({ entry, timeUnixMs: Date.now() - entry.latencyNs / 1e6, estimate });
      this.pendingBytes += estimate;
      this.scheduleDrain();
    } catch (err) {
      this.drop('write_error');
      this.logError(`archiving a request failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  counts(): ArchiveCounts {
    return { records: this.records, writtenBytes: this.writtenBytes, dropped: { ...this.dropped }, queued: this.pending.length };
  }

  /** Resolves once everything offered so far is written (or dropped). */
  flush(): Promise<void> {
    this.drainNow();
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Writes what is queued, syncs and closes the last segment, and ends the
   * writer thread. Later records are dropped (counted 'closed'). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.closeNow();
    return this.closing;
  }

  private async closeNow(): Promise<void> {
    this.drainNow();
    if (this.broken) {
      await this.worker.terminate();
      return;
    }
    // Keep the process alive until the last segment is synced and closed.
    this.worker.ref();
    const closed = new Promise<void>((resolve) => {
      this.closedSignal = resolve;
    });
    this.post({ type: 'close' });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), CLOSE_TIMEOUT_MS);
    });
    const late = await Promise.race([closed.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late) this.log.warn({ timeout_ms: CLOSE_TIMEOUT_MS }, 'the archive writer did not finish in time; stopping it');
    await this.worker.terminate();
    this.log.info({ records: this.records, written_bytes: this.writtenBytes, dropped: this.dropped }, 'payload archive closed');
  }

  private drop(reason: ArchiveDropReason, count = 1): void {
    this.dropped[reason] += count;
  }

  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      this.drainSlice(ENCODE_SLICE);
      if (this.pending.length > 0) this.scheduleDrain();
    });
  }

  /** Encodes and hands over everything queued (flush, close). */
  private drainNow(): void {
    while (this.pending.length > 0) this.drainSlice(ENCODE_SLICE);
  }

  /** Encodes up to `limit` queued entries and posts them to the writer as one batch. */
  private drainSlice(limit: number): void {
    if (this.pending.length === 0) return;
    const slice = this.pending.length <= limit ? this.pending : this.pending.slice(0, limit);
    this.pending = slice === this.pending ? [] : this.pending.slice(limit);
    const payloads: Uint8Array[] = [];
    let bytes = 0;
    for (const { entry, timeUnixMs, estimate } of slice) {
      this.pendingBytes -= estimate;
      try {
        const payload = encodeEntry(entry, timeUnixMs);
        payloads.push(payload);
        bytes += payload.byteLength;
      } catch (err) {
        this.drop('write_error');
        this.logError(`encoding an archive record failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (payloads.length === 0) return this.settleIdle();
    if (this.broken) {
      this.drop('write_error', payloads.length);
      return this.settleIdle();
    }
    this.inflightBytes += bytes;
    this.post({ type: 'records', payloads, queuedBytes: bytes }, payloads.map((payload) => payload.buffer as ArrayBuffer));
  }

  private post(command: WriterCommand, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(command, transfer);
  }

  private onEvent(event: WriterEvent): void {
    switch (event.type) {
      case 'written':
        this.records += event.records;
        this.writtenBytes += event.bytes;
        this.drop('too_large', event.tooLarge);
        this.inflightBytes -= event.queuedBytes;
        break;
      case 'failed':
        this.drop('write_error', event.records);
        this.inflightBytes -= event.queuedBytes;
        this.logError(`archive write failed: ${event.message}`, event.records);
        break;
      case 'fatal':
        this.fail(`the archive cannot be written: ${event.message}`);
        break;
      case 'closed':
        this.closedSignal?.();
        break;
    }
    this.settleIdle();
  }

  /** The writer is gone: what it had in flight is lost, and later records are dropped. */
  private fail(message: string): void {
    if (this.broken) return;
    this.broken = true;
    this.log.error({ dir: this.settings.dir, error: message }, 'payload archive stopped: requests are no longer archived');
    this.inflightBytes = 0;
    this.settleIdle();
  }

  private logError(message: string, records?: number): void {
    const now = performance.now();
    if (now - this.lastErrorLogMs < ERROR_LOG_INTERVAL_MS) return;
    this.lastErrorLogMs = now;
    this.log.error({ dir: this.settings.dir, error: message, ...(records === undefined ? {} : { records }) }, 'payload archive error');
  }

  private isIdle(): boolean {
    return this.pending.length === 0 && (this.inflightBytes <= 0 || this.broken);
  }

  private settleIdle(): void {
    if (!this.isIdle() || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** One entry as a record payload. */
function encodeEntry(entry: ArchiveEntry, timeUnixMs: number): Uint8Array {
  const request = toBinary(ModelInferRequestSchema, entry.request);
  const response = entry.response === undefined ? undefined : toBinary(ModelInferResponseSchema, entry.response);
  // The encoder reads the header's fields only.
  return encodeRecordPayload({ ...entry, timeUnixMs }, request, response);
}

/** The queue's charge for an entry before it is encoded: its tensors' bytes and a fixed allowance. */
function estimateBytes(entry: ArchiveEntry): number {
  let bytes = 512 + 64 * (entry.request.inputs.length + (entry.response?.outputs.length ?? 0));
  for (const raw of entry.request.rawInputContents) bytes += raw.byteLength;
  for (const raw of entry.response?.rawOutputContents ?? []) bytes += raw.byteLength;
  return bytes;
}

/**
 * The compiled writer thread. Under vitest this file is loaded from src/*.ts,
 * while worker threads must run compiled JS: map to the dist/ twin then.
 */
function writerModulePath(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = path.join(path.dirname(here), 'archive-writer-thread.js');
  if (existsSync(sibling)) return sibling;
  const packageRoot = path.resolve(path.dirname(here), '..', '..', '..');
  return path.join(packageRoot, 'dist', 'src', 'datachecks', 'archive', 'archive-writer-thread.js');
}
