/**
 * Per model version counters in the shape of Triton's ModelStatistics.
 *
 * Durations are cumulative nanoseconds. `inference_count` counts rows (a batch
 * of 8 counts 8) and `execution_count` counts model executions, exactly as
 * Triton defines them.
 *
 * Threads. Every thread that answers requests of a version records into its
 * own *shard*: shard 0 is the main thread's (the instance `new` makes), shards
 * 1..N are the front-door threads' (instances `attach` makes from `share()`'s
 * plain data, one per thread). Each shard has exactly one writer, so a record
 * is a few plain float64 writes into that shard's window of one buffer, with
 * no Atomics and no lock; reads (`snapshot`, `toProto`, on any thread, in
 * practice the main thread's ModelStatistics RPC and scrape) sum every shard
 * at the moment of the call, so there is no flush and no copy to go stale.
 * With `shards: 1` the buffer is a plain ArrayBuffer and a record costs what
 * the object fields it replaced cost.
 *
 * What a reader on another thread can see (the "tearing" this accepts):
 * - A record that finished before the read began is in it whole. The writer's
 *   stores are plain machine stores (V8 emits one aligned 8-byte store per
 *   float64 cell, single-copy atomic on x86-64 and AArch64, so a cell is never
 *   half written); a door thread answers only after it recorded, and the
 *   answer leaves through a system call that the JIT cannot move stores past,
 *   so by the time a client holds the answer and asks for statistics, the
 *   values are in memory for the reader.
 * - A record still being written when the read runs (a request not yet
 *   answered) may be seen in part: its success without its rows, or the
 *   reverse, for that one read. Each duration writes its nanoseconds before
 *   its count and reads take the count first, so on x86's ordered stores a
 *   count is in practice never fresher than its sum (V8 does not promise the
 *   order of plain stores to shared memory, and AArch64 may reorder them, so
 *   there a read may briefly see a count without its sum). The next read has
 *   it whole.
 * - A door thread that dies part way through a record (terminated, out of
 *   memory) leaves that record in part in its shard for good, and one it
 *   recorded but never answered counts as a success the client did not get:
 *   at most one request per death.
 *
 * Batch sizes 1..max(1, maxBatchSize) have a fixed slot per shard. A larger
 * size (only the main thread's unbatched path can run one) is kept in a
 * main-thread-only map and merged into `toProto`; a door thread's shard has
 * no such map and refuses it (RangeError).
 *
 * Memory: (23 + 4 × batch slots) float64 cells per shard, rounded up to a
 * 64-byte line so two door threads never write the same cache line.
 */
import { create } from '@bufbuild/protobuf';
import {
  ModelStatisticsSchema,
  type ModelStatistics,
  type StatisticDuration,
} from '../generated/grpc_service_pb.js';
import type { StatisticsSnapshot, WorkerTiming } from '../observability/execution-stats.js';

export type { StatisticsSnapshot } from '../observability/execution-stats.js';
import { FAILURE_REASONS, type FailureReason } from '../observability/metric-names.js';

export interface InferenceStatisticsOptions {
  /** Writing threads: 1 (the main thread) + the front-door threads. Default 1. */
  readonly shards?: number;
  /** The version's max_batch_size: batch sizes 1..max(1, it) get a slot in every shard. Default 0. */
  readonly maxBatchSize?: number;
}

/**
 * What `attach` needs on another thread: plain data (structured-clonable,
 * the buffer is shared, not copied), from `share()`.
 */
export interface SharedInferenceStatistics {
  readonly buffer: SharedArrayBuffer;
  readonly shards: number;
  /** Batch sizes 1..batchSlots have a slot. */
  readonly batchSlots: number;
  /** Float64 cells per shard. */
  readonly stride: number;
}

/**
 * Where an instance writes and what it reads: made by the constructor or by
 * `attach`; not meant to be built elsewhere.
 */
export interface StatisticsStorage {
  readonly shared: SharedInferenceStatistics | undefined;
  /** The whole buffer, every shard (reads). */
  readonly all: Float64Array;
  /** This writer's shard window (writes). */
  readonly own: Float64Array;
  readonly shard: number;
  readonly shards: number;
  readonly batchSlots: number;
  readonly stride: number;
}

// The cells of one shard. A duration is two cells: nanoseconds, then count.
const SUCCESS = 0;
const FAIL = 2;
const QUEUE = 4;
const COMPUTE_INPUT = 6;
const COMPUTE_INFER = 8;
const COMPUTE_OUTPUT = 10;
const CACHE_HIT = 12;
const CACHE_MISS = 14;
const INFERENCE_COUNT = 16;
const EXECUTION_COUNT = 17;
const LAST_INFERENCE_MS = 18;
/** One count per failure reason, in FAILURE_REASONS order. */
const FAILURES = 19;
const BATCHES = FAILURES + FAILURE_REASONS.length;
/** A batch size's slot: executions, then input, infer and output nanoseconds. */
const BATCH_CELLS = 4;
/** 8 float64 cells: one 64-byte cache line. */
const LINE = 8;

const FAILURE_CELL = Object.fromEntries(FAILURE_REASONS.map((reason, i) => [reason, FAILURES + i])) as Record<FailureReason, number>;

interface BatchEntry {
  count: number;
  inputNs: number;
  inferNs: number;
  outputNs: number;
}

export class InferenceStatistics {
  /** The shard this instance writes. */
  private readonly own: Float64Array;
  /** Every shard, for reads. */
  private readonly all: Float64Array;
  private readonly shard: number;
  private readonly shards: number;
  private readonly stride: number;
  private readonly batchSlots: number;
  private readonly shared: SharedInferenceStatistics | undefined;
  /** Batch sizes with no slot (main thread's shard only; a door's is undefined and refuses them). */
  private readonly otherBatches: Map<number, BatchEntry> | undefined;

  constructor(options: InferenceStatisticsOptions = {}, storage: StatisticsStorage = allocate(options)) {
    this.own = storage.own;
    this.all = storage.all;
    this.shard = storage.shard;
    this.shards = storage.shards;
    this.stride = storage.stride;
    this.batchSlots = storage.batchSlots;
    this.shared = storage.shared;
    this.otherBatches = storage.shard === 0 ? new Map() : undefined;
  }

  /**
   * A writer on `shard` (1..shards-1; shard 0 is the main thread's) of the
   * statistics `share()` gave: one per front-door thread and version. Its
   * reads sum every shard, as the main thread's do.
   */
  static attach(shared: SharedInferenceStatistics, shard: number): InferenceStatistics {
    checkShared(shared);
    if (!Number.isInteger(shard) || shard < 1 || shard >= shared.shards) {
      throw new RangeError(`InferenceStatistics.attach: shard must be an integer from 1 to ${shared.shards - 1} (shard 0 is the main thread's), got ${shard}`);
    }
    const all = new Float64Array(shared.buffer);
    return new InferenceStatistics({}, {
      shared,
      all,
      own: all.subarray(shard * shared.stride, (shard + 1) * shared.stride),
      shard,
      shards: shared.shards,
      batchSlots: shared.batchSlots,
      stride: shared.stride,
    });
  }

  /** The buffer and its layout, for `attach` on a front-door thread (made with shards >= 2). */
  share(): SharedInferenceStatistics {
    if (this.shared === undefined) {
      throw new Error('InferenceStatistics.share: made with shards 1, so there is no shard for another thread (shards = 1 + front-door threads)');
    }
    return this.shared;
  }

  /** One request answered successfully; `totalNs` spans receipt to response. */
  recordSuccess(batchSize: number, totalNs: number, timing: WorkerTiming): void {
    const own = this.own;
    add(own, SUCCESS, totalNs);
    add(own, QUEUE, timing.queueNs);
    add(own, COMPUTE_INPUT, timing.computeInputNs);
    add(own, COMPUTE_INFER, timing.computeInferNs);
    add(own, COMPUTE_OUTPUT, timing.computeOutputNs);
    own[INFERENCE_COUNT]! += batchSize;
    own[LAST_INFERENCE_MS] = Date.now();
  }

  /**
   * One request answered from the response cache, as Triton counts it: a
   * success and its rows, with `lookupNs` under cache_hit; no queue, compute
   * or execution (none ran).
   */
  recordCacheHit(batchSize: number, totalNs: number, lookupNs: number): void {
    const own = this.own;
    add(own, SUCCESS, totalNs);
    add(own, CACHE_HIT, lookupNs);
    own[INFERENCE_COUNT]! += batchSize;
    own[LAST_INFERENCE_MS] = Date.now();
  }

  /** A cache miss: its lookup and insertion time under cache_miss (the run itself is counted as any). */
  recordCacheMiss(cacheNs: number): void {
    add(this.own, CACHE_MISS, cacheNs);
  }

  /** One model execution of `batchSize` rows (one per request until batching lands). */
  recordExecution(batchSize: number, timing: WorkerTiming): void {
    const own = this.own;
    if (batchSize >= 1 && batchSize <= this.batchSlots && Number.isInteger(batchSize)) {
      const at = BATCHES + (batchSize - 1) * BATCH_CELLS;
      own[at + 1]! += timing.computeInputNs;
      own[at + 2]! += timing.computeInferNs;
      own[at + 3]! += timing.computeOutputNs;
      own[at]! += 1;
    } else {
      this.recordOtherBatch(batchSize, timing);
    }
    own[EXECUTION_COUNT]! += 1;
  }

  /** One request failed (`totalNs` from receipt to the error), counted under Triton's `reason`. */
  recordFailure(totalNs: number, reason: FailureReason): void {
    const own = this.own;
    add(own, FAIL, totalNs);
    own[FAILURE_CELL[reason]]! += 1;
    own[LAST_INFERENCE_MS] = Date.now();
  }

  /** Every shard's records summed, at the moment of the call. */
  snapshot(): StatisticsSnapshot {
    const failureCounts = {} as Record<FailureReason, number>;
    for (const reason of FAILURE_REASONS) failureCounts[reason] = this.total(FAILURE_CELL[reason]);
    // Counts before their sums (see the file comment).
    const successCount = this.total(SUCCESS + 1);
    const cacheHitCount = this.total(CACHE_HIT + 1);
    const cacheMissCount = this.total(CACHE_MISS + 1);
    return {
      successCount,
      failureCounts,
      inferenceCount: this.total(INFERENCE_COUNT),
      executionCount: this.total(EXECUTION_COUNT),
      requestNs: this.total(SUCCESS),
      queueNs: this.total(QUEUE),
      computeInputNs: this.total(COMPUTE_INPUT),
      computeInferNs: this.total(COMPUTE_INFER),
      computeOutputNs: this.total(COMPUTE_OUTPUT),
      cacheHitCount,
      cacheHitNs: this.total(CACHE_HIT),
      cacheMissCount,
      cacheMissNs: this.total(CACHE_MISS),
    };
  }

  toProto(name: string, version: string): ModelStatistics {
    let lastInferenceMs = 0;
    for (let shard = 0; shard < this.shards; shard += 1) {
      lastInferenceMs = Math.max(lastInferenceMs, this.all[shard * this.stride + LAST_INFERENCE_MS]!);
    }
    return create(ModelStatisticsSchema, {
      name,
      version,
      lastInference: BigInt(lastInferenceMs),
      inferenceCount: BigInt(this.total(INFERENCE_COUNT)),
      executionCount: BigInt(this.total(EXECUTION_COUNT)),
      inferenceStats: {
        success: this.duration(SUCCESS),
        fail: this.duration(FAIL),
        queue: this.duration(QUEUE),
        computeInput: this.duration(COMPUTE_INPUT),
        computeInfer: this.duration(COMPUTE_INFER),
        computeOutput: this.duration(COMPUTE_OUTPUT),
        cacheHit: this.duration(CACHE_HIT),
        cacheMiss: this.duration(CACHE_MISS),
      },
      batchStats: [...this.batchEntries()]
        .sort(([a], [b]) => a - b)
        .map(([batchSize, entry]) => ({
          batchSize: BigInt(batchSize),
          computeInput: proto(entry.count, entry.inputNs),
          computeInfer: proto(entry.count, entry.inferNs),
          computeOutput: proto(entry.count, entry.outputNs),
        })),
    });
  }

  private recordOtherBatch(batchSize: number, timing: WorkerTiming): void {
    const batches = this.otherBatches;
    if (batches === undefined) {
      throw new RangeError(
        `InferenceStatistics.recordExecution: batchSize ${batchSize} has no slot in front-door shard ${this.shard} (expected an integer from 1 to ${this.batchSlots}, the version's max_batch_size)`,
      );
    }
    let entry = batches.get(batchSize);
    if (entry === undefined) {
      entry = { count: 0, inputNs: 0, inferNs: 0, outputNs: 0 };
      batches.set(batchSize, entry);
    }
    entry.count += 1;
    entry.inputNs += timing.computeInputNs;
    entry.inferNs += timing.computeInferNs;
    entry.outputNs += timing.computeOutputNs;
  }

  /** Every batch size executed at least once: the slots summed over shards, then the main thread's others. */
  private *batchEntries(): Generator<[number, BatchEntry]> {
    for (let size = 1; size <= this.batchSlots; size += 1) {
      const at = BATCHES + (size - 1) * BATCH_CELLS;
      const count = this.total(at);
      if (count > 0) {
        yield [size, { count, inputNs: this.total(at + 1), inferNs: this.total(at + 2), outputNs: this.total(at + 3) }];
      }
    }
    if (this.otherBatches !== undefined) yield* this.otherBatches;
  }

  /** One cell summed over every shard. */
  private total(cell: number): number {
    let sum = 0;
    for (let at = cell; at < this.all.length; at += this.stride) sum += this.all[at]!;
    return sum;
  }

  private duration(at: number): StatisticDuration {
    const count = this.total(at + 1);
    return proto(count, this.total(at));
  }
}

/** A duration's nanoseconds, then its count (a reader takes the count first). */
function add(cells: Float64Array, at: number, ns: number): void {
  cells[at]! += ns;
  cells[at + 1]! += 1;
}

function proto(count: number, ns: number): StatisticDuration {
  return {
    $typeName: 'inference.StatisticDuration',
    count: BigInt(count),
    ns: BigInt(Math.round(ns)),
  };
}

function strideOf(batchSlots: number): number {
  return Math.ceil((BATCHES + batchSlots * BATCH_CELLS) / LINE) * LINE;
}

function allocate(options: InferenceStatisticsOptions): StatisticsStorage {
  const shards = options.shards ?? 1;
  const maxBatchSize = options.maxBatchSize ?? 0;
  if (!Number.isInteger(shards) || shards < 1) {
    throw new RangeError(`InferenceStatistics: shards must be an integer >= 1 (1 + front-door threads), got ${shards}`);
  }
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 0) {
    throw new RangeError(`InferenceStatistics: maxBatchSize must be an integer >= 0, got ${maxBatchSize}`);
  }
  const batchSlots = Math.max(1, maxBatchSize);
  const stride = strideOf(batchSlots);
  const bytes = shards * stride * Float64Array.BYTES_PER_ELEMENT;
  // One thread: nothing to share, so no shared memory.
  const buffer = shards === 1 ? new ArrayBuffer(bytes) : new SharedArrayBuffer(bytes);
  const all = new Float64Array(buffer);
  return {
    shared: buffer instanceof SharedArrayBuffer ? { buffer, shards, batchSlots, stride } : undefined,
    all,
    own: all.subarray(0, stride),
    shard: 0,
    shards,
    batchSlots,
    stride,
  };
}

/** Refuses data that is not `share()`'s: each field named, expected vs actual. */
function checkShared(shared: SharedInferenceStatistics): void {
  const where = 'InferenceStatistics.attach';
  if (!(shared.buffer instanceof SharedArrayBuffer)) throw new TypeError(`${where}: buffer must be a SharedArrayBuffer, got ${typeof shared.buffer}`);
  if (!Number.isInteger(shared.shards) || shared.shards < 2) throw new RangeError(`${where}: shards must be an integer >= 2, got ${shared.shards}`);
  if (!Number.isInteger(shared.batchSlots) || shared.batchSlots < 1) throw new RangeError(`${where}: batchSlots must be an integer >= 1, got ${shared.batchSlots}`);
  const stride = strideOf(shared.batchSlots);
  if (shared.stride !== stride) throw new RangeError(`${where}: stride must be ${stride} for ${shared.batchSlots} batch slots, got ${shared.stride}`);
  const bytes = shared.shards * stride * Float64Array.BYTES_PER_ELEMENT;
  if (shared.buffer.byteLength !== bytes) throw new RangeError(`${where}: buffer must be ${bytes} bytes (${shared.shards} shards of ${stride} cells), got ${shared.buffer.byteLength}`);
}
