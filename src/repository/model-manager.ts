/**
 * The model repository at run time: scans `DIR/<model>/config.pbtxt` and
 * `DIR/<model>/<version>/model.onnx`, loads the versions the version policy
 * selects (each with its own worker pool), answers which version serves a
 * request, and unloads or reloads models while the server runs.
 *
 * A facade over the registry (model-registry.ts: what is loaded, resolve,
 * index, evictions) and the loader (model-loader.ts: load, versions, warm-up,
 * golden checks). It owns what spans both: the per-model transition chain that
 * serialises load and unload, the load slots, the model control mode
 * (model-control.ts: what loads at start-up, whether clients may load and
 * unload, the poller), and shutdown. Main thread only.
 */
import type { Logger } from 'pino';
import { invalidArgument, notFound, unavailable } from '../common/serving-error.js';
import { echo, echoField } from '../common/echo.js';
import { Semaphore } from '../common/semaphore.js';
import { ModelLoader, type ModelLoaderOptions } from './model-loader.js';
import { missingModelMessage, modelNameProblem } from './model-directory.js';
import {
  DEFAULT_MODEL_CONTROL,
  loadUnloadRefusal,
  NOT_LOADED_REASON,
  startupModelNames,
  type ModelControlSettings,
} from './model-control.js';
import { RepositoryPoller } from './repository-poller.js';
import { ALL_TENANTS, ModelRegistry, type ModelIndexEntry, type ModelRecord, type TenantFilter } from './model-registry.js';
import type { ModelVersion } from './model-version.js';
import type { ModelConfig } from '../generated/model_config_pb.js';
import type { ConfigOverride } from './config-override.js';

export { ALL_TENANTS, EVICTED_REASON, type ModelIndexEntry, type ModelState, type TenantFilter } from './model-registry.js';

export interface ModelManagerOptions extends ModelLoaderOptions {
  /** Models loaded and warmed at once, so a burst of loads cannot starve serving. */
  readonly loadConcurrency: number;
  /** `--model-control-mode` and its companions; default: load everything, allow load and unload. */
  readonly control?: ModelControlSettings;
}

export class ModelManager {
  private readonly registry: ModelRegistry;
  private readonly loader: ModelLoader;
  private readonly log: Logger;
  /** Load + warm-up + golden checks of at most `loadConcurrency` models at once, start-up or run time. */
  private readonly loadSlots: Semaphore;
  private closing = false;
  readonly control: ModelControlSettings;
  /** Poll mode only. */
  private readonly poller: RepositoryPoller | undefined;

  constructor(private readonly options: ModelManagerOptions) {
    this.log = options.logger.child({ component: 'repository' });
    this.loadSlots = new Semaphore(options.loadConcurrency);
    this.registry = new ModelRegistry(this.log, options.onStateChange);
    this.loader = new ModelLoader(options, this.registry, this.log);
    this.control = options.control ?? DEFAULT_MODEL_CONTROL;
    this.poller = this.control.mode !== 'poll' ? undefined : new RepositoryPoller({
      roots: options.roots,
      intervalMs: this.control.pollIntervalMs,
      logger: this.log,
      load: (name) => this.loadModel(name),
      unload: (name) => this.unloadModel(name),
    });
  }

  /**
   * Loads the start-up models: every model in the repository, or in explicit
   * mode the `--load-model` ones (the others are known, UNAVAILABLE, until a
   * client loads them). Readiness waits for these only. Failures are
   * recorded, never thrown. In poll mode, polling starts after.
   */
  async loadStartupModels(): Promise<void> {
    const onDisk = await this.scan();
    const names = startupModelNames(this.control, onDisk);
    for (const name of onDisk) {
      if (names.includes(name)) continue;
      this.registry.record(name).reason = NOT_LOADED_REASON;
    }
    for (const name of names) {
      this.registry.addStartupModel(name);
      this.registry.record(name).state = 'LOADING';
    }
    await this.poller?.remember(names);
    // The semaphore in `loadModel` bounds how many run at once.
    await Promise.all(names.map((name) => this.loadModel(name).catch(() => undefined)));
    if (!this.closing) this.poller?.start();
  }

  /** Model directory names in the repository's roots, sorted (see ModelRoots.scan). */
  async scan(): Promise<string[]> {
    return this.options.roots.scan();
  }

  /** The start-up models with no ready version, each with why. */
  failedStartupModels(): { readonly name: string; readonly reason: string }[] {
    return this.registry.failedStartupModels();
  }

  /**
   * A client's load (RepositoryModelLoad, REST load): (re)loads a model, or
   * throws UNAVAILABLE where the control mode refuses it. On a failed reload
   * the versions already serving stay. `configOverride` (parsed, see
   * config-override.ts) replaces config.pbtxt for this load; without one,
   * config.pbtxt is read again, whatever an earlier load overrode. Who may
   * override is the caller's check (the handler's), as for the load itself.
   * The override's warnings (fields hotpath ignores) go to the log, as
   * config.pbtxt's do when it is read.
   */
  async load(name: string, configOverride?: ConfigOverride): Promise<void> {
    const refusal = loadUnloadRefusal(this.control.mode, 'load', name);
    if (refusal !== undefined) throw refusal;
    const problem = modelNameProblem(name);
    if (problem !== undefined) throw invalidArgument(`model_name ${echo(name)}: ${problem}`);
    for (const warning of configOverride?.warnings ?? []) this.log.warn({ model: echoField(name) }, warning);
    await this.loadModel(name, false, configOverride?.config);
  }

  /** A client's unload (RepositoryModelUnload, REST unload); refused as `load` is. */
  async unload(name: string): Promise<void> {
    const refusal = loadUnloadRefusal(this.control.mode, 'unload', name);
    if (refusal !== undefined) throw refusal;
    await this.unloadModel(name);
  }

  /**
   * (Re)loads a model, whatever the control mode (start-up, poller, cold
   * start). A name with no directory is refused before anything is recorded,
   * and a record whose directory vanished during its load is dropped again,
   * so failed loads of made-up names (8 MiB of them, say) leave nothing in
   * the index or in later messages.
   */
  private async loadModel(name: string, coldStart = false, configOverride?: ModelConfig): Promise<void> {
    if (this.registry.get(name) === undefined && !this.options.roots.has(name)) {
      throw notFound(missingModelMessage(name));
    }
    const record = this.registry.record(name);
    try {
      await this.transition(record, () =>
        this.loadSlots.with(() => {
          if (this.closing) throw unavailable(`model ${echo(name)} is not loaded: the server is shutting down`);
          return this.loader.load(name, record, coldStart, configOverride);
        }),
      );
    } catch (err) {
      if (record.transitionsQueued === 0 && !this.options.roots.has(name)) this.registry.forget(name);
      throw err;
    }
  }

  /** Unloads every version of a model once its in-flight requests finish, whatever the control mode. */
  private async unloadModel(name: string): Promise<void> {
    const record = this.registry.get(name);
    if (record === undefined) throw notFound(`model ${echo(name)} is not found in the repository`);
    await this.transition(record, async () => {
      const versions = [...record.versions.values()];
      record.state = 'UNLOADING';
      record.reason = '';
      await Promise.all(versions.map((version) => version.unload()));
      record.versions.clear();
      record.configOverride = undefined;
      record.state = 'UNAVAILABLE';
      record.reason = 'unloaded';
      record.reasonVersion = '';
      this.registry.forgetStartupModel(name);
      this.log.info({ model: echoField(name) }, 'model unloaded');
    });
  }

  /**
   * The version that serves a request: the given one, or the newest ready one
   * when `version` is empty. Throws NOT_FOUND / UNAVAILABLE / INVALID_ARGUMENT;
   * NOT_FOUND, as for a missing model, for one `visible` hides.
   */
  resolve(name: string, version: string, visible: TenantFilter = ALL_TENANTS): ModelVersion {
    return this.registry.resolve(name, version, visible);
  }

  /**
   * `resolve` for inference: a model that was evicted to make room is loaded
   * again first (a cold start, logged with its load time); requests arriving
   * meanwhile wait for the same load. A model `visible` hides is never reloaded.
   *
   * A loaded model resolves at once, without a promise (every request asks;
   * only a cold start waits), and a failure to resolve it is thrown, not
   * returned: callers `await` the result in a try.
   */
  resolveForRequest(name: string, version: string, visible: TenantFilter = ALL_TENANTS): ModelVersion | Promise<ModelVersion> {
    const record = this.registry.get(name);
    if (record !== undefined && visible(record.tenant) && this.registry.isEvicted(name) && !this.closing) {
      // The evicted versions' config comes back with them, an override included.
      record.reloading ??= this.loadModel(name, true, record.configOverride).finally(() => {
        record.reloading = undefined;
      });
      return record.reloading.then(() => this.registry.resolve(name, version, visible));
    }
    return this.registry.resolve(name, version, visible);
  }

  /** Ready versions of a model, newest first (for metadata). */
  readyVersions(name: string): ModelVersion[] {
    return this.registry.readyVersions(name);
  }

  /** All loaded versions across models, optionally filtered (for statistics). */
  versions(name?: string, visible: TenantFilter = ALL_TENANTS): ModelVersion[] {
    return this.registry.versions(name, visible);
  }

  isKnown(name: string, visible: TenantFilter = ALL_TENANTS): boolean {
    return this.registry.isKnown(name, visible);
  }

  /** True when every start-up model (see loadStartupModels) has a ready version. */
  allStartupModelsReady(): boolean {
    return this.registry.allStartupModelsReady();
  }

  /** Every model in the repository directory, loaded or not, with its state; only those `visible` lets the caller see. */
  async index(readyOnly: boolean, visible: TenantFilter = ALL_TENANTS): Promise<ModelIndexEntry[]> {
    const onDisk = await this.scan().catch(() => [] as string[]);
    return this.registry.index(onDisk, readyOnly, visible);
  }

  /** Unloads everything (shutdown); loads in progress are aborted, queued ones never start. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([
      this.poller?.stop(),
      ...this.registry.records().flatMap((record) => record.loading.map((v) => v.abortLoad())),
    ]);
    await Promise.all(this.registry.names().map((name) => this.unloadModel(name).catch(() => undefined)));
  }

  /** Runs `work` after the model's previous load or unload, then reports the state change. */
  private async transition(record: ModelRecord, work: () => Promise<void>): Promise<void> {
    const previous = record.transition;
    let finish!: () => void;
    record.transition = new Promise<void>((resolve) => (finish = resolve));
    record.transitionsQueued += 1;
    await previous;
    try {
      await work();
    } finally {
      record.transitionsQueued -= 1;
      finish();
      this.options.onStateChange?.();
    }
  }
}

