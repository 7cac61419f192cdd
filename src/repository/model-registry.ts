/**
 * What the repository has loaded: one record per model directory, which
 * version serves a request, the repository index, start-up readiness, and the
 * book-keeping of an eviction. It loads nothing itself (model-loader.ts does).
 * Main thread only.
 */
import type { Logger } from 'pino';
import { invalidArgument, notFound, unavailable } from '../common/serving-error.js';
import { echo, echoField, echoList } from '../common/echo.js';
import type { ModelVersion } from './model-version.js';
import type { ModelConfig } from '../generated/model_config_pb.js';

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

/** Book-keeping for one model directory. */
export interface ModelRecord {
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
  /** Loads and unloads running or waiting in `transition` (0: none; the record may then be forgotten). */
  transitionsQueued: number;
  /** The cold-start reload of an evicted model, shared by the requests that wait for it. */
  reloading: Promise<void> | undefined;
  /** The model's tenant (config parameter `tenant`), once a load has read its config; undefined before. */
  tenant: string | undefined;
  /**
   * The config override (config-override.ts) the serving versions were loaded
   * with, as the client sent it (never mutated: each load clones it);
   * undefined when they were loaded from config.pbtxt. A cold-start reload
   * of an evicted model uses it again; a load without an override (a
   * client's, or the poller's) reads config.pbtxt and clears it.
   */
  configOverride: ModelConfig | undefined;
}

/**
 * Which tenants' models a caller may see (security/caller.ts `visibleTo`):
 * a model it may not see is answered exactly as one that does not exist.
 * A model whose tenant is not known yet (never loaded) passes only a filter
 * that lets everything through.
 */
export type TenantFilter = (tenant: string | undefined) => boolean;

/** Sees every model: the default, and the admin's (or everyone's, without API keys). */
export const ALL_TENANTS: TenantFilter = () => true;

/** The reason an idle model unloaded to make room for another shows in RepositoryIndex. */
export const EVICTED_REASON = 'evicted (LRU)';

export class ModelRegistry {
  private readonly models = new Map<string, ModelRecord>();
  private readonly startupModels = new Set<string>();

  constructor(
    private readonly log: Logger,
    /** Called after any model's readiness may have changed. */
    private readonly onStateChange: (() => void) | undefined,
  ) {}

  /** The record of a known model; undefined for a name never loaded. */
  get(name: string): ModelRecord | undefined {
    return this.models.get(name);
  }

  /** The record of a model, created (UNAVAILABLE, empty) on first use. */
  record(name: string): ModelRecord {
    let record = this.models.get(name);
    if (record === undefined) {
      record = {
        versions: new Map(),
        loading: [],
        state: 'UNAVAILABLE',
        reason: '',
        reasonVersion: '',
        transition: Promise.resolve(),
        transitionsQueued: 0,
        reloading: undefined,
        tenant: undefined,
        configOverride: undefined,
      };
      this.models.set(name, record);
    }
    return record;
  }

  /** Drops the record of a name whose load found no model directory: a failed load of nothing leaves nothing. */
  forget(name: string): void {
    const record = this.models.get(name);
    if (record === undefined || record.versions.size > 0 || record.loading.length > 0 || this.startupModels.has(name)) return;
    this.models.delete(name);
  }

  names(): string[] {
    return [...this.models.keys()];
  }

  records(): ModelRecord[] {
    return [...this.models.values()];
  }

  /** Known names `visible` lets the caller see, in the order they became known (lazily: a message lists a few). */
  private *visibleNames(visible: TenantFilter): Generator<string> {
    for (const [name, record] of this.models) if (visible(record.tenant)) yield name;
  }

  /** Whether `name` is a model `visible` lets the caller see. */
  isKnown(name: string, visible: TenantFilter = ALL_TENANTS): boolean {
    const record = this.models.get(name);
    return record !== undefined && visible(record.tenant);
  }

  /** A model present at start-up: server readiness waits for it. */
  addStartupModel(name: string): void {
    this.startupModels.add(name);
  }

  /** An explicitly unloaded model no longer counts against server readiness (as in Triton). */
  forgetStartupModel(name: string): void {
    this.startupModels.delete(name);
  }

  /**
   * The version that serves a request: the given one, or the newest ready one
   * when `version` is empty. Throws not_found / unavailable / invalid. A
   * model `visible` hides reads exactly as one that does not exist, and the
   * models listed as available are the visible ones.
   */
  resolve(name: string, version: string, visible: TenantFilter = ALL_TENANTS): ModelVersion {
    const record = this.models.get(name);
    if (record === undefined || !visible(record.tenant)) {
      throw notFound(`model ${echo(name)} is not found; available models: ${echoList(this.visibleNames(visible))}`);
    }
    if (version === '') {
      // One pass, no allocation: this runs for every request that names no version.
      let newest: ModelVersion | undefined;
      for (const candidate of record.versions.values()) {
        if (candidate.state === 'READY' && (newest === undefined || candidate.version > newest.version)) newest = candidate;
      }
      if (newest === undefined) throw unavailable(`model ${echo(name)} is not ready (${describeState(record)})`);
      return newest;
    }
    if (!/^\d+$/.test(version)) {
      throw invalidArgument(`model_version ${echo(version)} is not a version number; expected digits or empty for the latest`);
    }
    const found = record.versions.get(Number(version));
    if (found === undefined) {
      const loaded = [...record.versions.keys()].sort((a, b) => a - b).join(', ') || 'none';
      throw notFound(`model ${echo(name)} version ${echoField(version)} is not found; loaded versions: ${loaded}`);
    }
    if (found.state !== 'READY') throw unavailable(`model ${echo(name)} version ${version} is not ready (${found.state})`);
    return found;
  }

  /** Whether a request for `name` must first reload it: it was evicted and nothing serves. */
  isEvicted(name: string): boolean {
    const record = this.models.get(name);
    return record !== undefined && record.reason === EVICTED_REASON && record.versions.size === 0;
  }

  /**
   * The arena's eviction callback for a version's reservation: runs
   * synchronously inside another model's reserve when its tenant is short of
   * memory. Refuses unless the version serves and is idle; otherwise the
   * version stops taking requests at once and unloads in the background.
   */
  evict(name: string, versionNumber: number): boolean {
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
      { model: echoField(name), model_version: version.versionLabel, tenant: version.tenant },
      'model evicted to make room (LRU)',
    );
    void version.unload(EVICTED_REASON).finally(() => this.onStateChange?.());
    return true;
  }

  /** Ready versions of a model, newest first (for metadata). */
  readyVersions(name: string): ModelVersion[] {
    const record = this.models.get(name);
    if (record === undefined) return [];
    return [...record.versions.values()].filter((v) => v.state === 'READY').sort((a, b) => b.version - a.version);
  }

  /** All loaded versions across models, optionally filtered (for statistics). */
  versions(name?: string, visible: TenantFilter = ALL_TENANTS): ModelVersion[] {
    const records = name ? [this.models.get(name)].filter((r) => r !== undefined) : [...this.models.values()];
    return records.filter((record) => visible(record.tenant)).flatMap((record) => [...record.versions.values()]);
  }

  /** True when every model present at start-up has a ready version. */
  allStartupModelsReady(): boolean {
    // An evicted model made room for another by design and reloads on demand:
    // it does not make the server unready.
    return [...this.startupModels].every(
      (name) => this.readyVersions(name).length > 0 || this.models.get(name)?.reason === EVICTED_REASON,
    );
  }

  /** The start-up models with no ready version, each with why (`--exit-on-error` names them). */
  failedStartupModels(): { readonly name: string; readonly reason: string }[] {
    return [...this.startupModels]
      .filter((name) => this.readyVersions(name).length === 0 && this.models.get(name)?.reason !== EVICTED_REASON)
      .sort()
      .map((name) => ({ name, reason: this.models.get(name)?.reason ?? '' }));
  }

  /** The index of `onDisk` (the repository's model directories) and every known model, with states; only `visible` ones. */
  index(onDisk: readonly string[], readyOnly: boolean, visible: TenantFilter = ALL_TENANTS): ModelIndexEntry[] {
    const names = [...new Set([...onDisk, ...this.models.keys()])].filter((name) => visible(this.models.get(name)?.tenant)).sort();
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
}

function describeState(record: ModelRecord): string {
  const reason = record.reason || record.loading.find((v) => v.reason !== '')?.reason || '';
  return reason ? `${record.state}: ${reason}` : record.state;
}
