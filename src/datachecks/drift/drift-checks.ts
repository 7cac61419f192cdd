/**
 * Drift checks of the models that turn them on (drift-settings.ts).
 *
 * The request path calls the version's tap (`tapFor`, built once per version
 * by its plan): a sampling decision and a push of the request and answer, by
 * reference, to a bounded queue. A later turn of the
 * event loop decodes them and copies the numeric columns into each version's
 * ring (the last `windowRows` rows, and with a time window only those recorded
 * in the last `windowSeconds`). A timer per version (unref'd) copies the
 * ring's columns and sends them to one compute thread (worker_threads), which
 * computes PSI and KS against the reference; the answer sets the gauges, the
 * state (0 ok, 1 watch, 2 act, from the largest PSI), a log line when the
 * state changes and, with action 'degrade', the version's degraded mark.
 *
 * The reference is `drift/reference.json` in the model directory, read when a
 * version's first request is recorded; with none and `hotpath_drift_capture:
 * N`, the first N rows recorded become it (kept in memory, not written).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { ModelInferRequest, ModelInferResponse } from '../../generated/grpc_service_pb.js';
import type { ConfigParameters } from '../archive/sample-rate.js';
import { decodeAnswer, decodeInputs, numericValues } from '../archive/tensor-values.js';
import { readReference, ReferenceBuilder, tableShape, type DriftReference, type TensorKind } from './drift-reference.js';
import { driftSettings, type DriftSettings } from './drift-settings.js';
import type { ComputeJob, ComputeResult } from './drift-protocol.js';

/** What drift needs of a served version. */
export interface DriftVersion {
  readonly modelName: string;
  readonly versionLabel: string;
  readonly config: { readonly parameters: ConfigParameters };
}

export type DriftState = 0 | 1 | 2;
export const DRIFT_STATE_NAMES = ['ok', 'watch', 'act'] as const;

export interface FeatureDrift {
  readonly tensor: string;
  readonly kind: TensorKind;
  readonly feature: number;
  readonly psi: number;
  readonly ks: number;
  readonly rows: number;
}

/** GET /v2/models/{m}/drift, per version. */
export interface VersionDriftReport {
  readonly version: string;
  readonly reference: { readonly source: string; readonly rows: number; readonly created: string } | null;
  readonly capturing?: { readonly rows: number; readonly of: number };
  readonly window_rows: number;
  readonly state: (typeof DRIFT_STATE_NAMES)[number] | null;
  readonly thresholds: { readonly watch: number; readonly act: number };
  readonly action: string;
  readonly checked_at: string | null;
  readonly features: readonly FeatureDrift[];
}

/** Requests queued before decoding; past this, samples are dropped (drift is a sample anyway). */
const QUEUE_LIMIT = 256;
const DECODE_SLICE = 32;

/**
 * A tensor's rows, newest last: a ring of `capacity` rows of `columns` values,
 * each row stamped with when it was recorded, so a time window
 * (hotpath_drift_window_s) can leave out rows older than it.
 */
class ColumnRing {
  private readonly values: Float64Array;
  private readonly times: Float64Array;
  private next = 0;
  private filled = 0;

  constructor(readonly kind: TensorKind, readonly name: string, readonly columns: number, private readonly capacity: number) {
    this.values = new Float64Array(columns * capacity);
    this.times = new Float64Array(capacity);
  }

  /** Rows in the window: those recorded at or after `sinceMs` (all of them for -Infinity). */
  rows(sinceMs: number): number {
    if (sinceMs === -Infinity) return this.filled;
    let count = 0;
    for (let row = 0; row < this.filled; row += 1) if (this.times[row]! >= sinceMs) count += 1;
    return count;
  }

  push(data: ArrayLike<number>, rows: number, stride: number, nowMs: number): void {
    for (let row = 0; row < rows; row += 1) {
      const at = this.next * this.columns;
      for (let column = 0; column < this.columns; column += 1) this.values[at + column] = data[row * stride + column]!;
      this.times[this.next] = nowMs;
      this.next = (this.next + 1) % this.capacity;
      this.filled = Math.min(this.filled + 1, this.capacity);
    }
  }

  /** A copy of one column's rows recorded at or after `sinceMs`. */
  column(index: number, sinceMs: number): Float64Array {
    const out = new Float64Array(this.rows(sinceMs));
    let at = 0;
    for (let row = 0; row < this.filled; row += 1) {
      if (this.times[row]! >= sinceMs) out[at++] = this.values[row * this.columns + index]!;
    }
    return out;
  }
}

class VersionDrift {
  reference: DriftReference | null | undefined;
  capture: ReferenceBuilder | undefined;
  readonly rings = new Map<string, ColumnRing>();
  state: DriftState | undefined;
  features: FeatureDrift[] = [];
  checkedAt: Date | undefined;
  timer: NodeJS.Timeout | undefined;
  computing = false;

  constructor(readonly version: DriftVersion, readonly settings: DriftSettings) {}

  /** The oldest time a row may have to be in the window: -Infinity without a time window. */
  windowStart(nowMs: number): number {
    return this.settings.windowSeconds > 0 ? nowMs - this.settings.windowSeconds * 1000 : -Infinity;
  }

  windowRows(nowMs: number): number {
    const since = this.windowStart(nowMs);
    let rows = 0;
    for (const ring of this.rings.values()) rows = Math.max(rows, ring.rows(since));
    return rows;
  }
}

export interface DriftChecksOptions {
  readonly logger: Logger;
  /** The model's directory (where drift/reference.json lives). */
  readonly modelDir: (model: string) => string;
  /** A version's degraded mark changed (action 'degrade'): health reports read `degradedReason`. */
  readonly onDegradedChange?: () => void;
  /**
   * Whether `version` still serves; one that does not (unloaded, replaced by
   * a reload) is forgotten at its next tick, and its series go. Default: always.
   */
  readonly isServing?: (version: DriftVersion) => boolean;
  /** Epoch ms, for the time window (tests pass their own). Default: Date.now. */
  readonly now?: () => number;
}

export class DriftChecks {
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly versions = new Map<string, VersionDrift>();
  private queue: { version: DriftVersion; request: ModelInferRequest; response: ModelInferResponse }[] = [];
  private drainScheduled = false;
  private worker: Worker | undefined;
  private jobs = new Map<number, (result: ComputeResult | undefined) => void>();
  private nextJob = 1;
  private closed = false;

  constructor(private readonly options: DriftChecksOptions) {
    this.log = options.logger.child({ component: 'drift' });
    this.now = options.now ?? Date.now;
  }

  /**
   * What the request path calls with each answered request of `version`, its
   * drift settings read once (a config problem is logged once, here);
   * undefined when the version has no drift checks, so the path leaves the
   * tap out. The tap never throws and never blocks.
   */
  tapFor(version: DriftVersion): ((request: ModelInferRequest, response: ModelInferResponse) => void) | undefined {
    const settings = driftSettings(version.config.parameters, (problem) =>
      this.log.warn({ model: version.modelName, version: version.versionLabel }, problem),
    );
    if (settings === undefined) return undefined;
    return (request, response) => {
      if (this.closed || Math.random() >= settings.sampleRate || this.queue.length >= QUEUE_LIMIT) return;
      this.queue.push({ version, request, response });
      if (!this.drainScheduled) {
        this.drainScheduled = true;
        setImmediate(() => this.drain());
      }
    };
  }

  private drain(): void {
    this.drainScheduled = false;
    const batch = this.queue.splice(0, DECODE_SLICE);
    for (const { version, request, response } of batch) {
      try {
        this.take(version, request, response);
      } catch (err) {
        this.log.warn({ model: version.modelName, err }, 'drift: a sampled request could not be read');
      }
    }
    if (this.queue.length > 0) {
      this.drainScheduled = true;
      setImmediate(() => this.drain());
    }
  }

  private entry(version: DriftVersion): VersionDrift {
    const key = `${version.modelName}\u0000${version.versionLabel}`;
    let entry = this.versions.get(key);
    if (entry !== undefined && entry.version === version) return entry;
    if (entry !== undefined) clearInterval(entry.timer);
    // A (re)loaded version starts over: its config, reference and window may all be new.
    entry = new VersionDrift(version, driftSettings(version.config.parameters, () => {})!);
    this.versions.set(key, entry);
    const created = entry;
    // Capturing starts at once (the first rows served are the point); a reference file, once read, wins over it.
    if (created.settings.captureRows > 0) created.capture = new ReferenceBuilder(created.settings.maxFeatures);
    void readReference(this.options.modelDir(version.modelName)).then(
      (reference) => {
        if (reference !== undefined) created.capture = undefined;
        created.reference = reference ?? created.reference ?? null;
        this.log.info(
          { model: version.modelName, version: version.versionLabel, reference: reference?.source ?? null, capture: created.capture ? created.settings.captureRows : undefined },
          reference === undefined ? 'drift on, no reference yet' : 'drift on',
        );
      },
      (err: Error) => {
        created.reference = null;
        this.log.warn({ model: version.modelName, version: version.versionLabel }, `drift: no usable reference: ${err.message}`);
      },
    );
    created.timer = setInterval(() => void this.tick(key, created), created.settings.intervalMs);
    created.timer.unref();
    return created;
  }

  private take(version: DriftVersion, request: ModelInferRequest, response: ModelInferResponse): void {
    const entry = this.entry(version);
    const tensors: [TensorKind, string, readonly (number | bigint)[], ArrayLike<number>][] = [];
    for (const [kind, decoded] of [['input', decodeInputs(request)], ['output', decodeAnswer(response)]] as const) {
      for (const [name, tensor] of Object.entries(decoded)) {
        const values = numericValues(tensor);
        if (values !== undefined) tensors.push([kind, name, tensor.shape, values]);
      }
    }
    if (entry.capture !== undefined) {
      tensors.forEach(([kind, name, shape, values], i) => entry.capture!.add(kind, name, shape, values, i === 0));
      if (entry.capture.rows >= entry.settings.captureRows) {
        entry.reference = entry.capture.build('capture');
        entry.capture = undefined;
        this.log.info({ model: version.modelName, version: version.versionLabel, rows: entry.reference.rows }, 'drift: reference captured');
      }
      return;
    }
    for (const [kind, name, shape, values] of tensors) {
      const table = tableShape(shape);
      if (table === undefined || table.rows * table.columns !== values.length) continue;
      const key = `${kind}\u0000${name}`;
      let ring = entry.rings.get(key);
      if (ring === undefined) {
        ring = new ColumnRing(kind, name, Math.min(table.columns, entry.settings.maxFeatures), entry.settings.windowRows);
        entry.rings.set(key, ring);
      }
      if (table.columns < ring.columns) continue;
      ring.push(values, table.rows, table.columns, this.now());
    }
  }

  private tick(key: string, entry: VersionDrift): void {
    if (this.options.isServing?.(entry.version) === false) {
      clearInterval(entry.timer);
      if (this.versions.get(key) === entry) this.versions.delete(key);
      if (entry.state === 2 && entry.settings.action === 'degrade') this.options.onDegradedChange?.();
      return;
    }
    void this.check(entry);
  }

  /** Computes the version's PSI and KS on the compute thread (at most one check at a time per version). */
  private async check(entry: VersionDrift): Promise<void> {
    const reference = entry.reference;
    const now = this.now();
    if (this.closed || entry.computing || !reference || entry.windowRows(now) < entry.settings.minRows) return;
    const since = entry.windowStart(now);
    const wanted: { tensor: string; kind: TensorKind; feature: number; job: ComputeJob['features'][number] }[] = [];
    for (const tensor of reference.tensors) {
      const ring = entry.rings.get(`${tensor.kind}\u0000${tensor.name}`);
      if (ring === undefined) continue;
      for (const feature of tensor.features) {
        if (feature.index >= ring.columns) continue;
        wanted.push({ tensor: tensor.name, kind: tensor.kind, feature: feature.index, job: { reference: feature, values: ring.column(feature.index, since) } });
      }
    }
    if (wanted.length === 0) return;
    entry.computing = true;
    try {
      const result = await this.compute(wanted.map((w) => w.job));
      if (result === undefined) return;
      entry.features = wanted.map((w, i) => ({ tensor: w.tensor, kind: w.kind, feature: w.feature, psi: result.results[i]!.psi, ks: result.results[i]!.ks, rows: result.results[i]!.count }));
      entry.checkedAt = new Date();
      const worst = entry.features.reduce((max, f) => Math.max(max, f.psi), 0);
      const state: DriftState = worst >= entry.settings.act ? 2 : worst >= entry.settings.watch ? 1 : 0;
      if (state !== entry.state) {
        const previous = entry.state;
        entry.state = state;
        const top = entry.features.reduce((a, b) => (b.psi > a.psi ? b : a));
        const fields = {
          model: entry.version.modelName,
          version: entry.version.versionLabel,
          state: DRIFT_STATE_NAMES[state],
          previous: previous === undefined ? null : DRIFT_STATE_NAMES[previous],
          max_psi: Number(worst.toFixed(4)),
          tensor: top.tensor,
          feature: top.feature,
        };
        if (state === 2) this.log.warn(fields, `drift state: act${entry.settings.action === 'degrade' ? ' (model marked degraded)' : ''}`);
        else this.log.info(fields, `drift state: ${DRIFT_STATE_NAMES[state]}`);
        if (entry.settings.action === 'degrade' && (state === 2 || previous === 2)) this.options.onDegradedChange?.();
      }
    } finally {
      entry.computing = false;
    }
  }

  private compute(features: ComputeJob['features']): Promise<ComputeResult | undefined> {
    const worker = this.computeThread();
    const job = this.nextJob++;
    return new Promise((resolve) => {
      this.jobs.set(job, resolve);
      const message: ComputeJob = { job, features };
      worker.postMessage(message, features.map((f) => f.values.buffer as ArrayBuffer));
    });
  }

  private computeThread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(computeModulePath(), { name: 'hotpath-drift', execArgv: [] });
    worker.unref();
    worker.on('message', (result: ComputeResult) => {
      this.jobs.get(result.job)?.(result);
      this.jobs.delete(result.job);
    });
    const lost = (why: string) => {
      if (!this.closed) this.log.error(`drift: the compute thread ${why}; it restarts on the next check`);
      if (this.worker === worker) this.worker = undefined;
      for (const resolve of this.jobs.values()) resolve(undefined);
      this.jobs.clear();
    };
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', () => lost('exited'));
    this.worker = worker;
    return worker;
  }

  /** Versions at 'act' whose action is 'degrade': a reason for /healthz; undefined when none. */
  degradedReason(): string | undefined {
    const marked = [...this.versions.values()].filter((e) => e.state === 2 && e.settings.action === 'degrade');
    if (marked.length === 0) return undefined;
    return `input drift at 'act': ${marked.map((e) => `${e.version.modelName} version ${e.version.versionLabel}`).join(', ')}`;
  }

  /** Whether this version is marked degraded by drift. */
  isDegraded(model: string, version: string): boolean {
    const entry = this.versions.get(`${model}\u0000${version}`);
    return entry?.state === 2 && entry.settings.action === 'degrade';
  }

  /** The model's versions that drift follows (those that served a request since load). */
  report(model: string): VersionDriftReport[] {
    return [...this.versions.values()]
      .filter((e) => e.version.modelName === model)
      .map((e) => ({
        version: e.version.versionLabel,
        reference: e.reference ? { source: e.reference.source, rows: e.reference.rows, created: e.reference.created } : null,
        ...(e.capture !== undefined ? { capturing: { rows: e.capture.rows, of: e.settings.captureRows } } : {}),
        window_rows: e.windowRows(this.now()),
        state: e.state === undefined ? null : DRIFT_STATE_NAMES[e.state],
        thresholds: { watch: e.settings.watch, act: e.settings.act },
        action: e.settings.action,
        checked_at: e.checkedAt?.toISOString() ?? null,
        features: e.features,
      }));
  }

  /** The gauges' values, read at scrape time. */
  gauges(): { states: { model: string; version: string; state: number }[]; features: (FeatureDrift & { model: string; version: string })[] } {
    const states: { model: string; version: string; state: number }[] = [];
    const features: (FeatureDrift & { model: string; version: string })[] = [];
    for (const e of this.versions.values()) {
      if (e.state === undefined) continue;
      const labels = { model: e.version.modelName, version: e.version.versionLabel };
      states.push({ ...labels, state: e.state });
      for (const f of e.features) features.push({ ...labels, ...f });
    }
    return { states, features };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const e of this.versions.values()) clearInterval(e.timer);
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }
}

/** The compiled compute thread (under vitest, this file is src/*.ts: use the dist/ twin). */
function computeModulePath(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = path.join(path.dirname(here), 'drift-compute-thread.js');
  if (existsSync(sibling)) return sibling;
  const packageRoot = path.resolve(path.dirname(here), '..', '..', '..');
  return path.join(packageRoot, 'dist', 'src', 'datachecks', 'drift', 'drift-compute-thread.js');
}
