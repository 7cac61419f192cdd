/**
 * The Prometheus metrics of one server (prom-client, own registry).
 *
 * Counters that the server already keeps per model version (InferenceStatistics,
 * pool sizes, in-flight counts) are read at scrape time through `collect`
 * callbacks, never pushed per request, so the request path pays nothing for
 * them and they cannot disagree with ModelStatistics. Only distributions
 * (latency and batch-size histograms) are observed per request, into series
 * bound once per version (bound-histogram.ts) that the scrape reads.
 *
 * Front-door threads: with `statisticsShards` > 1 a version's series have a
 * shard per door thread (`shareVersion` hands them over as plain data; a door
 * observes through version-metrics.ts's `attachVersionMetrics`), and the
 * statistics the counters read are sharded the same way
 * (repository/inference-statistics.ts), so one scrape here shows every
 * thread's requests.
 *
 * Seam for the arena: `setTenantMemorySource` attaches a callback that reports
 * per-tenant arena statistics; its gauges exist only once one is attached.
 *
 * The `nv_*` series mean what Triton's mean (README, Metrics): request
 * duration sums successful requests only, the pending count drops when a
 * request starts executing, and failures are counted by Triton's reasons.
 *
 * Main thread only (door threads write shards, never this object).
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { StatisticsSnapshot } from './execution-stats.js';
import {
  BATCH_SIZE_BUCKETS,
  FAILURE_REASONS,
  FRAGMENTATION_KINDS,
  LABEL,
  LATENCY_BUCKETS_MS,
  METRIC,
  type DeviceFallbackReason,
  ARCHIVE_DROP_REASONS,
  type ArchiveDropReason,
  TENANT_LIMIT_REASONS,
  type PatrolReason,
  type TenantLimitReason,
} from './metric-names.js';
import type { GpuMemoryStats, TenantMemoryStats } from './memory-stats.js';
import { CpuUtilizationSampler, hostMemory } from './host-stats.js';
import { BoundHistogram, type HistogramSeries } from './bound-histogram.js';
import { versionMetricsOver, type SharedVersionMetrics, type VersionMetrics } from './version-metrics.js';

export type { GpuMemoryStats, Ledger, TenantMemoryStats } from './memory-stats.js';
export { attachVersionMetrics, type SharedVersionMetrics, type VersionMetrics } from './version-metrics.js';

/**
 * What the metrics read of a loaded model version, at scrape time or per
 * request: plain values (repository/model-version.ts's MetricsVersion is one),
 * so this layer depends on no domain folder.
 */
export interface MetricsVersion {
  readonly modelName: string;
  readonly versionLabel: string;
  readonly tenant: string;
  readonly state: string;
  readonly degraded: boolean;
  readonly loadSeconds: number | undefined;
  readonly pendingRequests: number;
  readonly poolThreads: number | undefined;
  readonly poolInstances: number | undefined;
  readonly poolQueueSize: number | undefined;
  readonly statistics: { snapshot(): StatisticsSnapshot };
}

export interface MetricsSources {
  /** Every loaded version (READY or UNLOADING). */
  readonly versions: () => readonly MetricsVersion[];
  /** ModelInfer requests received and not yet answered, all models. */
  readonly inflightRequests: () => number;
  /**
   * `--metrics-tenant-labels` (default true). False: no series names a
   * tenant: the `tenant` label of model series is empty (in Prometheus, the
   * same as absent; a model's series stay apart by model and version), and
   * the per-tenant series (arena statistics, tenant rejections) are not
   * exported, since without the label they would merge.
   */
  readonly tenantLabels?: boolean;
  /** The CPU utilisation gauge samples at most this often (`--metrics-interval-ms`; default 1000). */
  readonly cpuSampleIntervalMs?: number | undefined;
  /**
   * Threads that observe a version's histograms: 1 (the main thread) + the
   * front-door threads (hotpath-server.ts). Default 1; above 1 `shareVersion`
   * can hand a version's series to the doors.
   */
  readonly statisticsShards?: number;
}

export type TenantMemorySource = () => readonly TenantMemoryStats[];

/** The payload archive's counters (datachecks/archive PayloadArchive.counts). */
export interface ArchiveCountsSource {
  readonly records: number;
  readonly writtenBytes: number;
  readonly dropped: Readonly<Record<ArchiveDropReason, number>>;
}

/** Drift's gauges (datachecks/drift DriftChecks.gauges). */
export interface DriftGaugesSource {
  readonly states: readonly { readonly model: string; readonly version: string; readonly state: number }[];
  readonly features: readonly {
    readonly model: string;
    readonly version: string;
    readonly tensor: string;
    readonly feature: number;
    readonly psi: number;
    readonly ks: number;
  }[];
}

/** Read at scrape time; undefined when the server has no CUDA device. */
export type GpuSource = () => GpuMemoryStats | undefined;

const VERSION_LABELS = [LABEL.model, LABEL.version] as const;
const TENANT_LABELS = [LABEL.model, LABEL.version, LABEL.tenant] as const;

type VersionCounterValue = (snapshot: StatisticsSnapshot) => number;

/** A version's bound series and the VersionMetrics over them. */
interface BoundVersion {
  readonly series: {
    readonly requestDuration: HistogramSeries;
    readonly queueDuration: HistogramSeries;
    readonly computeInferDuration: HistogramSeries;
    readonly batchSize: HistogramSeries;
  };
  readonly metrics: VersionMetrics;
}

export class ServerMetrics {
  readonly registry = new Registry();
  // Observed per request: label sets bound once per version (bound-histogram.ts).
  private readonly requestDuration: BoundHistogram;
  private readonly queueDuration: BoundHistogram;
  private readonly computeInferDuration: BoundHistogram;
  private readonly batchSize: BoundHistogram;
  private tenantMemory: TenantMemorySource | undefined;
  private readonly patrolRestarts: Counter<string>;
  private readonly deviceFallbacks: Counter<string>;
  private readonly tenantRejections: Counter<string>;
  /** Set with front-door threads: every thread's refusals, read at scrape time. */
  private tenantRejectionSource: (() => readonly { readonly tenant: string; readonly reason: TenantLimitReason; readonly count: number }[] | undefined) | undefined;
  private readonly bound = new WeakMap<object, BoundVersion>();

  constructor(private readonly sources: MetricsSources) {
    collectDefaultMetrics({ register: this.registry });
    this.defineVersionCounters();
    this.defineVersionGauges();
    this.defineHostGauges();

    const histogram = (name: string, help: string, buckets: number[]) =>
      new BoundHistogram({ name, help, labelNames: TENANT_LABELS, buckets, registry: this.registry, shards: this.sources.statisticsShards ?? 1 });
    this.requestDuration = histogram(METRIC.requestDurationMs, 'Successful request latency, receipt to response (ms).', LATENCY_BUCKETS_MS);
    this.queueDuration = histogram(METRIC.queueDurationMs, 'Time a successful request waited for a worker (ms).', LATENCY_BUCKETS_MS);
    this.computeInferDuration = histogram(METRIC.computeInferDurationMs, 'Model execution time of successful requests (ms).', LATENCY_BUCKETS_MS);
    this.batchSize = histogram(METRIC.batchSize, 'Rows per model execution.', BATCH_SIZE_BUCKETS);

    // Pushed (rarely) by the leak patrol; reason is a bounded enum (patrol-policy.ts).
    this.patrolRestarts = new Counter({
      name: METRIC.patrolRestarts,
      help: 'Worker pool restarts by the leak patrol, by model and reason.',
      labelNames: [LABEL.model, LABEL.reason],
      registers: [this.registry],
    });
    // Pushed (rarely) when a device error moves a model to CPU; reason is a bounded enum.
    this.deviceFallbacks = new Counter({
      name: METRIC.deviceFallbacks,
      help: 'Moves of a model from the native executor to onnxruntime on CPU after a device error, by model and reason.',
      labelNames: [LABEL.model, LABEL.reason],
      registers: [this.registry],
    });

    // Pushed on each refusal (a rare path) by a one-thread server; reason is a bounded enum (security/tenant-limits.ts).
    // With front-door threads the shared limiter counts every thread's refusals: read at scrape time.
    const metrics = this;
    this.tenantRejections = new Counter({
      name: METRIC.tenantRejected,
      help: 'Requests refused by their tenant\'s rate or in-flight limit (tenants file), by tenant and reason.',
      labelNames: [LABEL.tenant, LABEL.reason],
      registers: [this.registry],
      collect() {
        const counts = metrics.tenantRejectionSource?.();
        if (counts === undefined) return;
        this.reset();
        for (const { tenant, reason, count } of counts) this.inc({ tenant, reason }, count);
      },
    });

    const { inflightRequests } = this.sources;
    new Gauge({
      name: METRIC.inflightRequests,
      help: 'Inference requests received and not yet answered (the autoscaling signal).',
      registers: [this.registry],
      collect() {
        this.set(inflightRequests());
      },
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text for one scrape. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** One model execution of `rows` rows. */
  observeExecution(version: MetricsVersion, rows: number): void {
    this.forVersion(version).observeExecution(rows);
  }

  /**
   * The version's per-request series, bound once (bound-histogram.ts): a
   * version's labels never change, so an observation is a few writes. Bound
   * series belong to this registry (one per thread that serves). Kept as
   * long as the version object lives.
   */
  forVersion(version: Pick<MetricsVersion, 'modelName' | 'versionLabel' | 'tenant'>): VersionMetrics {
    return this.bindVersion(version).metrics;
  }

  /**
   * The version's series for the front-door threads (plain data, for
   * `attachVersionMetrics(shared, door)` there, door 1..statisticsShards-1);
   * the same series forVersion binds, so this scrape shows both. Needs
   * statisticsShards >= 2.
   */
  shareVersion(version: Pick<MetricsVersion, 'modelName' | 'versionLabel' | 'tenant'>): SharedVersionMetrics {
    const { series } = this.bindVersion(version);
    return {
      requestDuration: series.requestDuration.share(),
      queueDuration: series.queueDuration.share(),
      computeInferDuration: series.computeInferDuration.share(),
      batchSize: series.batchSize.share(),
    };
  }

  private bindVersion(version: Pick<MetricsVersion, 'modelName' | 'versionLabel' | 'tenant'>): BoundVersion {
    let bound = this.bound.get(version);
    if (bound === undefined) {
      const labels = this.tenantLabelsOf(version);
      const series = {
        requestDuration: this.requestDuration.bind(labels),
        queueDuration: this.queueDuration.bind(labels),
        computeInferDuration: this.computeInferDuration.bind(labels),
        batchSize: this.batchSize.bind(labels),
      };
      bound = { series, metrics: versionMetricsOver(series) };
      this.bound.set(version, bound);
    }
    return bound;
  }

  /** The leak patrol restarted a model's worker pool. */
  countPatrolRestart(model: string, reason: PatrolReason): void {
    this.patrolRestarts.inc({ model, reason });
  }

  /** A model series' labels, the tenant's name only when tenant labels are on. */
  private tenantLabelsOf(version: Pick<MetricsVersion, 'modelName' | 'versionLabel' | 'tenant'>): Record<string, string> {
    return tenantLabels(version, this.sources.tenantLabels !== false);
  }

  /** Starts each limited tenant's refusal series at 0, so a dashboard's rate() has a baseline. */
  initTenantRejections(tenants: readonly string[]): void {
    if (this.sources.tenantLabels === false) return;
    for (const tenant of tenants) for (const reason of TENANT_LIMIT_REASONS) this.tenantRejections.inc({ tenant, reason }, 0);
  }

  /** A request refused by its tenant's rate or in-flight limit. */
  countTenantRejection(tenant: string, reason: TenantLimitReason): void {
    if (this.sources.tenantLabels === false) return;
    this.tenantRejections.inc({ tenant, reason });
  }

  /**
   * Reads hotpath_tenant_rejected_total from the shared tenant limiter at
   * scrape time (security/tenant-limits.ts rejections(): every thread's
   * refusals, summed) instead of counting pushes; once per server.
   */
  setTenantRejectionSource(counts: () => readonly { readonly tenant: string; readonly reason: TenantLimitReason; readonly count: number }[] | undefined): void {
    if (this.sources.tenantLabels === false) return;
    this.tenantRejectionSource = counts;
  }

  /**
   * Attaches the front-door threads' figures (read at scrape time; only with
   * --front-door-threads > 1): connections handed to each door thread, and
   * door threads that exited while serving. Once per server.
   */
  setDoorThreadSource(
    figures: () => readonly { readonly doorThread: number; readonly connections: number; readonly servedInDoor: number; readonly forwarded: number }[],
    exits: () => number,
  ): void {
    new Counter({
      name: METRIC.doorModelInfer,
      help: "Inference requests (gRPC ModelInfer calls, ModelStreamInfer messages, HTTP POST .../infer) each front-door thread took, by who answered them: the door thread itself ('door': a version in its catalog) or the main thread ('main': forwarded)",
      labelNames: [LABEL.doorThread, LABEL.answeredBy],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const figure of figures()) {
          this.inc({ door_thread: String(figure.doorThread), answered_by: 'door' }, figure.servedInDoor);
          this.inc({ door_thread: String(figure.doorThread), answered_by: 'main' }, figure.forwarded);
        }
      },
    });
    new Counter({
      name: METRIC.doorConnections,
      help: 'Connections (gRPC and HTTP) the acceptor handed to each front-door thread',
      labelNames: [LABEL.doorThread],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const figure of figures()) this.inc({ door_thread: String(figure.doorThread) }, figure.connections);
      },
    });
    new Counter({
      name: METRIC.doorThreadExits,
      help: 'Front-door threads that exited while the server was not stopping (replaced if it had been ready; one that exits before it is ready is not)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(exits());
      },
    });
  }

  /** Attaches the arena's per-tenant statistics (read at scrape time); once per server. */
  setTenantMemorySource(source: TenantMemorySource): void {
    if (this.tenantMemory !== undefined) throw new Error('a tenant memory source is already attached');
    this.tenantMemory = source;
    if (this.sources.tenantLabels === false) return;
    const gauge = (name: string, help: string, value: (stats: TenantMemoryStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames: [LABEL.tenant, LABEL.memory],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const stats of source()) this.set({ tenant: stats.tenant, memory: stats.memory }, value(stats));
        },
      });
    gauge(METRIC.arenaAllocatedBytes, 'Bytes allocated to the tenant in the arena.', (s) => s.allocatedBytes);
    gauge(METRIC.arenaReservedBytes, 'Accounting-only reservations charged to the tenant (bytes).', (s) => s.reservedBytes);
    gauge(METRIC.arenaQuotaBytes, 'The tenant\'s hard quota (bytes).', (s) => s.quotaBytes);
    new Counter({
      name: METRIC.arenaEvictions,
      help: 'Evictions of the tenant\'s evictable entries.',
      labelNames: [LABEL.tenant, LABEL.memory],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const stats of source()) this.inc({ tenant: stats.tenant, memory: stats.memory }, stats.evictions);
      },
    });
    new Gauge({
      name: METRIC.arenaFragmentation,
      help: 'Arena fragmentation of the tenant, reported three ways (kind).',
      labelNames: [LABEL.tenant, LABEL.memory, LABEL.kind],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const stats of source()) {
          for (const kind of FRAGMENTATION_KINDS) {
            this.set({ tenant: stats.tenant, memory: stats.memory, kind }, stats.fragmentation[kind]);
          }
        }
      },
    });
  }

  /**
   * Attaches the GPU's figures (Triton's nv_gpu_* names, label gpu_uuid), read
   * at scrape time. Without a CUDA device the source answers undefined and the
   * gauges have no series; without NVML there is no utilisation series.
   */
  setGpuSource(source: GpuSource): void {
    let sample: GpuMemoryStats | undefined;
    let sampledAt = -Infinity;
    // One device query per scrape, shared by the three gauges.
    const read = () => {
      const now = performance.now();
      if (now - sampledAt > 100) {
        sample = source();
        sampledAt = now;
      }
      return sample;
    };
    const gauge = (name: string, help: string, value: (stats: GpuMemoryStats) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: [LABEL.gpuUuid],
        registers: [this.registry],
        collect() {
          this.reset();
          const stats = read();
          const v = stats === undefined ? undefined : value(stats);
          if (stats !== undefined && v !== undefined) this.set({ gpu_uuid: stats.uuid }, v);
        },
      });
    gauge(METRIC.gpuMemoryTotalBytes, 'GPU total memory, in bytes.', (s) => s.totalBytes);
    gauge(METRIC.gpuMemoryUsedBytes, 'GPU used memory, in bytes (all processes).', (s) => s.usedBytes);
    gauge(METRIC.gpuUtilization, 'GPU utilization rate [0.0 - 1.0] (NVML).', (s) => s.utilization);
  }

  /**
   * Attaches the payload archive's counters (--archive), read at scrape time;
   * the series exist only with an archive. Drop reasons are a bounded enum.
   */
  setArchiveSource(source: () => ArchiveCountsSource): void {
    const registers = [this.registry];
    new Counter({
      name: METRIC.archiveRecords,
      help: 'Records written to the payload archive.',
      registers,
      collect() {
        this.reset();
        this.inc(source().records);
      },
    });
    new Counter({
      name: METRIC.archiveWrittenBytes,
      help: 'Bytes written to the payload archive (records, frames and segment headers).',
      registers,
      collect() {
        this.reset();
        this.inc(source().writtenBytes);
      },
    });
    new Counter({
      name: METRIC.archiveDropped,
      help: 'Records the payload archive dropped instead of blocking requests, by reason.',
      labelNames: [LABEL.reason],
      registers,
      collect() {
        this.reset();
        const { dropped } = source();
        for (const reason of ARCHIVE_DROP_REASONS) this.inc({ reason }, dropped[reason]);
      },
    });
  }

  /**
   * Attaches drift's gauges, read at scrape time: a version's series exist
   * once its first check ran; features are bounded by the reference (at most
   * hotpath_drift_max_features columns per tensor).
   */
  setDriftSource(source: () => DriftGaugesSource): void {
    const registers = [this.registry];
    const featureLabels = [LABEL.model, LABEL.version, LABEL.tensor, LABEL.feature];
    const perFeature = (name: string, help: string, value: (f: DriftGaugesSource['features'][number]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: featureLabels,
        registers,
        collect() {
          this.reset();
          for (const f of source().features) this.set({ model: f.model, version: f.version, tensor: f.tensor, feature: String(f.feature) }, value(f));
        },
      });
    perFeature(METRIC.driftPsi, 'Population stability index of a feature: the current window against the reference.', (f) => f.psi);
    perFeature(METRIC.driftKs, 'Two-sample Kolmogorov-Smirnov statistic of a feature: the current window against the reference.', (f) => f.ks);
    new Gauge({
      name: METRIC.driftState,
      help: 'Drift state of a model version: 0 ok, 1 watch (PSI >= watch threshold), 2 act (PSI >= act threshold).',
      labelNames: VERSION_LABELS,
      registers,
      collect() {
        this.reset();
        for (const s of source().states) this.set({ model: s.model, version: s.version }, s.state);
      },
    });
  }

  /** A model moved from the device to onnxruntime on CPU. */
  countDeviceFallback(model: string, reason: DeviceFallbackReason): void {
    this.deviceFallbacks.inc({ model, reason });
  }

  private defineVersionCounters(): void {
    const sources = this.sources;
    const counter = (name: string, help: string, value: VersionCounterValue) =>
      new Counter({
        name,
        help,
        labelNames: VERSION_LABELS,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const version of sources.versions()) this.inc(versionLabels(version), value(version.statistics.snapshot()));
        },
      });
    const us = (ns: number) => Math.round(ns / 1000);
    counter(METRIC.requestSuccess, 'Number of successful inference requests, all batch sizes.', (s) => s.successCount);
    new Counter({
      name: METRIC.requestFailure,
      help: 'Number of failed inference requests, all batch sizes, by reason.',
      labelNames: [...VERSION_LABELS, LABEL.reason],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const version of sources.versions()) {
          const { failureCounts } = version.statistics.snapshot();
          for (const reason of FAILURE_REASONS) this.inc({ ...versionLabels(version), reason }, failureCounts[reason]);
        }
      },
    });
    counter(METRIC.inferenceCount, 'Number of inferences performed (rows: a batch of 8 counts 8).', (s) => s.inferenceCount);
    counter(METRIC.executionCount, 'Number of model executions performed.', (s) => s.executionCount);
    counter(METRIC.requestDurationUs, 'Cumulative inference request duration in microseconds (successful requests).', (s) => us(s.requestNs));
    counter(METRIC.queueDurationUs, 'Cumulative inference queuing duration in microseconds.', (s) => us(s.queueNs));
    counter(METRIC.computeInputDurationUs, 'Cumulative compute input duration in microseconds.', (s) => us(s.computeInputNs));
    counter(METRIC.computeInferDurationUs, 'Cumulative compute inference duration in microseconds.', (s) => us(s.computeInferNs));
    counter(METRIC.computeOutputDurationUs, 'Cumulative inference compute output duration in microseconds.', (s) => us(s.computeOutputNs));
    counter(METRIC.cacheHits, 'Number of cache hits per model.', (s) => s.cacheHitCount);
    counter(METRIC.cacheMisses, 'Number of cache misses per model.', (s) => s.cacheMissCount);
    counter(METRIC.cacheHitDurationUs, 'Total cache hit duration per model, in microseconds.', (s) => us(s.cacheHitNs));
    counter(METRIC.cacheMissDurationUs, 'Total cache miss (insert+lookup) duration per model, in microseconds.', (s) => us(s.cacheMissNs));
  }

  private defineVersionGauges(): void {
    const sources = this.sources;
    const named = this.sources.tenantLabels !== false;
    const gauge = (name: string, help: string, labels: readonly string[], value: (v: MetricsVersion) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: labels,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const version of sources.versions()) {
            const current = value(version);
            if (current !== undefined) this.set(labels.length === 3 ? tenantLabels(version, named) : versionLabels(version), current);
          }
        },
      });
    gauge(METRIC.pendingRequests, 'Instantaneous number of pending requests awaiting execution per-model.', VERSION_LABELS, (v) => v.pendingRequests);
    gauge(METRIC.modelLoadDurationSecs, 'Model load time in seconds.', VERSION_LABELS, (v) => v.loadSeconds);
    gauge(METRIC.modelLoadSeconds, 'Seconds the model version took to turn READY (load, warm-up, golden checks).', TENANT_LABELS, (v) => v.loadSeconds);
    gauge(METRIC.modelReady, '1 when the model version serves, else 0.', TENANT_LABELS, (v) => (v.state === 'READY' ? 1 : 0));
    gauge(METRIC.modelDegraded, '1 when the leak patrol gave up restarting the version (it still serves).', VERSION_LABELS, (v) => (v.degraded ? 1 : 0));
    gauge(METRIC.workerPoolThreads, 'Live worker threads of the version\'s pool.', TENANT_LABELS, (v) => v.poolThreads);
    gauge(METRIC.workerPoolInstances, 'Configured worker threads of the version\'s pool (instance_group count).', TENANT_LABELS, (v) => v.poolInstances);
    gauge(METRIC.workerPoolQueue, 'Tasks waiting for a free worker of the version\'s pool.', TENANT_LABELS, (v) => v.poolQueueSize);
  }

  /** Triton's CPU gauges: machine-wide, read at scrape time (host-stats.ts). */
  private defineHostGauges(): void {
    const cpu = new CpuUtilizationSampler(undefined, this.sources.cpuSampleIntervalMs ?? 1000);
    const gauge = (name: string, help: string, value: () => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(value());
        },
      });
    gauge(METRIC.cpuUtilization, 'CPU utilization rate [0.0 - 1.0], all cores, over the last interval.', () => cpu.read());
    gauge(METRIC.cpuMemoryTotalBytes, 'CPU total memory (RAM), in bytes.', () => hostMemory().totalBytes);
    gauge(METRIC.cpuMemoryUsedBytes, 'CPU used memory (RAM), in bytes.', () => hostMemory().usedBytes);
  }
}

function versionLabels(version: MetricsVersion): Record<string, string> {
  return { model: version.modelName, version: version.versionLabel };
}

function tenantLabels(version: Pick<MetricsVersion, 'modelName' | 'versionLabel' | 'tenant'>, named: boolean): Record<string, string> {
  return { model: version.modelName, version: version.versionLabel, tenant: named ? version.tenant : '' };
}
