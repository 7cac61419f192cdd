/**
 * The door catalog: which model versions the front-door threads
 * (`--front-door-threads N`, server/door-threads.ts) serve ModelInfer for
 * themselves, and what a door thread needs to do so. The main thread builds
 * it (`buildDoorCatalog`) whenever the set can change (a model's load,
 * unload or reload, routes that took over, a door thread that starts) and
 * posts it to every door thread, which serves from it (door-inference.ts).
 * Every other request (a version not listed, a route, a stream, HTTP) is
 * forwarded to the main thread as before.
 *
 * A version is listed when its request path is the run alone, on a batcher
 * whose batches a native target runs, so that nothing a request does needs
 * the main thread:
 *   - READY, numeric, with a batcher fed natively: to the native executor
 *     while the version runs there (the door checks embedding ids with the
 *     bounds posted here, and tells the main thread of a device fault), or
 *     to its onnxruntime workers (the version's worker target); batches of
 *     a batcher without one run on the main thread's pool;
 *   - no step around the run (its plan's `serve` is its `shadow`: no
 *     response cache, drift or archive; version-plan.ts);
 *   - its batching does not preserve ordering (answers in arrival order need
 *     one thread's turn-taking);
 *   - no route has the model's name, and its config asks for no test-only
 *     fault (`hotpath_fault_*` parameters, --enable-fault-injection). A
 *     request carrying the `hotpath_fault` parameter is forwarded by the door.
 * Each unlisted version is named with the reason (logged at debug by the
 * door threads' owner).
 *
 * What the door shares with the main thread, by reference (SharedArrayBuffer
 * or native id), so nothing is copied or flushed later: the batcher (a
 * door's requests join the same batches), the version's gate (SharedGate:
 * the unload closes it and waits for the door requests inside), its
 * statistics and its bound metrics (each thread writes its own shard; a
 * scrape sums them). A tenant's rate and in-flight limits are no reason to
 * forward: the door threads admit against the main thread's limiter, shared
 * (security/tenant-limits.ts, DoorThreadSettings.tenantLimits).
 *
 * Main thread only (the builder); the catalog itself is plain data for
 * postMessage.
 */
import { toBinary } from '@bufbuild/protobuf';
import { ModelConfigSchema } from '../generated/model_config_pb.js';
import type { ModelVersion } from '../repository/model-version.js';
import type { SharedBatcher } from '../native/batcher.js';
import { batcherOf } from '../batching/version-batcher.js';
import type { SharedInferenceStatistics } from '../repository/inference-statistics.js';
import type { SharedVersionMetrics } from '../observability/metrics.js';
import type { IndexBound } from '../executor/version-executor.js';
import type { SharedGate } from '../common/shared-gate.js';

/** The config parameters of the test-only faults (repository/fault-parameters.ts): such a version stays on the main thread. */
const FAULT_PARAMETER_PREFIX = 'hotpath_fault';

/** One version a door thread serves. */
export interface DoorVersionEntry {
  readonly model: string;
  /** The version's label (its number, as answers carry it). */
  readonly version: string;
  /** The model's tenant: a caller that may not see it is forwarded (and refused there). */
  readonly tenant: string;
  /** The version's config (ModelConfig, binary): the door rebuilds the signature and the batching options from it. */
  readonly config: Uint8Array;
  readonly batcher: SharedBatcher;
  /** Set for a version on the native executor: the embedding-id bounds its requests are checked against. */
  readonly native: { readonly indexBounds: readonly IndexBound[] } | undefined;
  /** The version's SharedGate buffer. */
  readonly gate: SharedArrayBuffer;
  readonly statistics: SharedInferenceStatistics;
  /** undefined: the server keeps no metrics (tests). */
  readonly metrics: SharedVersionMetrics | undefined;
}

export interface DoorCatalog {
  /** Increases with every catalog the main thread builds. */
  readonly generation: number;
  readonly versions: readonly DoorVersionEntry[];
  /** Model name → the label of the version a version-less request gets, when a listed one. */
  readonly latest: Readonly<Record<string, string>>;
  /** Loaded versions not listed, and why (logs and tests). */
  readonly forwarded: readonly { readonly model: string; readonly version: string; readonly reason: string }[];
}

/** What the builder reads of the server. */
export interface DoorCatalogSources {
  /** Every loaded version. */
  readonly versions: () => readonly ModelVersion[];
  /** The version a version-less request of `model` gets now; undefined when none serves. */
  readonly latest: (model: string) => ModelVersion | undefined;
  /** Whether the version's request path is the run alone (no cache, drift or archive step). */
  readonly runOnly: (version: ModelVersion) => boolean;
  /** The routes' names (none without a routes file). */
  readonly routeNames: () => readonly string[];
  readonly faultInjection: boolean;
  /** Front-door threads (each version's gate has a count per thread). */
  readonly doors: number;
  /** Each listed version's gate, as it is listed (the owner keeps them to forget a dead door in every one). */
  readonly keepGate: (gate: SharedGate) => void;
  /** The version's statistics as a door thread attaches to them. */
  readonly shareStatistics: (version: ModelVersion) => SharedInferenceStatistics;
  /** The version's bound metrics as a door thread attaches to them; undefined without metrics. */
  readonly shareMetrics: (version: ModelVersion) => SharedVersionMetrics | undefined;
}

export function buildDoorCatalog(sources: DoorCatalogSources, generation: number): DoorCatalog {
  const versions: DoorVersionEntry[] = [];
  const forwarded: { model: string; version: string; reason: string }[] = [];
  const routes = new Set(sources.routeNames());
  const listed = new Set<ModelVersion>();
  for (const version of sources.versions()) {
    if (version.state !== 'READY') continue;
    const reason = whyNotListed(version, sources, routes);
    if (reason !== undefined) {
      forwarded.push({ model: version.modelName, version: version.versionLabel, reason });
      continue;
    }
    // Checked READY above, so the gate opens (and pins the version's memory while listed).
    const gate = version.doorGate(sources.doors);
    const batcher = batcherOf(version);
    if (gate === undefined || batcher === undefined) continue;
    listed.add(version);
    sources.keepGate(gate);
    versions.push({
      model: version.modelName,
      version: version.versionLabel,
      tenant: version.tenant,
      config: toBinary(ModelConfigSchema, version.config),
      batcher: batcher.share(),
      native: version.native === undefined ? undefined : { indexBounds: version.native.indexBounds },
      gate: gate.buffer,
      statistics: sources.shareStatistics(version),
      metrics: sources.shareMetrics(version),
    });
  }
  const latest: Record<string, string> = {};
  for (const model of new Set(versions.map((entry) => entry.model))) {
    const newest = sources.latest(model);
    if (newest !== undefined && listed.has(newest)) latest[model] = newest.versionLabel;
  }
  return { generation, versions, latest, forwarded };
}

/** Why a READY version is not served by the door threads; undefined when it is. */
function whyNotListed(version: ModelVersion, sources: DoorCatalogSources, routes: ReadonlySet<string>): string | undefined {
  if (sources.faultInjection && Object.keys(version.config.parameters).some((key) => key.startsWith(FAULT_PARAMETER_PREFIX))) {
    return 'its config asks for test-only faults (hotpath_fault_* parameters)';
  }
  if (routes.has(version.modelName)) return 'a route has its name';
  // Answers leave in arrival order, counted by one batcher-wide sequence: each thread's ResponseOrder would
  // wait for turns another thread took (version-batcher.ts). One thread keeps the order.
  const scheduling = version.config.schedulingChoice;
  if (scheduling.case === 'dynamicBatching' && scheduling.value.preserveOrdering) return 'it preserves ordering (dynamic_batching.preserve_ordering)';
  if (batcherOf(version) === undefined) return 'it has no batcher (BYTES tensors, or no native worker target)';
  if (version.native !== undefined) {
    if (!version.native.active) return 'it runs on onnxruntime on CPU after a device fault: its batches run through the main thread';
  } else if (version.workerTarget === undefined) {
    return 'its batches run through the main thread (no native worker target)';
  }
  if (!sources.runOnly(version)) return 'its path has a response cache, drift or archive step';
  return undefined;
}
