/**
 * Per model version counters in the shape of Triton's ModelStatistics.
 *
 * Durations are cumulative nanoseconds. `inference_count` counts rows (a batch
 * of 8 counts 8) and `execution_count` counts model executions, exactly as
 * Triton defines them. Main thread only.
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

interface Duration {
  count: number;
  ns: number;
}

const zero = (): Duration => ({ count: 0, ns: 0 });

export class InferenceStatistics {
  private readonly success = zero();
  private readonly fail = zero();
  private readonly queue = zero();
  private readonly computeInput = zero();
  private readonly computeInfer = zero();
  private readonly computeOutput = zero();
  private readonly cacheHit = zero();
  private readonly cacheMiss = zero();
  private readonly batches = new Map<number, { input: Duration; infer: Duration; output: Duration }>();
  private inferenceCount = 0;
  private executionCount = 0;
  private lastInferenceMs = 0;
  private readonly failureCounts = Object.fromEntries(FAILURE_REASONS.map((r) => [r, 0])) as Record<FailureReason, number>;

  /** One request answered successfully; `totalNs` spans receipt to response. */
  recordSuccess(batchSize: number, totalNs: number, timing: WorkerTiming): void {
    add(this.success, totalNs);
    add(this.queue, timing.queueNs);
    add(this.computeInput, timing.computeInputNs);
    add(this.computeInfer, timing.computeInferNs);
    add(this.computeOutput, timing.computeOutputNs);
    this.inferenceCount += batchSize;
    this.lastInferenceMs = Date.now();
  }

  /**
   * One request answered from the response cache, as Triton counts it: a
   * success and its rows, with `lookupNs` under cache_hit; no queue, compute
   * or execution (none ran).
   */
  recordCacheHit(batchSize: number, totalNs: number, lookupNs: number): void {
    add(this.success, totalNs);
    add(this.cacheHit, lookupNs);
    this.inferenceCount += batchSize;
    this.lastInferenceMs = Date.now();
  }

  /** A cache miss: its lookup and insertion time under cache_miss (the run itself is counted as any). */
  recordCacheMiss(cacheNs: number): void {
    add(this.cacheMiss, cacheNs);
  }

  /** One model execution of `batchSize` rows (one per request until batching lands). */
  recordExecution(batchSize: number, timing: WorkerTiming): void {
    this.executionCount += 1;
    let entry = this.batches.get(batchSize);
    if (entry === undefined) {
      entry = { input: zero(), infer: zero(), output: zero() };
      this.batches.set(batchSize, entry);
    }
    add(entry.input, timing.computeInputNs);
    add(entry.infer, timing.computeInferNs);
    add(entry.output, timing.computeOutputNs);
  }

  /** One request failed (`totalNs` from receipt to the error), counted under Triton's `reason`. */
  recordFailure(totalNs: number, reason: FailureReason): void {
    add(this.fail, totalNs);
    this.failureCounts[reason] += 1;
    this.lastInferenceMs = Date.now();
  }

  snapshot(): StatisticsSnapshot {
    return {
      successCount: this.success.count,
      failureCounts: { ...this.failureCounts },
      inferenceCount: this.inferenceCount,
      executionCount: this.executionCount,
      requestNs: this.success.ns,
      queueNs: this.queue.ns,
      computeInputNs: this.computeInput.ns,
      computeInferNs: this.computeInfer.ns,
      computeOutputNs: this.computeOutput.ns,
      cacheHitCount: this.cacheHit.count,
      cacheHitNs: this.cacheHit.ns,
      cacheMissCount: this.cacheMiss.count,
      cacheMissNs: this.cacheMiss.ns,
    };
  }

  toProto(name: string, version: string): ModelStatistics {
    return create(ModelStatisticsSchema, {
      name,
      version,
      lastInference: BigInt(this.lastInferenceMs),
      inferenceCount: BigInt(this.inferenceCount),
      executionCount: BigInt(this.executionCount),
      inferenceStats: {
        success: proto(this.success),
        fail: proto(this.fail),
        queue: proto(this.queue),
        computeInput: proto(this.computeInput),
        computeInfer: proto(this.computeInfer),
        computeOutput: proto(this.computeOutput),
        cacheHit: proto(this.cacheHit),
        cacheMiss: proto(this.cacheMiss),
      },
      batchStats: [...this.batches.entries()]
        .sort(([a], [b]) => a - b)
        .map(([batchSize, entry]) => ({
          batchSize: BigInt(batchSize),
          computeInput: proto(entry.input),
          computeInfer: proto(entry.infer),
          computeOutput: proto(entry.output),
        })),
    });
  }
}

function add(duration: Duration, ns: number): void {
  duration.count += 1;
  duration.ns += ns;
}

function proto(duration: Duration): StatisticDuration {
  return {
    $typeName: 'inference.StatisticDuration',
    count: BigInt(duration.count),
    ns: BigInt(Math.round(duration.ns)),
  };
}
