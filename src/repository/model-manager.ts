/**
 * The model repository at run time: scans `DIR/<model>/config.pbtxt` and
 * `DIR/<model>/<version>/model.onnx`, loads the versions the version policy
 * selects (each with its own worker pool), answers which version serves a
 * request, and unloads or reloads models while the server runs.
 *
 * A model that fails to load fails alone: its state and reason are recorded
 * and every other model still loads. Main thread only.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ModelConfig } from '../generated/model_config_pb.js';
import { status } from '@grpc/grpc-js';
import { invalidArgument, notFound, unavailable, ServingError, internal } from '../common/serving-error.js';
import { Semaphore } from '../common/semaphore.js';
import { ARENA_NAME, type ServerMemory } from '../tenancy/server-memory.js';
import { DEFAULT_TENANT, parseByteSize } from '../tenancy/tenant-config.js';
import { ModelPool } from '../workers/model-pool.js';
import { createSessionCreationLock } from '../workers/session-footprint.js';
import type { Owner } from '../native/arena.js';
import { completeModelConfig } from './config-autocomplete.js';
import { ModelConfigError, parseModelConfigText, validateModelConfig } from './model-config.js';
import { GoldenCheckError, loadGoldenCases, runGoldenChecks } from './golden-check.js';
import { ModelVersion } from './model-version.js';
import { selectVersions } from './version-policy.js';
import { VersionMemory } from './version-memory.js';
import { VersionBatcher, type VersionBatcherHooks } from '../batching/version-batcher.js';
import { buildWarmupSamples, WarmupConfigError, warmupDelayMs } from './warmup-samples.js';
import { leakFault } from './fault-parameters.js';
import { toTensorInfo } from './tensor-info.js';
import { loadNativeVersion, selectExecutor } from './native-loader.js';
import type { DeviceHealth } from '../executor/device-health.js';
import type { DeviceFallbackReason } from '../observability/metric-names.js';

export interface ModelManagerOptions {
  readonly repository: string;
  /** Default onnxruntime intra-op threads per worker (config parameter `intra_op_thread_count` overrides). */
  readonly intraOpThreads: number;
  readonly faultInjection: boolean;
  /** Models loaded and warmed at once, so a burst of loads cannot starve serving. */
  readonly loadConcurrency: number;
  /** Run the default warm-up (batch 1 and max_batch_size) for models without `model_warmup`. */
  readonly defaultWarmup: boolean;
  /** The memory ledger: tenants' quotas, model reservations, request buffers. */
  readonly memory: ServerMemory;
  /** What dynamic batchers report back (executions, for statistics and metrics). */
  readonly batching: Omit<VersionBatcherHooks, 'logger'>;
  readonly logger: Logger;
  /** Called after any model's readiness may have changed (health endpoints follow it). */
  readonly onStateChange?: () => void;
  /** Whether the CUDA device still works (a sticky error moves every executor model to CPU). */
  readonly deviceHealth: DeviceHealth;
  /** After a transient device error, how often a model on CPU probes the device. */
  readonly deviceProbeIntervalMs: number;
  /** A version moved from the executor to CPU (metrics). */
  readonly onDeviceFallback?: (version: ModelVersion, reason: DeviceFallbackReason, detail: string) => void;
}

/** Triton's repository index states. */
export type ModelState = 'READY' | 'LOADING' | 'UNLOADING' | 'UNAVAILABLE';

export interface ModelIndexEntry {
  readonly name: string;
  readonly version: string;
  readonly state: ModelState;
  readonly reason: string;
  /** Where the version's batches run now ('native-cuda', 'native-host', 'onnxruntime'); absent without a loaded version. */
  readonly executor?: string;
  /** Why it runs on onnxruntime although the executor was asked for. */
  readonly executorReason?: string;
}

const MODEL_FILENAME = 'model.onnx';
const CONFIG_FILENAME = 'config.pbtxt';

/** Book-keeping for one model directory. */
interface ModelRecord {
  /** The versions that serve (READY) or are draining (UNLOADING). */
  versions: Map<number, ModelVersion>;
  /** Versions of a load in progress (LOADING), shown in the index until they serve or fail. */
  loading: ModelVersion[];
  state: ModelState;
  reason: string;
  /** The version a failed load failed on, when the failure was version-specific ('' otherwise). */
  reasonVersion: string;
  /** Serialises load/unload of this model. */
  transition: Promise<void>;
  /** The cold-start reload of an evicted model, shared by the requests that wait for it. */
  reloading: Promise<void> | undefined;
}

/** The reason an idle model unloaded to make room for another shows in RepositoryIndex. */
export const EVICTED_REASON = 'evicted (LRU)';

export class ModelManager {
  private readonly models = new Map<string, ModelRecord>();
  private readonly startupModels = new Set<string>();
  private readonly log: Logger;
  /** Load + warm-up + golden checks of at most `loadConcurrency` models at once, start-up or run time. */
  private readonly loadSlots: Semaphore;
  private closing = false;
  /** Serialises session creation across every pool, so footprints are measured one at a time. */
  private readonly footprintLock = createSessionCreationLock();

  constructor(private readonly options: ModelManagerOptions) {
    this.log = options.logger.child({ component: 'repository' });
    this.loadSlots = new Semaphore(options.loadConcurrency);
  }

  /** Loads every model in the repository; failures are recorded, never thrown. */
  async loadAll(): Promise<void> {
    const names = await this.scan();
    for (const name of names) {
      this.startupModels.add(name);
      this.record(name).state = 'LOADING';
    }
    // The semaphore in `load` bounds how many run at once.
    await Promise.all(names.map((name) => this.load(name).catch(() => undefined)));
  }

  /**
   * Model directory names in the repository, sorted. A directory is a model
   * when it holds a config.pbtxt or a numeric version directory; anything else
   * (such as the sample repository's generator code) is not a model.
   */
  async scan(): Promise<string[]> {
    const entries = await readdir(this.options.repository, { withFileTypes: true });
    const names: string[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      if (await isModelDirectory(path.join(this.options.repository, entry.name))) names.push(entry.name);
    }
    return names.sort();
  }

  /** (Re)loads a model. On a failed reload the versions already serving stay. */
  async load(name: string, coldStart = false): Promise<void> {
    const record = this.record(name);
    const previous = record.transition;
    let finish!: () => void;
    record.transition = new Promise<void>((resolve) => (finish = resolve));
    await previous;
    try {
      await this.loadSlots.with(() => this.loadNow(name, record, coldStart));
    } finally {
      finish();
      this.options.onStateChange?.();
    }
  }

  /** Unloads every version of a model once its in-flight requests finish. */
  async unload(name: string): Promise<void> {
    const record = this.models.get(name);
    if (record === undefined) throw notFound(`model '${name}' is not found in the repository`);
    const previous = record.transition;
    let finish!: () => void;
    record.transition = new Promise<void>((resolve) => (finish = resolve));
    await previous;
    try {
      const versions = [...record.versions.values()];
      record.state = 'UNLOADING';
      record.reason = '';
      await Promise.all(versions.map((version) => version.unload()));
      record.versions.clear();
      record.state = 'UNAVAILABLE';
      record.reason = 'unloaded';
      record.reasonVersion = '';
      // An explicitly unloaded model no longer counts against server readiness (as in Triton).
      this.startupModels.delete(name);
      this.log.info({ model: name }, 'model unloaded');
    } finally {
      finish();
      this.options.onStateChange?.();
    }
  }

  /**
   * The version that serves a request: the given one, or the newest ready one
   * when `version` is empty. Throws NOT_FOUND / UNAVAILABLE / INVALID_ARGUMENT.
   */
  resolve(name: string, version: string): ModelVersion {
    const record = this.models.get(name);
    if (record === undefined) {
      throw notFound(`model '${name}' is not found; available models: ${[...this.models.keys()].join(', ') || '(none)'}`);
    }
    if (version === '') {
      const ready = [...record.versions.values()].filter((v) => v.state === 'READY');
      const newest = ready.sort((a, b) => b.version - a.version)[0];
      if (newest === undefined) throw unavailable(`model '${name}' is not ready (${describeState(record)})`);
      return newest;
    }
    if (!/^\d+$/.test(version)) {
      throw invalidArgument(`model_version '${version}' is not a version number; expected digits or empty for the latest`);
    }
    const found = record.versions.get(Number(version));
    if (found === undefined) {
      const loaded = [...record.versions.keys()].sort((a, b) => a - b).join(', ') || 'none';
      throw notFound(`model '${name}' version ${version} is not found; loaded versions: ${loaded}`);
    }
    if (found.state !== 'READY') throw unavailable(`model '${name}' version ${version} is not ready (${found.state})`);
    return found;
  }

  /**
   * `resolve` for inference: a model that was evicted to make room is loaded
   * again first (a cold start, logged with its load time); requests arriving
   * meanwhile wait for the same load.
   */
  async resolveForRequest(name: string, version: string): Promise<ModelVersion> {
    const record = this.models.get(name);
    if (record !== undefined && record.reason === EVICTED_REASON && record.versions.size === 0 && !this.closing) {
      record.reloading ??= this.load(name, true).finally(() => {
        record.reloading = undefined;
      });
      await record.reloading;
    }
    return this.resolve(name, version);
  }

  /**
   * The arena's eviction callback for a version's reservation: runs
   * synchronously inside another model's reserve when its tenant is short of
   * memory. Refuses unless the version serves and is idle; otherwise the
   * version stops taking requests at once and unloads in the background.
   */
  private evict(name: string, versionNumber: number): boolean {
    const record = this.models.get(name);
    const version = record?.versions.get(versionNumber);
    if (record === undefined || version === undefined || !version.idle) return false;
    record.versions.delete(versionNumber);
    if (record.versions.size === 0) {
      record.state = 'UNAVAILABLE';
      record.reason = EVICTED_REASON;
      record.reasonVersion = version.versionLabel;
    }
    this.log.info(
      { model: name, model_version: version.versionLabel, tenant: version.tenant },
      'model evicted to make room (LRU)',
    );
    void version.unload(EVICTED_REASON).finally(() => this.options.onStateChange?.());
    return true;
  }

  /** Ready versions of a model, newest first (for metadata). */
  readyVersions(name: string): ModelVersion[] {
    const record = this.models.get(name);
    if (record === undefined) return [];
    return [...record.versions.values()].filter((v) => v.state === 'READY').sort((a, b) => b.version - a.version);
  }

  /** All loaded versions across models, optionally filtered (for statistics). */
  versions(name?: string): ModelVersion[] {
    const records = name ? [this.models.get(name)].filter((r) => r !== undefined) : [...this.models.values()];
    return records.flatMap((record) => [...record.versions.values()]);
  }

  isKnown(name: string): boolean {
    return this.models.has(name);
  }

  /** True when every model present at start-up has a ready version. */
  allStartupModelsReady(): boolean {
    // An evicted model made room for another by design and reloads on demand:
    // it does not make the server unready.
    return [...this.startupModels].every(
      (name) => this.readyVersions(name).length > 0 || this.models.get(name)?.reason === EVICTED_REASON,
    );
  }

  /** Every model in the repository directory, loaded or not, with its state. */
  async index(readyOnly: boolean): Promise<ModelIndexEntry[]> {
    const onDisk = await this.scan().catch(() => [] as string[]);
    const names = [...new Set([...onDisk, ...this.models.keys()])].sort();
    const entries: ModelIndexEntry[] = [];
    for (const name of names) {
      const record = this.models.get(name);
      const versions = record ? [...record.versions.values()].sort((a, b) => a.version - b.version) : [];
      const loading = (record?.loading ?? []).filter((v) => !record?.versions.has(v.version));
      for (const v of [...versions, ...loading]) {
        const executorReason = v.executorReason;
        entries.push({
          name,
          version: v.versionLabel,
          state: v.state,
          // A READY version on CPU after a device error says so in the index too.
          reason: v.reason || executorReason,
          executor: v.executorKind,
          ...(executorReason ? { executorReason } : {}),
        });
      }
      if (versions.length === 0 && loading.length === 0) {
        entries.push({
          name,
          version: record?.reasonVersion ?? '',
          state: record?.state ?? 'UNAVAILABLE',
          reason: record?.reason ?? '',
        });
      }
    }
    return readyOnly ? entries.filter((e) => e.state === 'READY') : entries;
  }

  /** Unloads everything (shutdown); loads in progress are aborted, queued ones never start. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.models.values()].flatMap((record) => record.loading.map((v) => v.abortLoad())));
    await Promise.all([...this.models.keys()].map((name) => this.unload(name).catch(() => undefined)));
  }

  private record(name: string): ModelRecord {
    let record = this.models.get(name);
    if (record === undefined) {
      record = {
        versions: new Map(),
        loading: [],
        state: 'UNAVAILABLE',
        reason: '',
        reasonVersion: '',
        transition: Promise.resolve(),
        reloading: undefined,
      };
      this.models.set(name, record);
    }
    return record;
  }

  private async loadNow(name: string, record: ModelRecord, coldStart: boolean): Promise<void> {
    if (this.closing) throw unavailable(`model '${name}' is not loaded: the server is shutting down`);
    const started = performance.now();
    const hadVersions = record.versions.size > 0;
    if (!hadVersions) {
      record.state = 'LOADING';
      record.reason = '';
      record.reasonVersion = '';
    }
    let loaded: ModelVersion[] = [];
    const failure = { version: '' };
    try {
      loaded = await this.loadVersions(name, record, started, failure);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      const failedVersion = failure.version;
      if (!hadVersions) {
        record.state = 'UNAVAILABLE';
        record.reason = reason;
        record.reasonVersion = failedVersion;
      }
      this.log.error({ model: name, model_version: failedVersion || undefined, error: reason }, 'model failed to load');
      throw err instanceof ServingError
        ? new ServingError(err.code, err.code === status.RESOURCE_EXHAUSTED ? `failed to load model '${name}': ${reason}` : reason)
        : err instanceof ModelConfigError || err instanceof WarmupConfigError
          ? invalidArgument(`failed to load model '${name}': ${reason}`)
          : err instanceof GoldenCheckError
            ? new ServingError(status.FAILED_PRECONDITION, `failed to load model '${name}': ${reason}`)
            : internal(`failed to load model '${name}': ${reason}`);
    }
    const replaced = [...record.versions.values()];
    record.versions = new Map(loaded.map((v) => [v.version, v]));
    record.state = 'READY';
    record.reason = '';
    record.reasonVersion = '';
    this.log.info(
      {
        model: name,
        versions: loaded.map((v) => v.version),
        load_ms: Math.round(performance.now() - started),
        ...(coldStart ? { cold_start: true } : {}),
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
  ): Promise<ModelVersion[]> {
    const modelDir = path.join(this.options.repository, name);
    if (!existsSync(modelDir)) {
      throw notFound(`model '${name}' is not found in repository ${this.options.repository}`);
    }
    let config = await this.readConfig(name, modelDir);
    const available = await this.availableVersions(modelDir, config);
    const selected = selectVersions(config?.versionPolicy, available).sort((a, b) => a - b);
    if (selected.length === 0) {
      throw new ModelConfigError(
        path.join(modelDir, CONFIG_FILENAME), undefined,
        `no version of model '${name}' matches the version policy; versions on disk: ${available.join(', ') || 'none'}`,
      );
    }
    const versions: ModelVersion[] = [];
    try {
      for (const version of selected) {
        const modelPath = path.join(modelDir, String(version), config?.defaultModelFilename || MODEL_FILENAME);
        const instances = instanceCount(config);
        const fileBytes = (await stat(modelPath)).size;
        const file = path.join(modelDir, CONFIG_FILENAME);
        const tenant = modelTenant(config);
        const leak = leakFault(config, this.options.faultInjection, file);
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
            },
          );
          if ('version' in loaded) {
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
          model: name,
          version,
          estimateBytes: declared ?? fileBytes * instances,
          onEvict: () => this.evict(name, version),
        });
        let pool: ModelPool | undefined;
        try {
          const owner = memory.createGenerationOwner(1);
          const created = await createPool(1, owner);
          pool = created.pool;
          config = completeModelConfig(config, name, toTensorInfo(created.io), { file });
          const { warnings } = validateModelConfig(config, { file, modelName: name });
          if (version === selected[0]) for (const warning of warnings) this.log.warn({ model: name }, warning);
          const loaded = new ModelVersion(name, version, config, { number: 1, owner, pool }, memory, startPool, instances);
          if (note !== '') {
            loaded.setExecutorNote(note);
            this.log.warn({ model: name, model_version: String(version), reason: note }, 'native executor not used: running on onnxruntime (CPU)');
          }
          versions.push(loaded);
          record.loading = [...versions];
        } catch (err) {
          await pool?.close();
          memory.destroy();
          throw err;
        }
      }
      await this.prepareVersions(modelDir, versions, started, (label) => (failure.version = label ?? ''));
    } catch (err) {
      // A failed load leaves nothing behind: close the pools already started.
      const reason = err instanceof Error ? err.message : String(err);
      await Promise.all(versions.map((v) => v.unload(reason)));
      throw err;
    } finally {
      record.loading = [];
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
    versions: readonly ModelVersion[],
    started: number,
    onVersion: (label: string | undefined) => void,
  ): Promise<void> {
    const golden = await loadGoldenCases(modelDir);
    for (const version of versions) {
      onVersion(version.versionLabel);
      const fields = { model: version.modelName, model_version: version.versionLabel, tenant: version.tenant };
      const samples = await buildWarmupSamples(version.config, version.signature, {
        modelDir,
        defaultWarmup: this.options.defaultWarmup,
      });
      const report = await version.warmUp({ samples, delayMs: warmupDelayMs(version.config, this.options.faultInjection) });
      // Every worker has reported its session's footprint by now: charge what was measured.
      const declared = declaredFootprint(version.config, path.join(modelDir, CONFIG_FILENAME));
      version.memory.settle(declared ?? version.measuredFootprintBytes);
      this.log.info(
        { ...fields, footprint_bytes: version.memory.reservedBytes, measured: declared === undefined },
        'model memory charged to tenant',
      );
      for (const warning of report.warnings) this.log.warn(fields, `default ${warning} (the model still turns ready)`);
      if (golden.length > 0) {
        version.setLoadingReason('running golden checks');
        await runGoldenChecks(golden, version.signature, (task, transfer) => version.run(task, transfer));
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

  private async readConfig(name: string, modelDir: string): Promise<ModelConfig | undefined> {
    const file = path.join(modelDir, CONFIG_FILENAME);
    if (!existsSync(file)) {
      this.log.info({ model: name }, 'no config.pbtxt: completing the config from the ONNX model');
      return undefined;
    }
    const { config, warnings } = parseModelConfigText(await readFile(file, 'utf8'), file);
    for (const warning of warnings) this.log.warn({ model: name }, warning);
    return config;
  }

  private async availableVersions(modelDir: string, config: ModelConfig | undefined): Promise<number[]> {
    const filename = config?.defaultModelFilename || MODEL_FILENAME;
    const entries = await readdir(modelDir, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && /^\d+$/.test(e.name) && existsSync(path.join(modelDir, e.name, filename)))
      .map((e) => Number(e.name));
  }
}

async function isModelDirectory(dir: string): Promise<boolean> {
  if (existsSync(path.join(dir, CONFIG_FILENAME))) return true;
  const entries = await readdir(dir, { withFileTypes: true });
  return entries.some((e) => e.isDirectory() && /^\d+$/.test(e.name));
}

function describeState(record: ModelRecord): string {
  const reason = record.reason || record.loading.find((v) => v.reason !== '')?.reason || '';
  return reason ? `${record.state}: ${reason}` : record.state;
}

/** The tenant a model's memory is charged to: config parameter `tenant`, else `default`. */
function modelTenant(config: ModelConfig | undefined): string {
  return config?.parameters['tenant']?.stringValue || DEFAULT_TENANT;
}

/**
 * A footprint the config declares (parameter `memory_footprint_bytes`, e.g.
 * "512MiB"), charged instead of the measurement: for models whose sessions
 * allocate lazily, and for deterministic tests.
 */
function declaredFootprint(config: ModelConfig | undefined, file: string): number | undefined {
  const value = config?.parameters['memory_footprint_bytes']?.stringValue;
  if (value === undefined) return undefined;
  try {
    return parseByteSize(value, 'parameter memory_footprint_bytes');
  } catch (err) {
    throw new ModelConfigError(file, undefined, err instanceof Error ? err.message : String(err));
  }
}

/** Triton sums the counts of every instance group; a missing group means one instance. */
function instanceCount(config: ModelConfig | undefined): number {
  const groups = config?.instanceGroup ?? [];
  if (groups.length === 0) return 1;
  return groups.reduce((sum, group) => sum + Math.max(1, group.count || 1), 0);
}

/** Triton's onnxruntime backend reads `intra_op_thread_count` from the config parameters. */
function intraOpThreads(config: ModelConfig | undefined, fallback: number): number {
  const value = config?.parameters['intra_op_thread_count']?.stringValue;
  const parsed = value === undefined ? NaN : Number(value);
  return Number.isInteger(parsed) && parsed > 0 ? parsed : fallback;
}
