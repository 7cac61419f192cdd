/**
 * One model version's worker pool: a piscina pool whose every thread holds one
 * onnxruntime session for the same model file.
 *
 * Ownership: the ModelVersion that created the pool owns it and is the only one
 * that closes it. Thread-safety: used from the main thread only; piscina does
 * the cross-thread work.
 */
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { WorkerCrashedError } from '../common/serving-error.js';
import { WorkerPoolTarget, workerChannelsSupported } from '../native/worker-channel.js';
import { TaskLedger, type WorkerExit } from './worker-exits.js';
import { WorkerRunError } from './run-failure.js';
import {
  type ChannelSpec,
  isInferFailure,
  isWorkerEventMessage,
  type DescribeTask,
  type InferFailure,
  type InferResult,
  type InferTask,
  type ModelIoDescription,
  type WarmupPlan,
  type WorkerInitData,
  type WorkerSessionMessage,
  type WorkerStatsMessage,
  type WorkerStatsRequest,
  type WorkerWarmMessage,
} from './worker-protocol.js';

/** What every worker of the pool is told (WorkerInitData, but the pool's task table), plus the pool's own settings. */
export interface ModelPoolOptions extends Omit<WorkerInitData, 'taskSlots'> {
  /** Worker threads, i.e. `instance_group.count`. */
  readonly instances: number;
  readonly logger: Logger;
}

/** One worker's memory figures, as it reported them (WorkerStatsMessage). */
export type WorkerStats = Omit<WorkerStatsMessage, 'type' | 'id'>;

/** What a pool's warm-up did: per-worker runs and duration, and warnings from default samples. */
export interface WarmupReport {
  readonly workers: number;
  readonly runsPerWorker: number;
  /** The slowest worker's warm-up, in ms. */
  readonly maxWorkerMs: number;
  readonly warnings: readonly string[];
}

/**
 * Pools whose workers were told to stop and have not all exited yet. A worker
 * stuck inside onnxruntime's native code never exits, and Node's own
 * process.exit() joins every worker thread, so while this is not empty only
 * the addon's _exit ends the process (cli/shutdown.ts). Main thread only.
 */
const stoppingPools = new Set<ModelPool>();

/** Pools with worker threads that were told to stop and are still running (0: process.exit() is safe). */
export function poolsStillStopping(): number {
  return stoppingPools.size;
}

export class ModelPool {
  private readonly piscina: Piscina<InferTask | DescribeTask, InferResult | InferFailure | ModelIoDescription>;
  /** Decoupled from piscina's events so waiting code never races a listener it has not attached yet. */
  private readonly events = new EventEmitter();
  /** Set once the config is complete; every worker that says hello afterwards gets it at once. */
  private plan: WarmupPlan | undefined;
  private readonly waitingForPlan: MessagePort[] = [];
  private io: ModelIoDescription | undefined;
  /** Each worker's measured session footprint, by thread id (replacements add entries). */
  private readonly footprints = new Map<number, number>();
  /** Each live worker's hello port, by thread id: how the pool asks it for its memory figures. */
  private readonly ports = new Map<number, MessagePort>();
  private nextStatsId = 1;
  /** Set by `abandon()`. */
  private abandoned = false;
  /** The native end batches reach this pool's workers through (warmUp with tensors creates it). */
  private targetValue: WorkerPoolTarget | undefined;
  /** Which task each worker runs, so a task's failure is known to be its worker's exit (worker-exits.ts). */
  private readonly tasks: TaskLedger;

  private constructor(private readonly options: ModelPoolOptions) {
    // Room for every thread and as many replacements started before a dead worker's exit is seen.
    this.tasks = new TaskLedger(options.instances * 2);
    // Everything but the pool's own settings goes to the workers as is.
    const { instances: _instances, logger: _logger, ...initData } = options;
    const workerData: WorkerInitData = { ...initData, taskSlots: this.tasks.table };
    this.piscina = new Piscina({
      filename: workerModulePath(),
      minThreads: options.instances,
      maxThreads: options.instances,
      // Sessions are expensive to create: never retire an idle worker.
      idleTimeout: Number.POSITIVE_INFINITY,
      // One task per worker at a time: a session runs one batch at a time.
      concurrentTasksPerWorker: 1,
      // Tasks are async (onnxruntime resolves through the event loop), so the
      // worker must not block in Atomics.wait between tasks.
      atomics: 'disabled',
      workerData,
    });
    // piscina reports worker deaths that had no task attached here (a worker that
    // failed to create its session, or died while warming); a death with a task
    // attached rejects that task instead, and the pool replaces the worker.
    this.piscina.on('error', (err: Error) => {
      options.logger.error({ error: errorMessage(err), model_path: options.modelPath }, 'inference worker failed');
      this.events.emit('worker-error', err);
    });
    // A worker's own parentPort messages: its hello and its warm-up report.
    this.piscina.on('message', (message: unknown) => {
      if (!isWorkerEventMessage(message)) return;
      if (message.type === 'hotpath:session') this.onSession(message);
      else this.events.emit('warm', message);
    });
  }

  /** Starts the workers and returns once one of them has loaded the model (warm-up comes next). */
  static async create(options: ModelPoolOptions): Promise<{ pool: ModelPool; io: ModelIoDescription }> {
    const pool = new ModelPool(options);
    try {
      const io = pool.io ?? (await pool.nextEvent<ModelIoDescription>('session'));
      return { pool, io };
    } catch (err) {
      await pool.close();
      throw new Error(`cannot load ${options.modelPath}: ${errorMessage(err)}`, { cause: err });
    }
  }

  get instances(): number {
    return this.options.instances;
  }

  /** Worker threads alive now (a crashed one is missing until its replacement starts). */
  get threads(): number {
    return this.piscina.threads.length;
  }

  get generation(): number {
    return this.options.generation;
  }

  /** Thread ids of the workers that said hello and are still alive. */
  get threadIds(): number[] {
    return [...this.ports.keys()].sort((a, b) => a - b);
  }

  /**
   * Every live worker's memory figures. A worker answers between tasks, so a
   * busy one may answer late; one that does not answer within `timeoutMs`
   * (dying, or stuck in a long task) is left out of this sample.
   */
  async workerStats(timeoutMs: number): Promise<WorkerStats[]> {
    const asks = [...this.ports.values()].map((port) => this.askStats(port, timeoutMs));
    return (await Promise.all(asks)).filter((stats): stats is WorkerStats => stats !== undefined);
  }

  private askStats(port: MessagePort, timeoutMs: number): Promise<WorkerStats | undefined> {
    const id = this.nextStatsId++;
    return new Promise((resolve) => {
      const done = (stats: WorkerStats | undefined) => {
        clearTimeout(timer);
        port.off('message', onMessage);
        port.unref();
        resolve(stats);
      };
      const onMessage = (message: WorkerStatsMessage) => {
        if (message?.type !== 'hotpath:stats' || message.id !== id) return;
        const { type: _type, id: _id, ...stats } = message;
        done(stats);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      timer.unref();
      port.on('message', onMessage);
      port.unref(); // a listening port must not keep the process alive
      const request: WorkerStatsRequest = { type: 'hotpath:stats', id };
      port.postMessage(request);
    });
  }

  /**
   * Where a batcher sends sealed batches for this pool's workers (natively,
   * see src/native/worker-channel.ts); undefined until warmUp was given the
   * model's tensors, or with an addon that cannot.
   */
  get target(): WorkerPoolTarget | undefined {
    return this.targetValue?.closed === false ? this.targetValue : undefined;
  }

  /** Tasks waiting for a free worker. */
  get queueSize(): number {
    return this.piscina.queueSize;
  }

  /**
   * Hands the plan to every worker and resolves once `instances` distinct
   * workers finished it. A required sample failing, or a worker dying while
   * warming, rejects. Later replacement workers get the same plan and warm
   * themselves before piscina gives them a task.
   */
  async warmUp(plan: WarmupPlan, tensors?: Omit<ChannelSpec, 'pool'>): Promise<WarmupReport> {
    if (tensors !== undefined && this.targetValue === undefined && workerChannelsSupported()) {
      this.targetValue = WorkerPoolTarget.create();
    }
    // Every worker that warms (replacements too) then opens its channel to the target.
    this.plan = this.targetValue === undefined || tensors === undefined ? plan : { ...plan, channel: { pool: this.targetValue.id, ...tensors } };
    plan = this.plan;
    for (const port of this.waitingForPlan.splice(0)) port.postMessage(plan);
    const warm = new Map<number, WorkerWarmMessage>();
    return new Promise<WarmupReport>((resolve, reject) => {
      const onWarm = (message: WorkerWarmMessage) => {
        if (message.error !== undefined) return finish(new Error(message.error));
        warm.set(message.threadId, message);
        if (warm.size >= this.options.instances) finish();
      };
      const onError = (err: Error) => finish(new Error(`an inference worker died while warming up: ${errorMessage(err)}`));
      const onClosed = () => finish(new Error('the worker pool closed while warming up'));
      const finish = (err?: Error) => {
        this.events.off('warm', onWarm);
        this.events.off('worker-error', onError);
        this.events.off('closed', onClosed);
        if (err !== undefined) return reject(err);
        const reports = [...warm.values()];
        resolve({
          workers: reports.length,
          runsPerWorker: Math.min(...reports.map((r) => r.runs)),
          maxWorkerMs: Math.max(...reports.map((r) => r.durationMs)),
          warnings: [...new Set(reports.flatMap((r) => r.warnings))],
        });
      };
      this.events.on('warm', onWarm);
      this.events.on('worker-error', onError);
      this.events.on('closed', onClosed);
    });
  }

  /**
   * Runs one inference task; input buffers in `transfer` are moved, not copied.
   * Throws WorkerCrashedError when its worker exited under it (and under the
   * retry), and the worker's typed refusals as ServingErrors of their kind.
   */
  async infer(task: InferTask, transfer: ArrayBuffer[]): Promise<InferResult> {
    const first = await this.runTracked(task, transfer);
    if (first.exit === undefined) return resultOf(first.outcome);
    // Inference is idempotent: a task whose worker died is retried once on
    // another (piscina has replaced the dead one). Only tasks whose inputs
    // live in the arena can be: transferred buffers went down with the worker.
    if (transfer.length > 0) throw new WorkerCrashedError(`inference worker died while running the request (${exitText(first.exit)})`);
    this.options.logger.warn(
      { model_path: this.options.modelPath, thread_id: first.exit.threadId, exit_code: first.exit.exitCode },
      'inference worker died mid-task; retrying the task once',
    );
    // A transient test fault strikes the first attempt only.
    const retry: InferTask = task.fault === 'crash-worker-once' ? { ...task, fault: undefined } : task;
    const second = await this.runTracked(retry, []);
    if (second.exit === undefined) return resultOf(second.outcome);
    throw new WorkerCrashedError(
      `inference worker died while running the request (${exitText(first.exit)}), and again on the retry (${exitText(second.exit)})`,
    );
  }

  /**
   * Runs `task` on some worker: its answer, or how that worker exited while
   * running it. Any other failure (a worker's uncaught exception, a closed
   * pool) is thrown as piscina reported it.
   */
  private async runTracked(
    task: InferTask,
    transfer: ArrayBuffer[],
  ): Promise<{ outcome: InferResult | InferFailure; exit?: undefined } | { outcome?: undefined; exit: WorkerExit }> {
    const taskId = this.tasks.begin();
    try {
      const outcome = (await this.piscina.run({ ...task, taskId }, { transferList: transfer })) as InferResult | InferFailure;
      this.tasks.settle(taskId);
      return { outcome };
    } catch (err) {
      // The worker's 'exit' event rejected the task and, in the same event, recorded it (worker-exits.ts).
      const exit = this.tasks.settleFailed(taskId);
      if (exit !== undefined) return { exit };
      throw err;
    }
  }

  /** Finishes queued and running tasks, then stops every worker (and its session). */
  async close(): Promise<void> {
    this.releaseWaiters();
    await this.closeTarget();
    stoppingPools.add(this);
    try {
      await this.piscina.close();
    } finally {
      stoppingPools.delete(this);
    }
    this.closePorts();
    this.tasks.close();
  }

  /**
   * Stops every worker without waiting for any (a load that passed its time
   * limit): a pending warm-up rejects at once, queued tasks fail, and each
   * worker is terminated. One stuck in native code never exits; the pool
   * then stays in `poolsStillStopping` for the life of the process.
   */
  abandon(): void {
    // Once only: a second destroy() finds no workers and would settle at once,
    // though the first one's stuck worker is still running.
    if (this.abandoned) return;
    this.abandoned = true;
    this.releaseWaiters();
    if (this.targetValue !== undefined && !this.targetValue.closed) this.targetValue.close();
    stoppingPools.add(this);
    void this.piscina.destroy().then(
      () => {
        stoppingPools.delete(this);
        this.closePorts();
        this.tasks.close();
      },
      () => this.tasks.close(),
    );
  }

  /** A worker still waiting for its plan gets an empty one, so it can finish init and exit; a warm-up waiting rejects. */
  private releaseWaiters(): void {
    this.plan ??= { samples: [], delayMs: 0 };
    for (const port of this.waitingForPlan.splice(0)) port.postMessage(this.plan);
    this.events.emit('closed');
  }

  private closePorts(): void {
    for (const port of this.ports.values()) port.close();
    this.ports.clear();
  }

  /**
   * Batches queued for a channel fail with SHUTDOWN (their batcher re-runs
   * them elsewhere); the ones running on a worker finish there first, so
   * closing the workers does not cut them off (bounded: a stuck one fails
   * WORKER_CRASHED when its worker is terminated).
   */
  private async closeTarget(): Promise<void> {
    const target = this.targetValue;
    if (target === undefined || target.closed) return;
    const deadline = Date.now() + 10_000;
    target.close();
    while (target.runningBatches > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  /**
   * What the pool's sessions cost: the footprint of the first `instances`
   * workers that reported (a replacement worker replaces, not adds, memory).
   */
  get footprintBytes(): number {
    return [...this.footprints.values()].slice(0, this.options.instances).reduce((sum, bytes) => sum + bytes, 0);
  }

  private onSession(message: WorkerSessionMessage): void {
    this.footprints.set(message.threadId, message.footprintBytes);
    // The worker's end closes when it exits (crash or terminate): forget it then.
    this.ports.set(message.threadId, message.port);
    message.port.once('close', () => this.ports.delete(message.threadId));
    if (this.io === undefined) {
      this.io = message.io;
      this.events.emit('session', message.io);
    }
    if (this.plan !== undefined) message.port.postMessage(this.plan);
    else this.waitingForPlan.push(message.port);
  }

  /** The next `event`, or the next worker error, whichever comes first. */
  private nextEvent<T>(event: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onEvent = (value: T) => {
        this.events.off('worker-error', onError);
        resolve(value);
      };
      const onError = (err: Error) => {
        this.events.off(event, onEvent);
        reject(err);
      };
      this.events.once(event, onEvent);
      this.events.once('worker-error', onError);
    });
  }
}

/** A worker's answer, with its typed failure rethrown as the error of its code's kind. */
function resultOf(outcome: InferResult | InferFailure): InferResult {
  if (!isInferFailure(outcome)) return outcome;
  throw new WorkerRunError(outcome.failure, outcome.message);
}

function exitText(exit: WorkerExit): string {
  return `worker thread ${exit.threadId} exited with code ${exit.exitCode}`;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The compiled worker module. Under vitest this file is loaded from src/*.ts,
 * while workers must run compiled JS, so map to the dist/ twin in that case.
 */
function workerModulePath(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = path.join(path.dirname(here), 'inference-worker.js');
  if (existsSync(sibling)) return sibling;
  const packageRoot = path.resolve(path.dirname(here), '..', '..');
  return path.join(packageRoot, 'dist', 'src', 'workers', 'inference-worker.js');
}
