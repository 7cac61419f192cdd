// Typed wrapper for native/napi/executor_binding.cc: the native dense-graph
// executor of one model version.
//
//   const plan = planFromOnnx(bytes, { modelName: 'ctr:1', maxBatchSize: 64 });
//   const executor = Executor.create(plan, { arena: 'main', tenant: 'team-a', owner: model.id, instances: 2 });
//   const { outputs } = await executor.run([features], rows);   // warm-up, golden checks, benchmarks
//   batcher.setTarget(executor);                                 // serving: batches go natively
//   await executor.close();
//
// Create compiles the plan natively (op support, shapes, memory plan) and
// uploads the weights once into the arena, charged to the tenant under the
// owner; it throws NativeError (FAILED_PRECONDITION naming the op and node
// for a graph the executor does not run). run() copies the inputs once and
// resolves with the outputs in native memory handed over as ArrayBuffers;
// a failed run rejects with an ExecutorRunError carrying the device fault
// class. The serving path does not use run(): a Batcher with this executor
// as its target hands sealed batches to it without JS.
//
// Ownership: the executor holds its arena blocks until close() (a batcher
// that still targets it keeps the stopped executor, and its memory, until it
// lets go). close() is required: the native side keeps the executor until
// then (or until the environment is torn down).
//
// Thread-safety: an Executor belongs to the JS thread that created it; run
// completions are delivered on that thread. The native executor is thread-safe.
import { nativeAddon, type LoadedAddon } from './loader.js';
import { unwrapNative, NativeError, type CallSite } from './native-error.js';
import {
  executorExports,
  type ExecutorBinding,
  type ExecutorDeviceKind,
  type ExecutorPlan,
  type FaultKind,
  type RawExecutorEvent,
  type RawExecutorInfo,
  type RawExecutorStats,
  type RawIoSpec,
  type RawRunEvent,
  type RawTiming,
} from './executor-binding-types.js';
import { ExecutorRunError } from './executor-errors.js';
import { checkPlan, checkRun, fillExecutorOptions, type ExecutorOptions } from './executor-options.js';

export { ExecutorRunError } from './executor-errors.js';
export type { ExecutorOptions } from './executor-options.js';
export type { ExecutorDeviceKind, ExecutorPlan, FaultKind, PlanAttribute, PlanNode, PlanTensor } from './executor-binding-types.js';

export type ExecutorIo = RawIoSpec;
export type ExecutorTiming = RawTiming;
export type ExecutorStats = RawExecutorStats;

export interface RunOutput {
  readonly name: string;
  /** The batch dimension filled in. */
  readonly dims: number[];
  /** Native memory owned by this array (no copy). */
  readonly bytes: Uint8Array;
}

export interface RunResult {
  /** Model output order. */
  readonly outputs: RunOutput[];
  readonly timing: ExecutorTiming;
}

interface Pending {
  readonly resolve: (result: RunResult) => void;
  readonly reject: (error: Error) => void;
  readonly callSite: CallSite;
}

function bindingOf(addon: LoadedAddon): ExecutorBinding {
  const record = addon.binding as unknown as Record<string, unknown>;
  const missing = executorExports.filter((name) => typeof record[name] !== 'function');
  if (missing.length > 0) {
    throw new Error(`${addon.path} has no executor bindings (${missing.join(', ')}); rebuild it with \`npm run build:native\``);
  }
  return addon.binding as unknown as ExecutorBinding;
}

function withCallSite<T extends Error>(error: T, callSite: CallSite): T {
  if (callSite.stack !== undefined) {
    const frames = callSite.stack.split('\n').slice(1).join('\n');
    error.stack = `${error.name}: ${error.message}\n${frames}`;
  }
  return error;
}

const faultKinds: readonly FaultKind[] = ['none', 'transient', 'sticky'];
/** The one marker an executor queues: behind the events of its close. */
const closeMarker = 1;

export class Executor {
  readonly modelName: string;
  /** This environment's executor id (what Batcher.setTarget hands the native side). */
  readonly id: number;
  readonly inputs: readonly ExecutorIo[];
  readonly outputs: readonly ExecutorIo[];
  /** Kernel set: 'host', 'cuda' or 'cuda+cublas'. */
  readonly kernels: string;
  readonly deviceKind: ExecutorDeviceKind;
  /** Arena bytes of the weights, and of each instance's workspace. */
  readonly weightsBytes: number;
  readonly workspaceBytes: number;
  readonly instances: number;
  /** Kernel calls per batch after fusion. */
  readonly stepCount: number;
  readonly maxBatchSize: number;
  readonly #binding: ExecutorBinding;
  readonly #pending = new Map<number, Pending>();
  #nextRequest = 1;
  #closing: Promise<void> | undefined;
  #onClosed: (() => void) | undefined;
  #final: ExecutorStats | undefined;

  private constructor(binding: ExecutorBinding, plan: ExecutorPlan, options: ExecutorOptions) {
    this.#binding = binding;
    this.modelName = plan.modelName;
    // The handler is this object's; the TSFN holds it until close (so close() is required).
    const info: RawExecutorInfo = unwrapNative(
      binding.executorCreate(plan, fillExecutorOptions(options), (event) => this.#onEvent(event)),
      'Executor.create',
      Executor.create,
    );
    this.id = info.id;
    this.inputs = info.inputs;
    this.outputs = info.outputs;
    this.kernels = info.kernels;
    this.deviceKind = info.deviceKind;
    this.weightsBytes = info.weightsBytes;
    this.workspaceBytes = info.workspaceBytes;
    this.instances = info.instances;
    this.stepCount = info.stepCount;
    this.maxBatchSize = info.maxBatchSize;
  }

  /**
   * Compiles `plan` and allocates the executor's memory. Throws TypeError for
   * bad options and NativeError from the native side: FAILED_PRECONDITION
   * (an unsupported op, naming op and node), INVALID_ARGUMENT (a malformed
   * plan), RESOURCE_EXHAUSTED (the arena), UNAVAILABLE (no CUDA device).
   */
  static create(plan: ExecutorPlan, options: ExecutorOptions, addon: LoadedAddon = nativeAddon()): Executor {
    return new Executor(bindingOf(addon), checkPlan(plan), options);
  }

  /** True once close() was called. */
  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /** True after a sticky device fault (real or injected): every later run fails. */
  get dead(): boolean {
    if (this.#final !== undefined) return this.#final.dead;
    return unwrapNative(this.#binding.executorDead(this.id), 'dead');
  }

  /**
   * Runs one batch of `rows` rows (inputs in model order, exactly their
   * byte sizes; copied before this returns). Rejects with NativeError
   * INVALID_ARGUMENT for inputs that do not match, ExecutorRunError for a
   * failed run (UNAVAILABLE once closed, with fault 'none').
   */
  run(inputs: readonly Uint8Array[], rows: number): Promise<RunResult> {
    const callSite: CallSite = {};
    Error.captureStackTrace(callSite, this.run);
    if (this.#closing !== undefined) {
      return Promise.reject(withCallSite(new NativeError('FAILED_PRECONDITION', 'executor is closed', 'run'), callSite));
    }
    try {
      checkRun(this.modelName, this.maxBatchSize, this.inputs, inputs, rows);
    } catch (error) {
      return Promise.reject(withCallSite(error as Error, callSite));
    }
    const id = this.#nextRequest++;
    const submitted = this.#binding.executorRun(this.id, id, inputs, rows);
    if (!submitted.ok) return Promise.reject(withCallSite(new NativeError(submitted.code, submitted.message, 'run'), callSite));
    return new Promise<RunResult>((resolve, reject) => this.#pending.set(id, { resolve, reject, callSite }));
  }

  /** Test hook: the next run fails as a device error of `fault` ('sticky' also kills the executor); 'none' clears it. */
  injectFault(fault: FaultKind): void {
    if (!faultKinds.includes(fault)) throw new TypeError(`injectFault: fault must be 'none', 'transient' or 'sticky', got ${String(fault)}`);
    unwrapNative(this.#binding.executorInjectFault(this.id, fault), 'injectFault', this.injectFault);
  }

  /** Counters since create (after close: the final ones). */
  stats(): ExecutorStats {
    if (this.#final !== undefined) return this.#final;
    return unwrapNative(this.#binding.executorStats(this.id), 'stats', this.stats);
  }

  /**
   * Stops the executor: runs still queued fail with UNAVAILABLE, running ones
   * finish. Resolves once every run's promise has settled. Idempotent.
   */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    let closed: () => void = () => {};
    this.#closing = new Promise<void>((resolve) => (closed = resolve)).then(() => this.#failPending());
    this.#onClosed = closed;
    try {
      const { queued, stats } = unwrapNative(this.#binding.executorClose(this.id, closeMarker), 'close', this.close);
      this.#final = stats ?? { executions: 0, rows: 0, failures: 0, deviceFaults: 0, queued: 0, computeNs: 0, dead: false };
      if (!queued) closed();
    } catch (error) {
      closed();
      return Promise.reject(error);
    }
    return this.#closing;
  }

  // Runs on this thread for every TSFN event. Must not throw.
  #onEvent(event: RawExecutorEvent): void {
    if (event.type === 'marker') {
      if (event.marker === closeMarker) this.#onClosed?.();
      return;
    }
    this.#settle(event);
  }

  #settle(event: RawRunEvent): void {
    const pending = this.#pending.get(event.requestId);
    if (pending === undefined) return;
    this.#pending.delete(event.requestId);
    if (!event.ok) {
      const code = event.code === 'OK' ? 'INTERNAL' : event.code;
      pending.reject(withCallSite(new ExecutorRunError(code, event.message, event.fault, this.modelName), pending.callSite));
      return;
    }
    pending.resolve({
      outputs: event.outputs.map((output, i) => ({
        name: this.outputs[i]?.name ?? String(i),
        dims: [...output.dims],
        bytes: new Uint8Array(output.data),
      })),
      timing: event.timing,
    });
  }

  // After the close marker every run has settled; this only guards the contract.
  #failPending(): void {
    for (const [id, pending] of [...this.#pending]) {
      this.#pending.delete(id);
      pending.reject(withCallSite(new ExecutorRunError('UNAVAILABLE', `model '${this.modelName}': executor closed`, 'none', this.modelName), pending.callSite));
    }
  }
}
