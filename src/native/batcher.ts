// Typed wrapper for native/napi/batcher_binding.cc: the dynamic batcher of
// one model version.
//
//   const batcher = Batcher.create({
//     arena: 'main', tenant: 'team-a', owner: modelOwner.id, modelName: 'ranker:1',
//     maxBatchSize: 64, preferredBatchSizes: [32, 64], maxQueueDelayUs: 500, instances: workers,
//     inputs: [{ name: 'x', elementBytes: 4, dims: [128] }],
//     onBatch: (batch) => pool.run(batch).finally(() => batcher.instanceIdle()),
//   });
//   const slice = await batcher.enqueue({ rows: 1, inputs: [bytes], dims: [[128]] });
//   ...answer from slice.batch's outputs at slice.rowOffset..+slice.rows...
//   slice.batch.release();        // once every request of the batch is answered
//   await batcher.stop();         // pending requests get SHUTDOWN
//
// Flow: enqueue copies the request's bytes once, natively, into its open
// batch's arena blocks, before it returns (the caller may reuse its arrays).
// The native batcher thread seals batches (Triton's rules) and hands them to
// this thread through a ThreadSafeFunction: each batch goes once to
// `onBatch`, then each of its requests' promises resolves with its slice.
// Requests that are never executed reject with a BatcherRejection.
//
// Ownership of batch memory: a delivered batch holds one arena reference per
// input block until `batch.release()` (idempotent; a FinalizationRegistry
// backstops a forgotten release). Views from `batch.view(i)` are detached on
// release. A worker maps a block with `Arena.attach(name).adopt(blockId)`,
// which takes its own reference: it stays valid after batch.release() until
// the worker releases it. After everything is released the tenant is charged
// nothing. Environment teardown (process or worker exit) stops the batcher
// and frees every batch still held.
//
// Instances: a batch takes one idle instance when sealed; call
// instanceIdle() when its run ends (instanceBusy() takes one for outside work
// such as warm-up). With every instance busy, batches keep growing.
//
// Targets: `setTarget(executor)` makes the batcher thread hand sealed
// batches straight to a native executor (no JS hop); each comes back once,
// run, through `onExecuted(batch, result)` and then its requests' promises
// (slice.executed). The instance is given back natively, and the batch
// (inputs and outputs) is released like any other. `setTarget(undefined)`
// sends batches to onBatch again; batches sealed after a switch go the new
// way.
//
// Threads: the native batcher is process-wide. A Batcher object belongs to
// the JS thread that made it, and events for its requests are delivered on
// that thread. `batcher.share()` gives plain data to post to a worker
// thread, where `Batcher.attach(shared)` makes that thread's own handle: it
// enqueues into the same batcher (its requests may share a batch with the
// creator's and other threads'), and the answers to its requests come
// straight to it, natively, never through the creating thread. Only the
// creating thread sets targets, runs plain batches (onBatch; a batch with
// no native target answers other threads' requests with SHUTDOWN) and
// stops the batcher, which fails every thread's pending requests with
// SHUTDOWN; an attached handle's stop() only lets go of its handle.
import { invalid } from './arena-options.js';
import type { Executor } from './executor.js';
import type { WorkerPoolTarget } from './worker-channel.js';
import { nativeAddon, type LoadedAddon } from './loader.js';
import { NativeError, unwrapNative, type CallSite } from './native-error.js';
import {
  batcherExports,
  type BatcherBinding,
  type EnqueueResult,
  type RawBatchEvent,
  type RawBatcherEvent,
  type RawExecutedEvent,
  type RawRejectedRequest,
} from './batcher-binding-types.js';
import { BatcherRejection, rejectionCodes } from './batcher-errors.js';
import {
  checkEnqueue,
  deadlineMicroseconds,
  fillBatcherOptions,
  variableDimsOf,
  type CheckedRequest,
  type FilledBatcherOptions,
} from './batcher-options.js';
import type {
  BatchedRequest,
  BatcherOptions,
  BatcherStats,
  BatchInput,
  EnqueueRequest,
  ExecutedResult,
  SealedBatch,
  SealedSlice,
  ValidatedEnqueue,
} from './batcher-types.js';

export { BatcherRejection, rejectionCodes, type RejectionReason } from './batcher-errors.js';
export type * from './batcher-types.js';

/** What a held batch needs to be released; shared with the backstop, never references the batch. */
interface BatchRelease {
  readonly binding: BatcherBinding;
  readonly batcher: number;
  readonly batchId: number;
  released: boolean;
  views: ArrayBuffer[];
}

function releaseBatch(state: BatchRelease): void {
  if (state.released) return;
  state.released = true;
  for (const view of state.views) state.binding.arenaDetachView(view);
  state.views = [];
  state.binding.batcherReleaseBatch(state.batcher, state.batchId);
}

const backstop = new FinalizationRegistry<BatchRelease>(releaseBatch);

class Batch implements SealedBatch {
  readonly batchId: number;
  readonly rows: number;
  readonly requests: readonly BatchedRequest[];
  readonly inputs: readonly BatchInput[];
  // Private fields: invisible to structured clone, so a batch can be posted as plain data.
  readonly #state: BatchRelease;

  constructor(binding: BatcherBinding, batcher: number, raw: Omit<RawBatchEvent, 'type'>, names: readonly string[]) {
    this.batchId = raw.batchId;
    this.rows = raw.rows;
    this.requests = raw.requests.map(({ rowOffset, rows, queueNs, sequence, priorityLevel }) => ({ rowOffset, rows, queueNs, sequence, priorityLevel }));
    this.inputs = raw.inputs.map(({ blockId, bytes, shape }, i) => ({ name: names[i] ?? String(i), blockId, bytes, shape }));
    this.#state = { binding, batcher, batchId: raw.batchId, released: false, views: [] };
    backstop.register(this, this.#state, this);
  }

  get released(): boolean {
    return this.#state.released;
  }

  /** `input` past the inputs maps an executed batch's outputs (see ExecutedOutput.view). */
  view(input: number): Uint8Array {
    if (this.#state.released) throw new NativeError('FAILED_PRECONDITION', `batch ${this.batchId} was released`, 'view');
    const buffer = unwrapNative(this.#state.binding.batcherView(this.#state.batcher, this.batchId, input), 'view', this.view);
    this.#state.views.push(buffer);
    return new Uint8Array(buffer);
  }

  /** Indices as view's: a copy of those bytes of the block, V8's own (see ExecutedOutput.copy). */
  copyOut(index: number, byteOffset: number, byteLength: number): Uint8Array {
    if (this.#state.released) throw new NativeError('FAILED_PRECONDITION', `batch ${this.batchId} was released`, 'copy');
    const state = this.#state;
    return new Uint8Array(unwrapNative(state.binding.batcherCopyOut(state.batcher, this.batchId, index, byteOffset, byteLength), 'copy', this.copyOut));
  }

  release(): void {
    if (this.#state.released) return;
    backstop.unregister(this);
    releaseBatch(this.#state);
  }
}

/**
 * A batcher as another thread attaches to it (Batcher.attach): plain data,
 * posted to a worker with postMessage.
 */
export interface SharedBatcher {
  readonly id: number;
  readonly options: Omit<FilledBatcherOptions, 'onBatch'>;
  /** The output names of the creator's target when shared (executed results name their outputs by them). */
  readonly outputNames: readonly string[] | undefined;
}

interface Pending {
  readonly resolve: (slice: SealedSlice) => void;
  readonly reject: (error: Error) => void;
}

function bindingOf(addon: LoadedAddon): BatcherBinding {
  const record = addon.binding as unknown as Record<string, unknown>;
  const missing = batcherExports.filter((name) => typeof record[name] !== 'function');
  if (missing.length > 0) {
    throw new Error(`${addon.path} has no batcher bindings (${missing.join(', ')}); rebuild it with \`npm run build:native\``);
  }
  return addon.binding as unknown as BatcherBinding;
}

/** The stack of the user's call into `boundary` (a wrapper method). */
function callSiteOf(boundary: (...args: never[]) => unknown): CallSite {
  const callSite: CallSite = {};
  Error.captureStackTrace(callSite, boundary);
  return callSite;
}

/** Gives `error` the stack of the user's call into the wrapper, when there is one. */
function withCallSite<T extends Error>(error: T, callSite: CallSite | undefined): T {
  if (callSite?.stack !== undefined) {
    const frames = callSite.stack.split('\n').slice(1).join('\n');
    error.stack = `${error.name}: ${error.message}\n${frames}`;
  }
  return error;
}

export class Batcher {
  readonly modelName: string;
  readonly #binding: BatcherBinding;
  readonly #id: number;
  readonly #options: FilledBatcherOptions;
  readonly #onExecuted: (batch: SealedBatch, result: ExecutedResult) => unknown;
  /** A handle attached from another thread (Batcher.attach), not the creator's. */
  readonly #attached: boolean;
  /** The last target's output names (kept after a switch: batches in flight still use them). */
  #outputNames: readonly string[] | undefined;
  readonly #pending = new Map<number, Pending>();
  readonly #markers = new Map<number, () => void>();
  #nextRequest = 1;
  #nextMarker = 1;
  #stopping: Promise<void> | undefined;
  #finalStats: BatcherStats | undefined;

  private constructor(
    binding: BatcherBinding,
    options: FilledBatcherOptions,
    onExecuted: BatcherOptions['onExecuted'],
    attach?: { readonly id: number; readonly outputNames: readonly string[] | undefined },
  ) {
    this.#binding = binding;
    this.#options = options;
    this.#onExecuted = onExecuted ?? (() => {});
    this.modelName = options.modelName;
    this.#attached = attach !== undefined;
    // The handler is this object's; the native side holds it until stop (so stop() is required).
    const onEvent = (event: RawBatcherEvent) => this.#onEvent(event);
    if (attach === undefined) {
      this.#id = unwrapNative(binding.batcherCreate(options.raw, onEvent), 'Batcher.create', Batcher.create);
      return;
    }
    const attachTo = binding.batcherAttach;
    if (attachTo === undefined) throw new Error('the native addon cannot share batchers across threads; rebuild it with `npm run build:native`');
    unwrapNative(attachTo.call(binding, attach.id, onEvent), 'Batcher.attach', Batcher.attach);
    this.#id = attach.id;
    this.#outputNames = attach.outputNames;
  }

  /** Validates the options and starts the model version's batcher thread. */
  static create(options: BatcherOptions, addon: LoadedAddon = nativeAddon()): Batcher {
    const filled = fillBatcherOptions(options);
    const onExecuted = options.onExecuted;
    if (onExecuted !== undefined && typeof onExecuted !== 'function') throw invalid('Batcher.create', 'onExecuted', 'a function', onExecuted);
    return new Batcher(bindingOf(addon), filled, onExecuted);
  }

  /**
   * A handle on `shared` (another thread's batcher, from its share()) for
   * this thread: enqueue here, and the answers come here. `onExecuted` as
   * in create. stop() lets go of this handle only. Throws NativeError
   * FAILED_PRECONDITION when the batcher is closed, or this thread has a
   * handle on it already.
   */
  static attach(
    shared: SharedBatcher,
    options: { readonly onExecuted?: BatcherOptions['onExecuted']; readonly outputNames?: readonly string[] } = {},
    addon: LoadedAddon = nativeAddon(),
  ): Batcher {
    const onExecuted = options.onExecuted;
    if (onExecuted !== undefined && typeof onExecuted !== 'function') throw invalid('Batcher.attach', 'onExecuted', 'a function', onExecuted);
    // Plain batches go only to the creator's thread: never called here.
    const onBatch = () => {
      throw new Error(`model '${shared.options.modelName}': plain batches run on the thread that created the batcher`);
    };
    const outputNames = options.outputNames ?? shared.outputNames;
    return new Batcher(bindingOf(addon), { ...shared.options, onBatch }, onExecuted, { id: shared.id, outputNames });
  }

  /** The process-wide id of the native batcher (what attach needs, with the options). */
  get id(): number {
    return this.#id;
  }

  /** What another thread needs to attach to this batcher: plain data for postMessage. */
  share(): SharedBatcher {
    const { onBatch: _onBatch, ...options } = this.#options;
    return { id: this.#id, options, outputNames: this.#outputNames };
  }

  /**
   * Sends batches sealed from now on to `executor`, run natively, delivered
   * through onExecuted; `undefined` sends them to onBatch again. The
   * executor must take the model's inputs (same names, in order) and batch
   * the same way: the executor's maxBatchSize at least the batcher's. A
   * batcher with maxBatchSize 0 (one request per batch, shapes as sent) may
   * feed an executor that batches: each request's leading dimension is then
   * the executor's rows. Throws NativeError (FAILED_PRECONDITION once stopped
   * or for a closed executor) or TypeError for a mismatch.
   */
  setTarget(executor: Executor | undefined): void {
    if (executor !== undefined) {
      const where = 'setTarget';
      const names = this.#options.inputs.map((input) => input.name);
      const theirs = executor.inputs.map((input) => input.name);
      if (theirs.join('\0') !== names.join('\0')) throw invalid(where, 'executor inputs', `[${names.join(', ')}]`, `[${theirs.join(', ')}]`);
      const mine = this.#options.maxBatchSize;
      if (mine > 0 && executor.maxBatchSize < mine) {
        throw invalid(where, 'executor maxBatchSize', `at least ${mine}`, executor.maxBatchSize);
      }
    }
    unwrapNative(this.#binding.batcherSetTarget(this.#id, executor?.id ?? 0), 'setTarget', this.setTarget);
    if (executor !== undefined) this.#outputNames = executor.outputs.map((output) => output.name);
  }

  /**
   * Sends batches sealed from now on to the workers of `target` (an
   * onnxruntime worker pool), natively from the batcher thread; each comes
   * back once through onExecuted. `outputs` are the model's, in order: an
   * output whose per-row `dims` are known is pre-allocated in batch memory
   * when the batcher batches (maxBatchSize > 0); null dims: the worker's run
   * allocates it. setTarget(undefined) sends batches to onBatch again.
   */
  setWorkerTarget(
    target: WorkerPoolTarget,
    outputs: readonly { readonly name: string; readonly elementBytes: number; readonly dims: readonly number[] | null }[],
  ): void {
    const set = this.#binding.batcherSetWorkerTarget;
    if (set === undefined) throw new Error('the native addon has no worker targets; rebuild it with `npm run build:native`');
    const specs = outputs.map(({ elementBytes, dims }) => ({ elementBytes, dims: dims === null ? null : [...dims] }));
    unwrapNative(set.call(this.#binding, this.#id, target.id, specs, this.#options.maxBatchSize > 0), 'setWorkerTarget', this.setWorkerTarget);
    this.#outputNames = outputs.map((output) => output.name);
  }

  /** True once stop() was called. */
  get stopped(): boolean {
    return this.#stopping !== undefined;
  }

  /**
   * Queues one request. Resolves with its slice when its batch is sealed and
   * handed to onBatch; rejects with a BatcherRejection (QUEUE_FULL,
   * OVER_QUOTA, DEADLINE_EXCEEDED, INVALID, SHUTDOWN at once; TIMEOUT,
   * DEADLINE_EXCEEDED, SHUTDOWN while queued) or a NativeError
   * INVALID_ARGUMENT for a request the binding cannot read.
   */
  enqueue(request: EnqueueRequest): Promise<SealedSlice> {
    const stopped = this.#refuseIfStopped(this.enqueue);
    if (stopped !== undefined) return stopped;
    let checked;
    try {
      checked = checkEnqueue(this.#options, request);
    } catch (error) {
      return Promise.reject(withCallSite(error as Error, callSiteOf(this.enqueue)));
    }
    return this.#submit(checked, this.enqueue);
  }

  /**
   * enqueue() for a request the request path has already validated against
   * the model's signature (tensor/infer-request.ts prepareBatchedInference, whose
   * shapes and byte sizes are the ones this batcher was created with), so its
   * arguments are not checked a second time. Only the dims its version leaves
   * open (-1) cross to native; the fixed ones crossed once, at create. The
   * native side keeps its guard checks (input count, rows, null data, the
   * count and range of the variable dims) and bounds every copy by the
   * batch's capacity, so a wrong request can fail its batch but is never
   * written out of bounds.
   */
  enqueueValidated(request: ValidatedEnqueue): Promise<SealedSlice> {
    const stopped = this.#refuseIfStopped(this.enqueueValidated);
    if (stopped !== undefined) return stopped;
    const deadlineUs = request.deadlineMs === undefined ? null : deadlineMicroseconds(request.deadlineMs);
    // The shapes lead with the rows when this batcher batches; its dims templates do not.
    const variableDims = variableDimsOf(this.#options, request.shapes, this.#options.maxBatchSize > 0 ? 1 : 0);
    // Straight to the binding, with no CheckedRequest in between: one object less per request.
    const id = this.#nextRequest++;
    const result = this.#binding.batcherEnqueue(this.#id, id, request.rows, request.priority, request.timeoutUs, deadlineUs, request.inputs, variableDims);
    return this.#answerOf(id, result, this.enqueueValidated);
  }

  /** After stop(): the SHUTDOWN refusal, its stack at the caller of `caller`; undefined while running. */
  #refuseIfStopped(caller: (...args: never[]) => unknown): Promise<SealedSlice> | undefined {
    if (this.#stopping === undefined) return undefined;
    return Promise.reject(withCallSite(this.#rejection('SHUTDOWN', `model '${this.modelName}': batcher shut down`, 0), callSiteOf(caller)));
  }

  #submit(checked: CheckedRequest, caller: (...args: never[]) => unknown): Promise<SealedSlice> {
    const id = this.#nextRequest++;
    const { rows, priority, timeoutUs, deadlineUs, inputs, variableDims } = checked;
    const result = this.#binding.batcherEnqueue(this.#id, id, rows, priority, timeoutUs, deadlineUs, inputs, variableDims);
    return this.#answerOf(id, result, caller);
  }

  /** Request `id`'s promise, given what batcherEnqueue said: refused now, or settled by its event. */
  #answerOf(id: number, result: EnqueueResult, caller: (...args: never[]) => unknown): Promise<SealedSlice> {
    if (!result.ok) return Promise.reject(withCallSite(this.#refusal(result), callSiteOf(caller)));
    // No call site for a request that is queued: capturing one costs about
    // 4.5 µs of the main thread per request (measured), a tenth of the whole
    // per-request budget. A later rejection carries the stack of the event
    // that settles it.
    return new Promise<SealedSlice>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
  }

  /** An instance finished its batch. FAILED_PRECONDITION if all are already idle. No-op after stop(). */
  instanceIdle(): void {
    if (this.#stopping !== undefined) return;
    unwrapNative(this.#binding.batcherInstanceIdle(this.#id), 'instanceIdle', this.instanceIdle);
  }

  /** An instance was taken by work outside the batcher. FAILED_PRECONDITION if none is idle. No-op after stop(). */
  instanceBusy(): void {
    if (this.#stopping !== undefined) return;
    unwrapNative(this.#binding.batcherInstanceBusy(this.#id), 'instanceBusy', this.instanceBusy);
  }

  /** Counters since create, read now (after stop: the final ones). */
  stats(): BatcherStats {
    const result = this.#binding.batcherStats(this.#id);
    if (!result.ok && this.#finalStats !== undefined) return { ...this.#finalStats, heldBatches: 0 };
    return unwrapNative(result, 'stats', this.stats);
  }

  /**
   * Stops the batcher thread. Requests still queued reject with SHUTDOWN;
   * batches already sealed are still delivered. Resolves once every
   * request's promise has settled. Idempotent. Delivered batches stay
   * valid until released.
   */
  stop(): Promise<void> {
    if (this.#stopping !== undefined) return this.#stopping;
    if (this.#attached) return this.#detach();
    const marker = this.#nextMarker++;
    this.#stopping = new Promise<void>((resolve) => this.#markers.set(marker, resolve)).then(() => this.#failPending());
    try {
      const queued = unwrapNative(this.#binding.batcherStop(this.#id, marker), 'stop', this.stop);
      this.#finalStats = unwrapNative(this.#binding.batcherStats(this.#id), 'stop', this.stop);
      if (!queued) this.#resolveMarker(marker);
    } catch (error) {
      this.#resolveMarker(marker);
      return Promise.reject(error);
    }
    return this.#stopping;
  }

  // An attached handle's stop(): the batcher runs on; answers still due here
  // are dropped natively, and their requests reject with SHUTDOWN now.
  #detach(): Promise<void> {
    const detach = this.#binding.batcherDetach;
    try {
      const stats = this.#binding.batcherStats(this.#id);
      if (stats.ok) this.#finalStats = stats.value;
      if (detach !== undefined) unwrapNative(detach.call(this.#binding, this.#id), 'stop', this.stop);
    } catch (error) {
      this.#stopping = Promise.reject(error);
      return this.#stopping;
    }
    this.#stopping = Promise.resolve();
    this.#failPending();
    for (const marker of [...this.#markers.keys()]) this.#resolveMarker(marker);
    return this.#stopping;
  }

  /**
   * Test hook: resolves once the batcher loop has acted on everything before
   * the call and the resulting batches and rejections have been delivered.
   * Briefly blocks this thread while the loop catches up.
   */
  flush(): Promise<void> {
    if (this.#stopping !== undefined) return this.#stopping;
    const marker = this.#nextMarker++;
    const done = new Promise<void>((resolve) => this.#markers.set(marker, resolve));
    try {
      if (!unwrapNative(this.#binding.batcherFlush(this.#id, marker), 'flush', this.flush)) this.#resolveMarker(marker);
    } catch (error) {
      this.#markers.delete(marker);
      return Promise.reject(error);
    }
    return done;
  }

  /**
   * Test hook for clock 'manual': moves the batcher's time forward by `us`
   * and resolves once everything that caused has been delivered (flush()).
   */
  advanceClock(us: number): Promise<void> {
    if (!Number.isSafeInteger(us) || us < 0) return Promise.reject(new TypeError(`advanceClock: us must be an integer >= 0, got ${String(us)}`));
    try {
      unwrapNative(this.#binding.batcherAdvanceClock(this.#id, us), 'advanceClock', this.advanceClock);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.flush();
  }

  // Runs on this thread for every TSFN event. Must not throw: the native
  // side treats a throw as an uncaught exception.
  #onEvent(event: RawBatcherEvent): void {
    switch (event.type) {
      case 'batch':
        this.#deliver(event);
        break;
      case 'executed':
        this.#deliverExecuted(event);
        break;
      case 'rejected':
        for (const request of event.requests) this.#reject(request);
        break;
      case 'marker':
        this.#resolveMarker(event.marker);
        break;
    }
  }

  #deliver(event: RawBatchEvent): void {
    const batch = new Batch(this.#binding, this.#id, event, this.#options.inputs.map((input) => input.name));
    let handle: unknown;
    try {
      handle = this.#options.onBatch(batch);
    } catch (error) {
      // Not dispatched: nothing runs it, so it gives its instance and memory back.
      batch.release();
      try {
        this.instanceIdle();
      } catch {
        // All instances idle already: the handler gave it back before throwing.
      }
      for (const request of event.requests) this.#take(request.id)?.reject(error as Error);
      return;
    }
    event.requests.forEach((request, i) => {
      const { rowOffset, rows, queueNs, sequence } = batch.requests[i] ?? request;
      this.#take(request.id)?.resolve({ batch, handle, rowOffset, rows, queueNs, sequence });
    });
  }

  #deliverExecuted(event: RawExecutedEvent): void {
    const names = this.#options.inputs.map((input) => input.name);
    const batch = new Batch(this.#binding, this.#id, event, names);
    let result: ExecutedResult;
    if (event.ok) {
      const outputNames = this.#outputNames ?? [];
      const outputs = event.outputs.map(({ blockId, bytes, shape }, i) => ({
        name: outputNames[i] ?? String(i),
        blockId,
        bytes,
        shape,
        view: () => batch.view(names.length + i),
        copy: (byteOffset: number, byteLength: number) => batch.copyOut(names.length + i, byteOffset, byteLength),
      }));
      result = { ok: true, outputs, timing: event.timing };
    } else {
      const code = event.code === 'OK' ? 'INTERNAL' : event.code;
      result = { ok: false, failure: event.failure, code, message: event.message };
    }
    let handle: unknown;
    try {
      handle = this.#onExecuted(batch, result);
    } catch (error) {
      // The instance is idle already (natively); only the memory goes back.
      batch.release();
      for (const request of event.requests) this.#take(request.id)?.reject(error as Error);
      return;
    }
    event.requests.forEach((request, i) => {
      const { rowOffset, rows, queueNs, sequence } = batch.requests[i] ?? request;
      this.#take(request.id)?.resolve({ batch, handle, rowOffset, rows, queueNs, sequence, executed: result });
    });
  }

  #reject(request: RawRejectedRequest): void {
    const pending = this.#take(request.id);
    if (pending === undefined) return;
    const error = new BatcherRejection(
      request.reason, request.code, request.message, this.modelName, request.queueNs, this.#options.tenant, request.sequence,
    );
    pending.reject(error);
  }

  #take(id: number): Pending | undefined {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    return pending;
  }

  #resolveMarker(marker: number): void {
    const resolve = this.#markers.get(marker);
    this.#markers.delete(marker);
    resolve?.();
  }

  // After stop's marker every request has settled; this only guards the contract.
  #failPending(): void {
    for (const [id, pending] of [...this.#pending]) {
      this.#pending.delete(id);
      pending.reject(this.#rejection('SHUTDOWN', `model '${this.modelName}': batcher shut down`, 0));
    }
  }

  #rejection(reason: keyof typeof rejectionCodes, message: string, queueNs: number): BatcherRejection {
    return new BatcherRejection(reason, rejectionCodes[reason], message, this.modelName, queueNs, this.#options.tenant);
  }

  // A refused enqueue: a typed rejection when the native side said why.
  #refusal(result: Extract<EnqueueResult, { ok: false }>): Error {
    // An attached handle outlives the batcher it attached to (the creator
    // stopped it, e.g. at a reload): its requests are refused as the
    // creator's own would be after stop().
    if (result.reason === undefined && this.#attached && result.code === 'FAILED_PRECONDITION') {
      return this.#rejection('SHUTDOWN', `model '${this.modelName}': batcher shut down`, 0);
    }
    if (result.reason === undefined) return new NativeError(result.code, result.message, 'enqueue');
    // The arena's quota message names the tenant but not the model.
    const message = result.reason === 'OVER_QUOTA' ? `model '${this.modelName}': ${result.message}` : result.message;
    return this.#rejection(result.reason, message, 0);
  }
}
