// Typed wrapper for native/napi/worker_binding.cc: the native hand-off of
// sealed batches from a batcher thread to onnxruntime workers.
//
// Main thread, one per worker generation:
//   const target = WorkerPoolTarget.create();
//   batcher.setWorkerTarget(target, outputs);   // batches go to its workers
//   target.close();                              // queued batches fail SHUTDOWN
//
// Each worker, once its session is warm:
//   const channel = WorkerChannel.open(poolId, (batch) => {
//     ...run onnxruntime over batch.inputs[i].buffer (arena memory, no copy),
//        writing into batch.outputs[i].buffer where it is pre-allocated...
//     channel.done(batch.token, { ok: true, outputs, timing });
//   });
//
// A batch arrives on the worker's own event loop (a ThreadSafeFunction made
// in the worker's environment), one at a time per worker; its buffers are
// detached by done(). The result reaches the main thread once, as the
// batcher's 'executed' event. A worker that exits with a batch running fails
// it with WORKER_CRASHED (its batch intact, so the main thread re-runs it).
//
// Thread-safety: a WorkerPoolTarget belongs to the thread that created it; a
// WorkerChannel to its worker thread. The native pool is thread-safe.
import type { WorkerFailure } from '../common/error-kinds.js';
import { nativeAddon, type LoadedAddon } from './loader.js';
import { unwrapNative, type NativeResult } from './native-error.js';

/** Why a worker's run failed, typed (never a message prefix); the list: common/error-kinds.ts WORKER_FAILURES. */
export type { WorkerFailure } from '../common/error-kinds.js';

/** A sealed batch as a worker sees it. Buffers are valid until done(). */
export interface ChannelBatch {
  readonly token: number;
  readonly rows: number;
  /** Model input order; each buffer is exactly the input's bytes. */
  readonly inputs: readonly { readonly buffer: ArrayBuffer; readonly shape: readonly number[] }[];
  /** Model output order; null where the run allocates the output. */
  readonly outputs: readonly ({ readonly buffer: ArrayBuffer; readonly shape: readonly number[] } | null)[];
}

/** Durations inside the worker, ns. */
export interface ChannelTiming {
  readonly inputNs: number;
  readonly computeNs: number;
  readonly outputNs: number;
}

export type ChannelOutcome =
  | {
      readonly ok: true;
      /** Model output order; `data` for the outputs the run allocated (copied into batch memory). */
      readonly outputs: readonly { readonly shape: readonly number[]; readonly data?: ArrayBufferView }[];
      readonly timing: ChannelTiming;
    }
  | { readonly ok: false; readonly failure: WorkerFailure; readonly message: string };

export interface WorkerPoolStats {
  readonly channels: number;
  readonly idleChannels: number;
  readonly queued: number;
  readonly running: number;
  readonly executed: number;
  readonly crashed: number;
}

interface WorkerBinding {
  workerPoolCreate(): NativeResult<number>;
  workerPoolClose(pool: number): NativeResult<boolean>;
  workerPoolStats(pool: number): NativeResult<WorkerPoolStats>;
  workerChannelOpen(pool: number, onBatch: (batch: ChannelBatch) => void): NativeResult<number>;
  workerChannelClose(channel: number): NativeResult<boolean>;
  workerBatchDone(token: number, outcome: ChannelOutcome): NativeResult<null>;
}

const workerExports: readonly (keyof WorkerBinding)[] = [
  'workerPoolCreate',
  'workerPoolClose',
  'workerPoolStats',
  'workerChannelOpen',
  'workerChannelClose',
  'workerBatchDone',
];

/** The addon's worker bindings, or undefined for an addon built before them. */
function bindingOf(addon: LoadedAddon): WorkerBinding | undefined {
  const record = addon.binding as unknown as Record<string, unknown>;
  return workerExports.every((name) => typeof record[name] === 'function') ? (addon.binding as unknown as WorkerBinding) : undefined;
}

/** Whether the addon can hand batches to workers natively. */
export function workerChannelsSupported(addon: LoadedAddon = nativeAddon()): boolean {
  return bindingOf(addon) !== undefined;
}

function requireBinding(addon: LoadedAddon): WorkerBinding {
  const binding = bindingOf(addon);
  if (binding === undefined) throw new Error(`${addon.path} has no worker channel bindings; rebuild it with \`npm run build:native\``);
  return binding;
}

/** One worker generation's native pool (main thread). */
export class WorkerPoolTarget {
  readonly #binding: WorkerBinding;
  #closed = false;

  private constructor(binding: WorkerBinding, readonly id: number) {
    this.#binding = binding;
  }

  static create(addon: LoadedAddon = nativeAddon()): WorkerPoolTarget {
    const binding = requireBinding(addon);
    return new WorkerPoolTarget(binding, unwrapNative(binding.workerPoolCreate(), 'WorkerPoolTarget.create', WorkerPoolTarget.create));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Queue and channel counters. After close() they stay readable until the
   * running batches are done (then FAILED_PRECONDITION).
   */
  stats(): WorkerPoolStats {
    return unwrapNative(this.#binding.workerPoolStats(this.id), 'stats', this.stats);
  }

  /** Batches running on workers now (0 once a closed pool is done). */
  get runningBatches(): number {
    const result = this.#binding.workerPoolStats(this.id);
    return result.ok ? result.value.running : 0;
  }

  /** Queued batches fail with SHUTDOWN; running ones finish on their workers. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    unwrapNative(this.#binding.workerPoolClose(this.id), 'close', this.close);
  }
}

/** A worker's end (worker thread). */
export class WorkerChannel {
  readonly #binding: WorkerBinding;
  readonly #handle: number;

  private constructor(binding: WorkerBinding, handle: number) {
    this.#binding = binding;
    this.#handle = handle;
  }

  /**
   * Registers this worker with pool `poolId`: from now on `onBatch` may be
   * called on this thread's event loop, one batch at a time. `onBatch` must
   * call done() exactly once (a throw fails the batch INTERNAL).
   */
  static open(poolId: number, onBatch: (batch: ChannelBatch) => void, addon: LoadedAddon = nativeAddon()): WorkerChannel {
    const binding = requireBinding(addon);
    // A throw fails that batch here: the native side reads a failed call as
    // the worker terminating (and leaves the batch to its cleanup hook).
    const guarded = (batch: ChannelBatch) => {
      try {
        onBatch(batch);
      } catch (error) {
        binding.workerBatchDone(batch.token, { ok: false, failure: 'INTERNAL', message: `worker batch handler threw: ${String(error)}` });
      }
    };
    const handle = unwrapNative(binding.workerChannelOpen(poolId, guarded), 'WorkerChannel.open', WorkerChannel.open);
    return new WorkerChannel(binding, handle);
  }

  /** Completes batch `token` (its buffers are detached now). */
  done(token: number, outcome: ChannelOutcome): void {
    unwrapNative(this.#binding.workerBatchDone(token, outcome), 'done', this.done);
  }

  /** Unregisters; a batch running here fails with WORKER_CRASHED. */
  close(): void {
    unwrapNative(this.#binding.workerChannelClose(this.#handle), 'close', this.close);
  }
}
