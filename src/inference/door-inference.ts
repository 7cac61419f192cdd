/**
 * ModelInfer served in a front-door thread (`--front-door-threads N`), for
 * the versions the main thread lists in its door catalog (door-catalog.ts).
 * The request takes the same batched run as on the main thread
 * (version-run.ts runBatchedRequest: one validation, the enqueue, the
 * answer from the batch's rows), into the same native batcher, attached
 * from this thread: answers come back here straight from the native side.
 * It records the version's statistics and metrics in this thread's shard of
 * the shared counters, so one scrape on the main thread sees every thread's
 * requests, and admits each request against its tenant's rate and in-flight
 * limits in the main thread's limiter, shared (security/tenant-limits.ts),
 * so a limit holds exactly across every thread.
 *
 * Whatever this thread cannot answer as the main thread would is handed to
 * the main thread whole (ForwardToMainThread; the caller forwards the call
 * as received), before anything was counted here:
 *   - a model or version not listed, or one the caller may not see (the main
 *     thread gives the exact refusal);
 *   - a version whose gate is closed (unloading: the main thread answers as
 *     for any unloading version, or serves its successor);
 *   - a request carrying the test-only `hotpath_fault` parameter;
 *   - a request the batcher refused as SHUTDOWN (the version stopping, or
 *     batches that no longer reach a native target) or OVER_QUOTA (the main
 *     thread words the quota per input), or a batch whose run must be
 *     repeated (a worker that died mid-batch, or a device fault on the
 *     native executor, which the main thread is also told of so it moves
 *     the version to CPU): inference is idempotent, so the main thread runs
 *     it again, once, as it does its own.
 *
 * Ownership: one DoorInference per door thread, on that thread only. It owns
 * its attached batcher handles and lets go of those a new catalog drops.
 */
import type { Logger } from 'pino';
import { fromBinary } from '@bufbuild/protobuf';
import { ModelConfigSchema, type ModelConfig } from '../generated/model_config_pb.js';
import type { ModelInferRequest, ModelInferResponse } from '../generated/grpc_service_pb.js';
import { SharedGate } from '../common/shared-gate.js';
import { classifyError, toServiceError } from '../common/serving-error.js';
import { failureReasonOf } from '../common/error-kinds.js';
import { signatureFromConfig, type ModelSignature } from '../tensor/model-signature.js';
import { VersionBatcher, type BatchedVersion } from '../batching/version-batcher.js';
import type { Block } from '../native/arena.js';
import type { InferResult } from '../workers/worker-protocol.js';
import { InferenceStatistics } from '../repository/inference-statistics.js';
import { attachVersionMetrics, type VersionMetrics } from '../observability/version-metrics.js';
import type { AccessLog } from '../observability/access-log.js';
import { scopeFailure, visibleTo, type Caller } from '../security/caller.js';
import { status } from '@grpc/grpc-js';
import type { DoorCatalog, DoorVersionEntry } from './door-catalog.js';
import type { InferContext } from './infer-context.js';
import { runBatchedRequest, type BatchedRun } from './version-run.js';
import { requestLogFields } from './inference-runner.js';
import { indexBoundsProblem, type VersionExecutor } from '../executor/version-executor.js';
import { FAULT_PARAMETER } from '../tensor/infer-request.js';
import type { AdmissionRelease, TenantLimiter } from '../security/tenant-limits.js';

/** A batch of a door thread's requests failed on the device: what the main thread needs to act on it. */
export interface DeviceFaultReport {
  readonly model: string;
  readonly version: string;
  /** The batcher of the version it concerns: a report about a version since replaced (a reload) is ignored. */
  readonly batcher: number;
  readonly fault: 'transient' | 'sticky';
  readonly detail: string;
}

/** The request is the main thread's to answer: the door forwards the call as received. */
export class ForwardToMainThread extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'ForwardToMainThread';
  }
}

/** One listed version as this door thread serves it. */
class DoorVersion implements BatchedVersion {
  readonly modelName: string;
  readonly versionLabel: string;
  readonly tenant: string;
  readonly config: ModelConfig;
  readonly signature: ModelSignature;
  /** Unused here: the creator's batcher counts the instances. */
  readonly instances = 1;
  // A door never runs a batch itself (only natively run batches reach it): a re-run goes to the main thread.
  readonly memory = {
    ownerId: 0,
    allocOutput: (): Block => {
      throw new ForwardToMainThread('a batch to re-run on the main thread');
    },
  };
  /**
   * A native-executor version's view here: never active (a batch the door
   * would re-run on CPU goes to the main thread), and a device fault the
   * door learns of (a batch of its own requests failed) is the main
   * thread's to act on (the move to CPU, the probe).
   */
  readonly native: (Pick<VersionExecutor, 'active' | 'fallBack'>) | undefined;
  readonly workerTarget = undefined;
  readonly batcher = undefined;
  readonly gate: SharedGate;
  readonly statistics: InferenceStatistics;
  readonly metrics: VersionMetrics | undefined;
  readonly batcherId: number;
  readonly handle: VersionBatcher<DoorVersion>;
  readonly batchedRun: BatchedRun;
  /** This thread's requests on the version now; a dropped version lets go of its batcher at 0. */
  active = 0;
  /** Set once a catalog dropped the version: called when `active` reaches 0. */
  onIdle: (() => void) | undefined;

  constructor(entry: DoorVersionEntry, shard: number, logger: Logger, onDeviceFault: DoorInferenceOptions['onDeviceFault']) {
    this.modelName = entry.model;
    this.versionLabel = entry.version;
    this.tenant = entry.tenant;
    this.config = fromBinary(ModelConfigSchema, entry.config);
    this.signature = signatureFromConfig(this.config);
    this.gate = new SharedGate(entry.gate);
    this.statistics = InferenceStatistics.attach(entry.statistics, shard);
    this.metrics = entry.metrics === undefined ? undefined : attachVersionMetrics(entry.metrics, shard);
    this.batcherId = entry.batcher.id;
    this.native =
      entry.native === undefined
        ? undefined
        : {
            active: false,
            fallBack: (fault, detail) => {
              logger.warn(
                { model: entry.model, model_version: entry.version, fault, error: detail },
                "a batch of this door thread's requests failed on the device: the main thread moves the version to CPU and runs them again",
              );
              onDeviceFault({ model: entry.model, version: entry.version, batcher: entry.batcher.id, fault, detail });
            },
          };
    const bounds = entry.native?.indexBounds ?? [];
    const metrics = this.metrics;
    this.handle = VersionBatcher.attach<DoorVersion>(this, entry.batcher, {
      logger,
      onExecuted: (version, rows, timing) => {
        version.statistics.recordExecution(rows, timing);
        metrics?.observeExecution(rows);
      },
    });
    this.batchedRun = {
      modelName: this.modelName,
      versionLabel: this.versionLabel,
      signature: this.signature,
      batched: this.signature.maxBatchSize > 0,
      statistics: this.statistics,
      metrics,
      checkIndices: bounds.length === 0 ? undefined : (inputs) => indexBoundsProblem(bounds, inputs),
      refused: (rejection) =>
        rejection.reason === 'SHUTDOWN' || rejection.reason === 'OVER_QUOTA'
          ? new ForwardToMainThread(`the batcher refused it here (${rejection.reason})`)
          : rejection,
    };
  }

  /** See BatchedVersion.run: a batch reaches a door only once run natively, so any run here is a re-run: the main thread's. */
  run(): Promise<InferResult> {
    return Promise.reject(new ForwardToMainThread('a batch to re-run on the main thread'));
  }
}

export interface DoorInferenceOptions {
  /** This door thread's index (0..N-1): its count in each version's gate; its shard of the shared counters is door + 1 (the main thread writes shard 0). */
  readonly door: number;
  readonly logger: Logger;
  readonly accessLog: AccessLog;
  /** The tenants' rate and in-flight limits, shared with the main thread and the other doors; undefined: none. */
  readonly limits?: TenantLimiter | undefined;
  /** A batch of this thread's requests failed on the device: the main thread moves the version to CPU. */
  readonly onDeviceFault: (report: DeviceFaultReport) => void;
}

export class DoorInference {
  private byKey = new Map<string, DoorVersion>();
  /** Versions a catalog dropped whose handle waits for this thread's requests on them, by batcher id. */
  private readonly releasing = new Map<number, DoorVersion>();
  private latest = new Map<string, DoorVersion>();
  private generation = -1;

  constructor(private readonly options: DoorInferenceOptions) {}

  /**
   * Serves from `catalog` from now on (an older one than the current is
   * ignored). Versions it keeps keep their attached batcher; those it drops
   * let go of theirs once their requests here are answered.
   */
  update(catalog: DoorCatalog): void {
    if (catalog.generation <= this.generation) return;
    this.generation = catalog.generation;
    const previous = new Map([...this.byKey.values()].map((version) => [version.batcherId, version]));
    const byKey = new Map<string, DoorVersion>();
    for (const entry of catalog.versions) {
      // Listed before, or dropped by an earlier catalog and not let go of yet (its requests still running
      // here): the same handle serves on (this thread may hold one handle per batcher).
      let version = previous.get(entry.batcher.id) ?? this.releasing.get(entry.batcher.id);
      previous.delete(entry.batcher.id);
      if (version !== undefined) this.releasing.delete(entry.batcher.id);
      if (version === undefined) {
        try {
          version = new DoorVersion(entry, this.options.door + 1, this.options.logger, this.options.onDeviceFault);
        } catch (err) {
          // Not served here (its requests go to the main thread); the others are.
          this.options.logger.warn({ err, model: entry.model, model_version: entry.version }, 'cannot serve this version in the door thread: forwarding its requests');
          continue;
        }
      }
      byKey.set(keyOf(entry.model, entry.version), version);
    }
    const latest = new Map<string, DoorVersion>();
    for (const [model, label] of Object.entries(catalog.latest)) {
      const version = byKey.get(keyOf(model, label));
      if (version !== undefined) latest.set(model, version);
    }
    this.byKey = byKey;
    this.latest = latest;
    // Dropped versions: their gate is closed (or the version unloaded); requests still here finish first.
    for (const dropped of previous.values()) void this.release(dropped);
  }

  /** Lets go of every attached batcher (the thread is ending). */
  async close(): Promise<void> {
    const versions = [...this.byKey.values()];
    this.byKey = new Map();
    this.latest = new Map();
    await Promise.all(versions.map((version) => this.release(version)));
  }

  /**
   * Serves one ModelInfer: the answer, or a failure as the main thread
   * words it. Throws ForwardToMainThread (before counting anything) for a
   * request that is the main thread's.
   */
  async infer(request: ModelInferRequest, context: InferContext, method = 'ModelInfer'): Promise<ModelInferResponse> {
    const version = this.versionOf(request.modelName, request.modelVersion);
    if (version === undefined) throw new ForwardToMainThread('not served in this door thread');
    // Test-only faults act on one request or on the version's executor: the main thread's (--enable-fault-injection).
    if (request.parameters[FAULT_PARAMETER] !== undefined) throw new ForwardToMainThread('a request carrying a test-only fault');
    if (!visibleTo(context.caller)(version.tenant)) throw new ForwardToMainThread('a model the caller may not see');
    if (!version.gate.enter(this.options.door)) throw new ForwardToMainThread('the version is unloading');
    const started = performance.now();
    const elapsedNs = () => Math.round((performance.now() - started) * 1e6);
    version.active += 1;
    let release: AdmissionRelease | undefined;
    try {
      // The tenant's limits, where InferenceRunner.infer applies them: the version and the caller's
      // right to it are known, nothing is taken yet. A refusal is answered here (counted, logged) as there.
      release = context.shadow === true ? undefined : this.options.limits?.admit(version.tenant);
      const response = await runBatchedRequest(version.batchedRun, request, version.handle, context, elapsedNs);
      if (this.options.accessLog.sampleSuccess()) {
        this.options.accessLog.recordSampledSuccess({ ...requestLogFields(request, context, method, version, elapsedNs()), code: status.OK });
      }
      return response;
    } catch (err) {
      if (err instanceof ForwardToMainThread) {
        // The main thread admits it again, token and all: this admission's token goes back (one request, one token).
        if (release !== undefined) this.options.limits?.refund(version.tenant);
        throw err;
      }
      const failure = toServiceError(err);
      version.statistics.recordFailure(elapsedNs(), failureReasonOf(classifyError(err).kind));
      this.options.accessLog.record({ ...requestLogFields(request, context, method, version, elapsedNs()), code: failure.code, error: failure.details });
      throw scopeFailure(err, context.caller);
    } finally {
      release?.();
      version.gate.leave(this.options.door);
      version.active -= 1;
      if (version.active === 0) version.onIdle?.();
    }
  }

  /**
   * Whether infer() would take a request for `model` and `version` ('' for
   * the latest) from `caller` now, as far as the catalog says: a lookup, no
   * gate and no count. The HTTP door asks before it reads a body, so a
   * request that is the main thread's is forwarded as received; infer()
   * still checks everything (the catalog may change while the body arrives).
   */
  serves(model: string, version: string, caller: Caller): boolean {
    const served = this.versionOf(model, version);
    return served !== undefined && visibleTo(caller)(served.tenant);
  }

  /** Lets go of a dropped version's batcher once this thread's requests on it are answered (stop() would fail them). */
  private async release(version: DoorVersion): Promise<void> {
    this.releasing.set(version.batcherId, version);
    if (version.active > 0) await new Promise<void>((resolve) => (version.onIdle = resolve));
    version.onIdle = undefined;
    // Listed again meanwhile (update took it back): it serves on.
    if (this.releasing.get(version.batcherId) !== version) return;
    this.releasing.delete(version.batcherId);
    try {
      await version.handle.stop();
    } catch (err) {
      this.options.logger.warn({ err, model: version.modelName, model_version: version.versionLabel }, 'could not let go of a batcher');
    }
  }

  private versionOf(model: string, version: string): DoorVersion | undefined {
    return version === '' ? this.latest.get(model) : this.byKey.get(keyOf(model, version));
  }
}

function keyOf(model: string, version: string): string {
  return `${model}\0${version}`;
}
