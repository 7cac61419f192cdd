/**
 * One model version's native executor, and where the version runs now:
 *
 *   native ──transient device error──▶ cpu (probing) ──probe succeeds──▶ native
 *      │                                   │
 *      └──────sticky error / device lost───┴──▶ cpu (for good; executor closed)
 *
 * On the native side, sealed batches go from the batcher thread straight to
 * the executor (the version's batcher targets it); warm-up, golden checks and
 * direct runs go through `runTask`. A device error during any of them moves
 * the version to onnxruntime on CPU (`onMove`): the version then starts and
 * warms its CPU pool on demand and re-runs the failed work there from its host
 * copy, so no request fails. After a transient error a background probe runs
 * the executor on a zero batch every `probeIntervalMs` and moves the version
 * back once it succeeds; a sticky error (or another model's, through
 * DeviceHealth) closes the executor and releases its device memory.
 *
 * Main thread only.
 */
import type { Logger } from 'pino';
import { Arena } from '../native/arena.js';
import { ExecutorRunError, type Executor } from '../native/executor.js';
import type { DeviceFallbackReason } from '../observability/metric-names.js';
import type { ModelSignature, TensorSpec } from '../tensor/model-signature.js';
import { elementCount } from '../tensor/shape.js';
import { copyToTypedArray, typedArrayBytes, wireTypeInfo } from '../tensor/wire-types.js';
import {
  epochMs,
  isArenaPayload,
  type InferResult,
  type InferTask,
  type TensorPayload,
} from '../workers/worker-protocol.js';
import type { DeviceHealth } from './device-health.js';

/** What /healthz shows for a version: where its batches run now. */
export type ExecutorKind = 'native-cuda' | 'native-host' | 'onnxruntime';

export type NativeState = 'native' | 'cpu-probing' | 'cpu-device-lost';

/** A graph input used directly as Gather ids: valid ids are in [-axisLength, axisLength). */
export interface IndexBound {
  readonly input: string;
  readonly axisLength: number;
}

/**
 * Refuses ids outside an embedding table before they join a batch, so one
 * bad request cannot fail the requests batched with it. `inputs` are the
 * request's inputs by name (little-endian INT64 or INT32 bytes). Returns
 * the problem, or undefined when every id is in range. A pure function: the
 * front-door threads check with the bounds the main thread posts them.
 */
export function indexBoundsProblem(
  bounds: readonly IndexBound[],
  inputs: ReadonlyMap<string, { readonly bytes: Uint8Array; readonly datatype: string }>,
): string | undefined {
  for (const bound of bounds) {
    const input = inputs.get(bound.input);
    if (input === undefined) continue;
    const view = new DataView(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength);
    const wide = input.datatype === 'INT64';
    const count = input.bytes.byteLength / (wide ? 8 : 4);
    for (let i = 0; i < count; i++) {
      const id = wide ? Number(view.getBigInt64(i * 8, true)) : view.getInt32(i * 4, true);
      if (id < -bound.axisLength || id >= bound.axisLength) {
        return `input '${bound.input}': element ${i} is ${id}, expected an id in [${-bound.axisLength}, ${bound.axisLength}) (the embedding table has ${bound.axisLength} rows)`;
      }
    }
  }
  return undefined;
}

/** A run failed because of the device: the version has moved to CPU; re-run the work there. */
export class DeviceFaultError extends Error {
  override readonly name = 'DeviceFaultError';
  constructor(
    message: string,
    readonly fault: 'transient' | 'sticky',
  ) {
    super(message);
  }
}

export interface VersionExecutorOptions {
  readonly executor: Executor;
  /** The version's request signature (config tensors in model order, max_batch_size). */
  readonly signature: ModelSignature;
  readonly deviceHealth: DeviceHealth;
  readonly probeIntervalMs: number;
  /** The arena request inputs live in, to read arena-placed task inputs. */
  readonly hostArenaName: string;
  /** Graph inputs used directly as Gather ids: valid ids are in [-axisLength, axisLength). */
  readonly indexBounds: readonly IndexBound[];
  /** The version moved to CPU (`to: 'cpu'`) or back to the executor. */
  readonly onMove: (to: 'cpu' | 'native', reason: DeviceFallbackReason | 'recovered', detail: string) => void;
  /** Called once the executor is closed for good (device lost): its device memory may go. */
  readonly onClosed: () => void;
  readonly logger: Logger;
}

export class VersionExecutor {
  private stateValue: NativeState = 'native';
  private reasonValue = '';
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: VersionExecutorOptions) {
    this.unsubscribe = options.deviceHealth.onLost((reason) => this.fallBack('sticky', `device lost: ${reason}`));
  }

  get executor(): Executor {
    return this.options.executor;
  }

  get state(): NativeState {
    return this.stateValue;
  }

  /** True while batches run on the executor. */
  get active(): boolean {
    return this.stateValue === 'native';
  }

  /** The executor's own kind; 'onnxruntime' once the version runs on CPU. */
  get kind(): ExecutorKind {
    if (!this.active) return 'onnxruntime';
    return this.options.executor.deviceKind === 'cuda' ? 'native-cuda' : 'native-host';
  }

  /** Why the version is not on the executor ('' while it is). */
  get reason(): string {
    return this.reasonValue;
  }

  /** The request's embedding ids against this version's tables (indexBoundsProblem). */
  checkIndices(inputs: ReadonlyMap<string, { readonly bytes: Uint8Array; readonly datatype: string }>): string | undefined {
    return indexBoundsProblem(this.options.indexBounds, inputs);
  }

  /** Graph inputs used directly as Gather ids, with their tables' row counts (what checkIndices checks). */
  get indexBounds(): readonly IndexBound[] {
    return this.options.indexBounds;
  }

  /** Runs one task (warm-up, golden check, a direct request) on the executor. Throws DeviceFaultError after moving to CPU. */
  async runTask(task: InferTask): Promise<InferResult> {
    const queuedNs = Math.max(0, (epochMs() - task.queuedAtMs) * 1e6);
    const { bytes, rows } = this.taskInputs(task);
    let result;
    try {
      result = await this.options.executor.run(bytes, rows);
    } catch (err) {
      if (err instanceof ExecutorRunError && err.fault !== 'none') {
        this.fallBack(err.fault, err.message);
        throw new DeviceFaultError(err.message, err.fault);
      }
      throw err;
    }
    const byName = new Map(result.outputs.map((output) => [output.name, output]));
    const outputs: TensorPayload[] = task.outputNames.map((name) => {
      const output = byName.get(name);
      const spec = this.options.signature.outputsByName.get(name);
      if (output === undefined || spec === undefined) throw new Error(`the executor produced no output named '${name}'`);
      if (spec.ortType === 'string') throw new Error(`output '${name}' is BYTES, which the executor never produces`);
      return { name, type: spec.ortType, dims: output.dims, data: copyToTypedArray(spec.datatype, output.bytes) };
    });
    return {
      outputs,
      timing: {
        queueNs: queuedNs,
        computeInputNs: result.timing.inputNs,
        computeInferNs: result.timing.computeNs,
        computeOutputNs: result.timing.outputNs,
      },
    };
  }

  /**
   * A device error (from a batch, a run or the device-lost signal): move to
   * CPU. Transient: start probing. Sticky: the device is lost for the whole
   * process, the executor closes. Idempotent per state.
   */
  fallBack(fault: 'transient' | 'sticky', detail: string): void {
    if (this.closed || this.stateValue === 'cpu-device-lost') return;
    const wasNative = this.stateValue === 'native';
    if (fault === 'sticky') {
      this.stateValue = 'cpu-device-lost';
      this.reasonValue = `on onnxruntime (CPU) for good: the device was lost (${detail})`;
      this.stopProbe();
      this.options.logger.error({ fault, error: detail }, 'device lost: the model moves to onnxruntime on CPU for the rest of the process');
      if (wasNative) this.options.onMove('cpu', 'device_lost', detail);
      // Every other executor model follows, and readiness turns degraded.
      this.options.deviceHealth.markLost(detail);
      void this.options.executor.close().finally(() => this.options.onClosed());
      return;
    }
    if (!wasNative) return;
    this.stateValue = 'cpu-probing';
    this.reasonValue = `on onnxruntime (CPU) after a device error; probing the device every ${this.options.probeIntervalMs} ms (${detail})`;
    this.options.logger.warn({ fault, error: detail }, 'device error: the model moves to onnxruntime on CPU until a probe succeeds');
    this.options.onMove('cpu', 'device_error', detail);
    this.startProbe();
  }

  /** Test hook (fault injection): the executor's next batch fails with a simulated device error. */
  injectFault(fault: 'transient' | 'sticky'): void {
    this.options.executor.injectFault(fault);
  }

  /** Unload: stops probing and closes the executor (its device memory goes with the version's owner). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    this.stopProbe();
    await this.options.executor.close();
  }

  private startProbe(): void {
    this.stopProbe();
    this.probeTimer = setInterval(() => void this.probe(), this.options.probeIntervalMs);
    this.probeTimer.unref();
  }

  private stopProbe(): void {
    if (this.probeTimer !== undefined) clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }

  /** One zero batch on the executor; success moves the version back. */
  private async probe(): Promise<void> {
    if (this.probing || this.stateValue !== 'cpu-probing' || this.closed) return;
    this.probing = true;
    try {
      const rows = 1;
      const inputs = this.options.signature.inputs.map((spec) => new Uint8Array(rowBytes(spec) * rows));
      await this.options.executor.run(inputs, rows);
      if (this.stateValue !== 'cpu-probing' || this.closed) return;
      this.stateValue = 'native';
      this.reasonValue = '';
      this.stopProbe();
      this.options.logger.info('device probe succeeded: the model moves back to the native executor');
      this.options.onMove('native', 'recovered', 'probe succeeded');
    } catch (err) {
      // Still failing: keep probing (a sticky failure arrives through fallBack).
      if (err instanceof ExecutorRunError && err.fault === 'sticky') this.fallBack('sticky', err.message);
      else this.options.logger.debug({ error: err instanceof Error ? err.message : String(err) }, 'device probe failed');
    } finally {
      this.probing = false;
    }
  }

  /** The task's inputs as bytes in the executor's (model) order, and its row count. */
  private taskInputs(task: InferTask): { bytes: Uint8Array[]; rows: number } {
    let rows = 1;
    const bytes = this.options.signature.inputs.map((spec, index) => {
      const payload = task.inputs.find((input) => input.name === spec.name);
      if (payload === undefined) throw new Error(`task has no input '${spec.name}'`);
      if (index === 0 && this.options.signature.maxBatchSize > 0) rows = payload.dims[0] ?? 1;
      if (isArenaPayload(payload)) {
        // Arena-placed inputs (a direct request): read them through this thread's mapping.
        const block = Arena.attach(this.options.hostArenaName).adopt(payload.arenaBlock);
        try {
          return new Uint8Array(block.view(), 0, payload.byteLength).slice();
        } finally {
          block.release();
        }
      }
      const data = payload.data;
      return data instanceof Uint8Array ? data : typedArrayBytes(data);
    });
    return { bytes, rows };
  }
}

/** Bytes of one row of `spec` as the model sees it, variable dimensions taken as 1 (the probe's zero batch). */
function rowBytes(spec: TensorSpec): number {
  return elementCount((spec.reshape ?? spec.dims).map((dim) => Math.max(dim, 1))) * wireTypeInfo(spec.datatype).size;
}
