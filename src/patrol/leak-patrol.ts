/**
 * The leak patrol: every interval it samples each serving model version's
 * current worker generation and, when a trigger fires, replaces the pool
 * without dropping a request (ModelVersion.restartWorkers).
 *
 * What a sample counts as the generation's leak:
 * - the arena bytes held under the generation's owner, counted by the ledger
 *   itself (Arena.ownerUsage): nothing a generation's workers allocate there
 *   is released before the generation retires, so growth there is a leak (the
 *   tenant's allocated bytes are logged next to it as evidence);
 * - plus the growth of the workers' external memory (Buffers, ArrayBuffers)
 *   over the generation's baseline, taken at its first sample after warm-up.
 * The V8 heap (total_heap_size), process RSS and, on a CUDA arena, device
 * memory against the ledger are sampled as evidence only: they move with GC
 * and other models too much to attribute to one generation.
 *
 * A version on the native executor has no worker generation: the patrol reads
 * the bytes its executor holds in the device ledger (the host ledger without a
 * device) instead. The executor allocates only at load, so any growth over the
 * first sample is a leak; the executor cannot be swapped like a pool, so such
 * a version is marked degraded (it keeps serving) and the log carries the
 * evidence.
 *
 * The loop never overlaps itself (one setTimeout after each tick), its timer
 * is unref()ed so it never keeps the process alive, and `stop()` (on drain)
 * waits for the tick in progress. Main thread only.
 */
import type { Logger } from 'pino';
import type { ModelVersion } from '../repository/model-version.js';
import {
  decide,
  evaluate,
  type PatrolReason,
  type PatrolSample,
  type PatrolThresholds,
  type RestartPolicy,
} from './patrol-policy.js';

export interface LeakPatrolOptions extends PatrolThresholds {
  readonly intervalMs: number;
  /** Restarts before a model whose leak comes back is marked degraded. */
  readonly maxRestarts: number;
  readonly versions: () => readonly ModelVersion[];
  /** The tenant's allocated bytes in the ledger (evidence). */
  readonly tenantAllocatedBytes: (tenant: string) => number;
  /** Device memory used vs the ledger's total, on a CUDA arena; undefined on host. */
  readonly deviceMemory: () => { readonly usedBytes: number; readonly ledgerBytes: number } | undefined;
  readonly onRestart: (version: ModelVersion, reason: PatrolReason) => void;
  readonly logger: Logger;
}

/** A sample with its evidence. */
interface GenerationSample extends PatrolSample {
  readonly arenaBytes: number;
  readonly externalGrowthBytes: number;
  readonly heapTotalBytes: number;
}

/** The patrol's memory of one version: its restarts, and the samples of its current generation. */
interface VersionWatch {
  generation: number;
  externalBaseline: number | undefined;
  samples: GenerationSample[];
  restarts: number;
  lastRestartAtMs: number | undefined;
  degraded: boolean;
}

export class LeakPatrol {
  private readonly log: Logger;
  private readonly watches = new WeakMap<ModelVersion, VersionWatch>();
  /** Executor ledger bytes at the first sample of each native version. */
  private readonly nativeBaselines = new WeakMap<ModelVersion, number>();
  private readonly policy: RestartPolicy;
  private timer: NodeJS.Timeout | undefined;
  private tick: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: LeakPatrolOptions) {
    this.log = options.logger.child({ component: 'patrol' });
    this.policy = {
      maxRestarts: options.maxRestarts,
      // Backoff starts at two intervals: a new generation gets samples of its own first.
      backoffBaseMs: 2 * options.intervalMs,
      backoffMaxMs: 3600_000,
    };
  }

  start(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.log.info(
      {
        interval_ms: this.options.intervalMs,
        leak_threshold_bytes: this.options.leakThresholdBytes,
        growth_bytes_per_s: this.options.growthBytesPerSecond,
        window: this.options.window,
        max_restarts: this.options.maxRestarts,
      },
      'leak patrol started',
    );
    this.schedule();
  }

  /** Stops sampling (drain); restarts already started finish under ModelVersion.unload. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.tick;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.tick = this.sampleAll()
        .catch((err: unknown) => this.log.error({ error: String(err) }, 'leak patrol sample failed'))
        .finally(() => {
          this.tick = undefined;
          if (!this.stopped) this.schedule();
        });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** One round: every READY version that is not restarting or degraded. */
  async sampleAll(): Promise<void> {
    const versions = this.options.versions().filter((v) => v.state === 'READY' && !v.isRestarting && !v.degraded);
    await Promise.all(versions.map((version) => this.sampleVersion(version)));
  }

  private sampleNative(version: ModelVersion): void {
    const bytes = version.memory.executorBytes();
    const baseline = this.nativeBaselines.get(version);
    if (baseline === undefined) {
      this.nativeBaselines.set(version, bytes);
      return;
    }
    if (bytes - baseline <= this.options.leakThresholdBytes) return;
    version.markDegraded(`degraded: the native executor's ledger bytes grew from ${baseline} to ${bytes}`);
    this.log.error(
      {
        model: version.modelName,
        model_version: version.versionLabel,
        tenant: version.tenant,
        executor_bytes: bytes,
        baseline_bytes: baseline,
        threshold: this.options.leakThresholdBytes,
        ...this.deviceEvidence(),
      },
      'native executor memory grew after load: model marked degraded',
    );
  }

  private async sampleVersion(version: ModelVersion): Promise<void> {
    if (version.native?.active === true) {
      this.sampleNative(version);
      return;
    }
    // A busy worker answers between tasks; one that misses a whole interval is left out.
    const workers = await version.workerStats(Math.max(50, this.options.intervalMs));
    if (workers.length === 0 || this.stopped || version.isRestarting) return;
    const generation = version.generation.number;
    let watch = this.watches.get(version);
    if (watch === undefined) {
      watch = { generation, externalBaseline: undefined, samples: [], restarts: 0, lastRestartAtMs: undefined, degraded: false };
      this.watches.set(version, watch);
    }
    if (watch.generation !== generation) {
      watch.generation = generation;
      watch.externalBaseline = undefined;
      watch.samples = [];
    }
    const external = workers.reduce((sum, w) => sum + w.externalBytes, 0);
    const arenaBytes = version.generationArenaBytes;
    watch.externalBaseline ??= external;
    const externalGrowthBytes = Math.max(0, external - watch.externalBaseline);
    const sample: GenerationSample = {
      atMs: performance.now(),
      leakBytes: arenaBytes + externalGrowthBytes,
      arenaBytes,
      externalGrowthBytes,
      heapTotalBytes: workers.reduce((sum, w) => sum + w.heapTotalBytes, 0),
    };
    watch.samples.push(sample);
    if (watch.samples.length > Math.max(this.options.window, 2)) watch.samples.shift();

    const trigger = evaluate(watch.samples, this.options);
    if (trigger === undefined) return;
    const action = decide(watch, sample.atMs, this.policy);
    const fields = {
      model: version.modelName,
      model_version: version.versionLabel,
      tenant: version.tenant,
      generation,
      reason: trigger.reason,
      value: Math.round(trigger.value),
      threshold: trigger.threshold,
      restarts: watch.restarts,
      samples: watch.samples.map((s) => ({
        leak_bytes: s.leakBytes,
        arena_bytes: s.arenaBytes,
        external_growth_bytes: s.externalGrowthBytes,
        heap_total_bytes: s.heapTotalBytes,
      })),
      tenant_allocated_bytes: this.options.tenantAllocatedBytes(version.tenant),
      rss_bytes: process.memoryUsage.rss(),
      ...this.deviceEvidence(),
    };
    if (action === 'wait') {
      this.log.debug(fields, 'leak patrol: trigger while backing off');
      return;
    }
    if (action === 'degrade') {
      watch.degraded = true;
      version.markDegraded(`degraded: leak persists after ${watch.restarts} restarts`);
      this.log.error(fields, 'leak persists after restarts: model marked degraded, no more restarts');
      return;
    }
    watch.restarts += 1;
    watch.lastRestartAtMs = sample.atMs;
    this.options.onRestart(version, trigger.reason);
    this.log.warn(fields, 'leak detected: restarting the worker pool');
    // Not awaited: other versions keep being sampled; this one is skipped while it restarts.
    void this.restart(version, trigger.reason);
  }

  private async restart(version: ModelVersion, reason: PatrolReason): Promise<void> {
    try {
      const report = await version.restartWorkers(reason);
      this.log.info(
        {
          model: version.modelName,
          model_version: version.versionLabel,
          reason,
          from_generation: report.fromGeneration,
          to_generation: report.toGeneration,
          old_thread_ids: report.oldThreadIds,
          new_thread_ids: report.newThreadIds,
          switch_ms: Math.round(report.switchMs),
          total_ms: Math.round(report.totalMs),
          freed_bytes: report.freedBytes,
        },
        'worker pool restarted',
      );
    } catch (err) {
      this.log.error(
        { model: version.modelName, model_version: version.versionLabel, error: err instanceof Error ? err.message : String(err) },
        'worker pool restart failed; the old generation keeps serving',
      );
    }
  }

  private deviceEvidence(): Record<string, number> {
    const device = this.options.deviceMemory();
    if (device === undefined) return {};
    return { device_used_bytes: device.usedBytes, ledger_bytes: device.ledgerBytes, device_unaccounted_bytes: device.usedBytes - device.ledgerBytes };
  }
}
