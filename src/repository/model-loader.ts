/**
 * Loads a model's versions: reads its config, selects versions by policy,
 * starts each version's worker pool (or the native executor), completes and
 * validates the config, charges its memory, then warms it up and runs its
 * golden checks; a version turns READY only after all of that. The registry
 * (model-registry.ts) records the outcome.
 *
 * A model that fails to load fails alone: its state and reason are recorded
 * and the error says why, with its kind. Main thread only.
 */
import { existsSync } from 'node:fs';
import { clone } from '@bufbuild/protobuf';
import path from 'node:path';
import type { Logger } from 'pino';
import { internal, invalidArgument, notFound, ServingError } from '../common/serving-error.js';
import { echo, echoField } from '../common/echo.js';
import { ARENA_NAME, type ServerMemory } from '../tenancy/server-memory.js';
import { ModelPool } from '../workers/model-pool.js';
import { createSessionCreationLock } from '../workers/session-footprint.js';
import type { Owner } from '../native/arena.js';
import { VersionBatcher, type VersionBatcherHooks } from '../batching/version-batcher.js';
import type { DeviceHealth } from '../executor/device-health.js';
import type { DeviceFallbackReason } from '../observability/metric-names.js';
import { completeConfig } from './strict-config.js';
import { ModelConfigError, validateModelConfig } from './model-config.js';
import { CONFIG_OVERRIDE_SOURCE } from './config-override.js';
import { ModelConfigSchema, type ModelConfig } from '../generated/model_config_pb.js';
import { GoldenCheckError, loadGoldenCases, runGoldenChecks } from './golden-check.js';
import { ModelVersion } from './model-version.js';
import { selectVersions } from './version-policy.js';
import { VersionMemory } from './version-memory.js';
import { buildWarmupSamples, WarmupConfigError, warmupDelayMs } from './warmup-samples.js';
import { leakFault, modelFaults } from './fault-parameters.js';
import { toTensorInfo } from './tensor-info.js';
import { LoadDeadline } from './load-deadline.js';
import { loadNativeVersion, selectExecutor } from './native-loader.js';
import {
  availableVersions,
  CONFIG_FILENAME,
  declaredFootprint,
  instanceCount,
  intraOpThreads,
  MODEL_FILENAME,
  missingModelMessage,
  modelFileBytes,
  modelLoadTimeoutMs,
  modelTenant,
  readModelConfig,
} from './model-directory.js';
import type { ModelRecord, ModelRegistry } from './model-registry.js';
import type { ModelRoots } from './model-roots.js';

export interface ModelLoaderOptions {
  /** The repository's roots (`--model-repository`, repeatable). */
  readonly roots: ModelRoots;
  /** max_batch_size given to auto-completed configs of models that can batch (`--backend-config=onnxruntime,default-max-batch-size=N`). */
  readonly defaultMaxBatchSize?: number;
  /** Default onnxruntime intra-op threads per worker (config parameter `intra_op_thread_count` overrides). */
  readonly intraOpThreads: number;
  readonly faultInjection: boolean;
  /** Run the default warm-up (batch 1 and max_batch_size) for models without `model_warmup`. */
  readonly defaultWarmup: boolean;
  /** The memory ledger: tenants' quotas, model reservations, request buffers. */
  readonly memory: ServerMemory;
  /** What dynamic batchers report back (executions, for statistics and metrics). */
  readonly batching: Omit<VersionBatcherHooks<ModelVersion>, 'logger'>;
  readonly logger: Logger;
  /** Called after any model's readiness may have changed (health endpoints follow it). */
  readonly onStateChange?: () => void;
  /** Whether the CUDA device still works (a sticky error moves every executor model to CPU). */
  readonly deviceHealth: DeviceHealth;
  /** After a transient device error, how often a model on CPU probes the device. */
  readonly deviceProbeIntervalMs: number;
  /** A version moved from the executor to CPU (metrics). */
  readonly onDeviceFallback?: (version: ModelVersion, reason: DeviceFallbackReason, detail: string) => void;
  /**
   * Complete partial configs from the ONNX model (Triton's auto-complete);
   * off, a config must say everything itself (strict-config.ts).
   */
  readonly autoCompleteConfig: boolean;
  /**
   * `--model-load-timeout` in ms: load, warm-up and golden checks of a model
   * together (config parameter `model_load_timeout_secs` overrides); 0 or
   * absent: no limit (load-deadline.ts).
   */
  readonly loadTimeoutMs?: number;
  /**
   * Threads that record each version's statistics: 1 (the main thread) + the
   * front-door threads; default 1 (inference-statistics.ts, Threads).
   */
  readonly statisticsShards?: number;
}

export class ModelLoader {
  /** Serialises session creation across every pool, so footprints are measured one at a time. */
  private readonly footprintLock = createSessionCreationLock();

  constructor(
    private readonly options: ModelLoaderOptions,
    private readonly registry: ModelRegistry,
    private readonly log: Logger,
  ) {}

  /**
   * Loads every selected version of `name` into `record` and makes them serve;
   * the versions they replace unload. On failure the versions already serving
   * stay, and the error names the model. `override` (a load's config
   * override, config-override.ts) replaces config.pbtxt for this load and
   * passes the same completion and checks; it is not changed.
   */
  async load(name: string, record: ModelRecord, coldStart: boolean, override?: ModelConfig): Promise<void> {
    const started = performance.now();
    const hadVersions = record.versions.size > 0;
    if (!hadVersions) {
      record.state = 'LOADING';
      record.reason = '';
      record.reasonVersion = '';
    }
    let loaded: ModelVersion[] = [];
    const failure = { version: '' };
    const deadline = new LoadDeadline(this.options.loadTimeoutMs ?? 0, () => loadStage(record));
    try {
      loaded = await deadline.race(this.loadVersions(name, record, started, failure, deadline, override));
    } catch (err) {
      // Past its limit, the load's own chain is abandoned: nothing it still shows is loading.
      if (deadline.abandoned) record.loading = [];
      const message = err instanceof Error ? err.message : String(err);
      // The index and the answer are for clients: no server paths in them.
      const reason = this.options.roots.withoutPaths(message);
      const failedVersion = failure.version;
      if (!hadVersions) {
        record.state = 'UNAVAILABLE';
        record.reason = reason;
        record.reasonVersion = failedVersion;
      }
      this.log.error({ model: echoField(name), model_version: failedVersion || undefined, error: message }, 'model failed to load');
      throw loadFailure(name, err, reason);
    } finally {
      deadline.clear();
    }
    const replaced = [...record.versions.values()];
    record.versions = new Map(loaded.map((v) => [v.version, v]));
    record.configOverride = override;
    record.state = 'READY';
    record.reason = '';
    record.reasonVersion = '';
    this.log.info(
      {
        model: echoField(name),
        versions: loaded.map((v) => v.version),
        load_ms: Math.round(performance.now() - started),
        ...(coldStart ? { cold_start: true } : {}),
        ...(override !== undefined ? { config_override: true } : {}),
      },
      coldStart ? 'evicted model reloaded (cold start)' : 'model ready',
    );
    // The replaced versions stop taking requests now and finish the ones they hold.
    await Promise.all(replaced.map((version) => version.unload()));
  }

  /** `failure.version` names the version that failed warm-up or golden checks. */
  private async loadVersions(
    name: string,
    record: ModelRecord,
    started: number,
    failure: { version: string },
    deadline: LoadDeadline,
    override: ModelConfig | undefined,
  ): Promise<ModelVersion[]> {
    const modelDir = this.options.roots.modelDir(name);
    if (modelDir === undefined || !existsSync(modelDir)) throw notFound(missingModelMessage(name));
    // Validation normalises the config in place: the override stays as sent, for a later cold start.
    let config = override !== undefined ? clone(ModelConfigSchema, override) : await readModelConfig(name, modelDir, this.log);
    deadline.throwIfAbandoned();
    // Where the config came from, as messages name it.
    const file = override !== undefined ? CONFIG_OVERRIDE_SOURCE : path.join(modelDir, CONFIG_FILENAME);
    const ownLimit = modelLoadTimeoutMs(config, file);
    if (ownLimit !== undefined) deadline.setModelLimit(ownLimit);
    // Known from here, even if the load fails later: who may see the model (TenantFilter).
    record.tenant = modelTenant(config);
    const available = await availableVersions(modelDir, config);
    const selected = selectVersions(config?.versionPolicy, available).sort((a, b) => a - b);
    if (selected.length === 0) {
      throw new ModelConfigError(
        file, undefined,
        `no version of model ${echo(name)} matches the version policy; versions on disk: ${available.join(', ') || 'none'}`,
      );
    }
    // The same for every version: read from the config once.
    const instances = instanceCount(config);
    const tenant = modelTenant(config);
    const leak = leakFault(config, this.options.faultInjection, file);
    // Refuses request failures and added latency without fault injection; they act in the request path.
    modelFaults(config, this.options.faultInjection, file);
    const versions: ModelVersion[] = [];
    try {
      for (const version of selected) {
        const modelPath = path.join(modelDir, String(version), config?.defaultModelFilename || MODEL_FILENAME);
        const fileBytes = await modelFileBytes(modelPath);
        const log = this.log;
        // The same options for every generation: the first here, later ones on restart or on demand.
        const createPool = (generation: number, owner: Owner) =>
          ModelPool.create({
            modelPath,
            instances,
            intraOpThreads: intraOpThreads(config, this.options.intraOpThreads),
            faultInjection: this.options.faultInjection,
            footprintLock: this.footprintLock,
            footprintFloorBytes: fileBytes,
            arenaName: ARENA_NAME,
            generation,
            generationOwnerId: owner.id,
            tenant,
            leakFault: leak,
            logger: log,
          });
        const startPool = async (generation: number, owner: Owner) => (await createPool(generation, owner)).pool;
        const selection = selectExecutor(config, this.options.memory, file, this.options.deviceHealth.lost);
        let note = selection.note;
        if (selection.native && config !== undefined) {
          const loaded = await loadNativeVersion(
            { name, version, config, modelPath, file, tenant, instances, selection, startPool },
            {
              memory: this.options.memory,
              deviceHealth: this.options.deviceHealth,
              probeIntervalMs: this.options.deviceProbeIntervalMs,
              logger: this.log,
              onDeviceFallback: this.options.onDeviceFallback,
              onStateChange: this.options.onStateChange,
              autoCompleteConfig: this.options.autoCompleteConfig,
              defaultMaxBatchSize: this.options.defaultMaxBatchSize,
              statisticsShards: this.options.statisticsShards,
            },
          );
          deadline.throwIfAbandoned();
          if ('version' in loaded) {
            const native = loaded.version;
            deadline.onAbandon((reason) => native.abandon(reason));
            config = loaded.version.config;
            versions.push(loaded.version);
            record.loading = [...versions];
            continue;
          }
          note = loaded.note;
        }
        const declared = declaredFootprint(config, file);
        // Charged before any worker starts, so a model that cannot fit costs nothing.
        const memory = VersionMemory.forLoad(this.options.memory, {
          tenant,
          model: echoField(name),
          version,
          estimateBytes: declared ?? fileBytes * instances,
          onEvict: () => this.registry.evict(name, version),
        });
        // Past the limit, the charge goes at once, whatever the workers do.
        deadline.onAbandon(() => memory.destroy());
        let pool: ModelPool | undefined;
        try {
          const owner = memory.createGenerationOwner(1);
          const created = await createPool(1, owner);
          pool = created.pool;
          const startedPool = pool;
          deadline.onAbandon(() => startedPool.abandon());
          deadline.throwIfAbandoned();
          config = completeConfig(config, name, toTensorInfo(created.io), { file, autoComplete: this.options.autoCompleteConfig, defaultMaxBatchSize: this.options.defaultMaxBatchSize });
          const { warnings } = validateModelConfig(config, { file, modelName: name });
          if (version === selected[0]) for (const warning of warnings) this.log.warn({ model: echoField(name) }, warning);
          const loaded = new ModelVersion(name, version, config, { number: 1, owner, pool }, memory, startPool, instances, this.options.statisticsShards);
          if (note !== '') {
            loaded.setExecutorNote(note);
            this.log.warn({ model: echoField(name), model_version: String(version), reason: note }, 'native executor not used: running on onnxruntime (CPU)');
          }
          deadline.onAbandon((reason) => loaded.abandon(reason));
          versions.push(loaded);
          record.loading = [...versions];
        } catch (err) {
          // An abandoned pool was told to stop already; a stuck worker would never let close() settle.
          if (!deadline.abandoned) await pool?.close();
          memory.destroy();
          throw err;
        }
      }
      await this.prepareVersions(modelDir, file, versions, started, deadline, (label) => (failure.version = label ?? ''));
    } catch (err) {
      // A failed load leaves nothing behind: close the pools already started
      // (an abandoned version is UNAVAILABLE already, so this does not wait for it).
      const reason = err instanceof Error ? err.message : String(err);
      await Promise.all(versions.map((v) => v.unload(reason)));
      throw err;
    } finally {
      // Once abandoned, `record` may belong to a later load already.
      if (!deadline.abandoned) record.loading = [];
    }
    return versions;
  }

  /**
   * Warms every worker of each version, then runs the model's golden checks on
   * it; a version turns READY only after both. `onVersion` names the version
   * being prepared, so a failure can be reported against it.
   */
  private async prepareVersions(
    modelDir: string,
    file: string,
    versions: readonly ModelVersion[],
    started: number,
    deadline: LoadDeadline,
    onVersion: (label: string | undefined) => void,
  ): Promise<void> {
    const golden = await loadGoldenCases(modelDir);
    deadline.throwIfAbandoned();
    for (const version of versions) {
      onVersion(version.versionLabel);
      const fields = { model: echoField(version.modelName), model_version: version.versionLabel, tenant: version.tenant };
      const samples = await buildWarmupSamples(version.config, version.signature, {
        modelDir,
        defaultWarmup: this.options.defaultWarmup,
      });
      deadline.throwIfAbandoned();
      const report = await version.warmUp({ samples, delayMs: warmupDelayMs(version.config, this.options.faultInjection) });
      deadline.throwIfAbandoned();
      // Every worker has reported its session's footprint by now: charge what was measured.
      const declared = declaredFootprint(version.config, file);
      version.memory.settle(declared ?? version.measuredFootprintBytes);
      this.log.info(
        { ...fields, footprint_bytes: version.memory.reservedBytes, measured: declared === undefined },
        'model memory charged to tenant',
      );
      for (const warning of report.warnings) this.log.warn(fields, `default ${warning} (the model still turns ready)`);
      if (golden.length > 0) {
        version.setLoadingReason('running golden checks');
        await runGoldenChecks(golden, version.signature, (task, transfer) => version.run(task, transfer));
        deadline.throwIfAbandoned();
      }
      const seconds = (performance.now() - started) / 1000;
      version.markReady(seconds);
      const batcher = VersionBatcher.forVersion(version, { ...this.options.batching, logger: this.log });
      if (batcher !== undefined) version.attachBatcher(batcher);
      this.log.info(
        {
          ...fields,
          load_ms: Math.round(seconds * 1000),
          warmup_samples: samples.length,
          warmup_runs: report.runsPerWorker,
          warmup_workers: report.workers,
          warmup_ms: Math.round(report.maxWorkerMs),
          golden_cases: golden.length,
        },
        'model version ready',
      );
      this.options.onStateChange?.();
    }
    onVersion(undefined);
  }
}

/** What a load is doing now, for a time-out's reason: the newest version's stage. */
function loadStage(record: ModelRecord): string {
  const version = record.loading.at(-1);
  if (version === undefined) return 'loading the model file';
  return `${version.reason || 'loading'} (version ${version.versionLabel})`;
}

/**
 * The error a failed load answers with. A ServingError keeps its kind (a quota
 * failure is prefixed with the model, other messages already name it); a bad
 * config or warm-up block is invalid, failed golden checks a precondition,
 * anything else internal.
 */
export function loadFailure(name: string, err: unknown, reason: string): ServingError {
  if (err instanceof ServingError) {
    return new ServingError(err.kind, err.kind === 'over_quota' ? `failed to load model ${echo(name)}: ${reason}` : reason);
  }
  if (err instanceof ModelConfigError || err instanceof WarmupConfigError) {
    return invalidArgument(`failed to load model ${echo(name)}: ${reason}`);
  }
  if (err instanceof GoldenCheckError) return new ServingError('precondition', `failed to load model ${echo(name)}: ${reason}`);
  return internal(`failed to load model ${echo(name)}: ${reason}`);
}
