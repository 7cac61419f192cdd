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
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { DataType, type ModelConfig } from '../generated/model_config_pb.js';
import { invalidArgument, notFound, unavailable, ServingError, internal } from '../common/serving-error.js';
import { ModelPool } from '../workers/model-pool.js';
import type { ModelIoDescription } from '../workers/worker-protocol.js';
import { completeModelConfig, type TensorInfo } from './config-autocomplete.js';
import { ortTypeToDataType } from './datatypes.js';
import { ModelConfigError, parseModelConfigText, validateModelConfig } from './model-config.js';
import { ModelVersion } from './model-version.js';
import { selectVersions } from './version-policy.js';

export interface ModelManagerOptions {
  readonly repository: string;
  /** Default onnxruntime intra-op threads per worker (config parameter `intra_op_thread_count` overrides). */
  readonly intraOpThreads: number;
  readonly faultInjection: boolean;
  /** Models loaded and warmed at once, so a burst of loads cannot starve serving. */
  readonly loadConcurrency: number;
  readonly logger: Logger;
  /** Called after any model's readiness may have changed (health endpoints follow it). */
  readonly onStateChange?: () => void;
}

/** Triton's repository index states. */
export type ModelState = 'READY' | 'LOADING' | 'UNLOADING' | 'UNAVAILABLE';

export interface ModelIndexEntry {
  readonly name: string;
  readonly version: string;
  readonly state: ModelState;
  readonly reason: string;
}

const MODEL_FILENAME = 'model.onnx';
const CONFIG_FILENAME = 'config.pbtxt';

/** Book-keeping for one model directory. */
interface ModelRecord {
  versions: Map<number, ModelVersion>;
  state: ModelState;
  reason: string;
  /** Serialises load/unload of this model. */
  transition: Promise<void>;
}

export class ModelManager {
  private readonly models = new Map<string, ModelRecord>();
  private readonly startupModels = new Set<string>();
  private readonly log: Logger;

  constructor(private readonly options: ModelManagerOptions) {
    this.log = options.logger.child({ component: 'repository' });
  }

  /** Loads every model in the repository; failures are recorded, never thrown. */
  async loadAll(): Promise<void> {
    const names = await this.scan();
    for (const name of names) this.startupModels.add(name);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < names.length) {
        const name = names[next++] as string;
        await this.load(name).catch(() => undefined);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.options.loadConcurrency) }, worker));
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
  async load(name: string): Promise<void> {
    const record = this.record(name);
    const previous = record.transition;
    let finish!: () => void;
    record.transition = new Promise<void>((resolve) => (finish = resolve));
    await previous;
    try {
      await this.loadNow(name, record);
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
    return [...this.startupModels].every((name) => this.readyVersions(name).length > 0);
  }

  /** Every model in the repository directory, loaded or not, with its state. */
  async index(readyOnly: boolean): Promise<ModelIndexEntry[]> {
    const onDisk = await this.scan().catch(() => [] as string[]);
    const names = [...new Set([...onDisk, ...this.models.keys()])].sort();
    const entries: ModelIndexEntry[] = [];
    for (const name of names) {
      const record = this.models.get(name);
      const versions = record ? [...record.versions.values()].sort((a, b) => a.version - b.version) : [];
      if (versions.length > 0) {
        for (const v of versions) entries.push({ name, version: v.versionLabel, state: v.state, reason: '' });
      } else {
        entries.push({ name, version: '', state: record?.state ?? 'UNAVAILABLE', reason: record?.reason ?? '' });
      }
    }
    return readyOnly ? entries.filter((e) => e.state === 'READY') : entries;
  }

  /** Unloads everything (shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.models.keys()].map((name) => this.unload(name).catch(() => undefined)));
  }

  private record(name: string): ModelRecord {
    let record = this.models.get(name);
    if (record === undefined) {
      record = { versions: new Map(), state: 'UNAVAILABLE', reason: '', transition: Promise.resolve() };
      this.models.set(name, record);
    }
    return record;
  }

  private async loadNow(name: string, record: ModelRecord): Promise<void> {
    const started = performance.now();
    const hadVersions = record.versions.size > 0;
    if (!hadVersions) {
      record.state = 'LOADING';
      record.reason = '';
    }
    let loaded: ModelVersion[] = [];
    try {
      loaded = await this.loadVersions(name);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (!hadVersions) {
        record.state = 'UNAVAILABLE';
        record.reason = reason;
      }
      this.log.error({ model: name, error: reason }, 'model failed to load');
      throw err instanceof ServingError
        ? err
        : err instanceof ModelConfigError
          ? invalidArgument(`failed to load model '${name}': ${reason}`)
          : internal(`failed to load model '${name}': ${reason}`);
    }
    const replaced = [...record.versions.values()];
    record.versions = new Map(loaded.map((v) => [v.version, v]));
    record.state = 'READY';
    record.reason = '';
    this.log.info(
      { model: name, versions: loaded.map((v) => v.version), load_ms: Math.round(performance.now() - started) },
      'model ready',
    );
    // The replaced versions stop taking requests now and finish the ones they hold.
    await Promise.all(replaced.map((version) => version.unload()));
  }

  private async loadVersions(name: string): Promise<ModelVersion[]> {
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
        const { pool, io } = await ModelPool.create({
          modelPath,
          instances: instanceCount(config),
          intraOpThreads: intraOpThreads(config, this.options.intraOpThreads),
          faultInjection: this.options.faultInjection,
          logger: this.log,
        });
        try {
          const file = path.join(modelDir, CONFIG_FILENAME);
          config = completeModelConfig(config, name, toTensorInfo(io), { file });
          const { warnings } = validateModelConfig(config, { file, modelName: name });
          if (version === selected[0]) for (const warning of warnings) this.log.warn({ model: name }, warning);
          versions.push(new ModelVersion(name, version, config, pool));
        } catch (err) {
          await pool.close();
          throw err;
        }
      }
    } catch (err) {
      // A failed load leaves nothing behind: close the pools already started.
      await Promise.all(versions.map((v) => v.unload()));
      throw err;
    }
    return versions;
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
  return record.reason ? `${record.state}: ${record.reason}` : record.state;
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

function toTensorInfo(io: ModelIoDescription): { inputs: TensorInfo[]; outputs: TensorInfo[] } {
  const convert = (t: ModelIoDescription['inputs'][number]): TensorInfo => ({
    name: t.name,
    // A type outside Triton's set (e.g. a sequence or map output) fails validation by name.
    dataType: ortTypeToDataType(t.type) ?? DataType.TYPE_INVALID,
    shape: [...t.shape],
  });
  return { inputs: io.inputs.map(convert), outputs: io.outputs.map(convert) };
}
