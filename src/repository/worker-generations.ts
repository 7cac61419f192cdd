/**
 * The worker generations of one model version: the onnxruntime (piscina)
 * pool serving it now, and the pools that replace it. Its one job is to
 * start, swap and close generations; what a request runs and when the
 * version may serve are not its business (version-runtime.ts,
 * model-version.ts).
 *
 * A generation is a pool plus the arena owner its workers allocate under
 * (a child of the version's owner, see version-memory.ts). Generation 1 is
 * started by the loader (onnxruntime versions); later ones count on from 2:
 * a rolling restart by the leak patrol (`restart`), or a CPU pool started on
 * demand for a native-executor version that fell back to CPU (`ensurePool`),
 * retired again when the device comes back (`retire`).
 *
 * Ownership: this object owns every pool it started or was given, and the
 * generation owners under the version's memory; it closes pools and destroys
 * their owners, never the version's memory itself.
 *
 * Main thread only. Dispatch reads the current generation once per task, so a
 * switch is atomic for the single-threaded main loop: a task handed to the old
 * pool finishes there, and nothing new reaches it.
 */
import type { ModelPool, WorkerStats } from '../workers/model-pool.js';
import type { ChannelSpec, WarmupPlan } from '../workers/worker-protocol.js';
import type { Owner } from '../native/arena.js';
import type { VersionMemory } from './version-memory.js';

/** One pool of workers and the arena owner its workers allocate under. */
export interface WorkerGeneration {
  readonly number: number;
  readonly owner: Owner;
  readonly pool: ModelPool;
}

/** Starts (not warms) a pool for generation `number`, with the same options as at load. */
export type PoolStarter = (number: number, owner: Owner) => Promise<ModelPool>;

/** The model's tensors as the workers' batch channels see them (see VersionRuntime). */
export type ChannelTensors = Omit<ChannelSpec, 'pool'>;

/** What a rolling restart did (logged by the patrol as evidence). */
export interface RestartReport {
  readonly fromGeneration: number;
  readonly toGeneration: number;
  readonly oldThreadIds: readonly number[];
  readonly newThreadIds: readonly number[];
  /** Start + warm-up of the new generation, until dispatch switched. */
  readonly switchMs: number;
  /** Until the old generation finished its tasks, stopped, and its owner was destroyed. */
  readonly totalMs: number;
  /** What destroying the old generation's owner freed in the arena. */
  readonly freedBytes: number;
}

const NO_POOL = 'version runs on the native executor: it has no worker pool';

export class WorkerGenerations {
  /** The generation new tasks go to; undefined while a native version runs on its executor. */
  private current: WorkerGeneration | undefined;
  /** A CPU pool being started on demand (native versions), shared by the tasks that wait for it. */
  private poolStarting: Promise<WorkerGeneration> | undefined;
  /** Generation 1 is started at load (onnxruntime versions); later ones count on from 2. */
  private nextGeneration = 2;
  /** The plan every worker ran at load; a new generation runs the same. */
  private plan: WarmupPlan | undefined;
  private restarting: Promise<RestartReport> | undefined;

  constructor(
    first: WorkerGeneration | undefined,
    /** The version's memory: generation owners are made and destroyed under it. */
    private readonly memory: VersionMemory,
    private readonly startPool: PoolStarter,
    /** The channel tensors a new generation is warmed with (undefined: no channels). */
    private readonly channels: () => ChannelTensors | undefined,
  ) {
    this.current = first;
  }

  /** The current generation's pool; undefined while on the executor. */
  get pool(): ModelPool | undefined {
    return this.current?.pool;
  }

  /** Remembers the load's warm-up plan: every later generation is warmed with it. */
  usePlan(plan: WarmupPlan): void {
    this.plan = plan;
  }

  /** The generation serving now and its live worker thread ids (number 0, no threads: on the executor). */
  get generation(): { readonly number: number; readonly threadIds: readonly number[] } {
    return { number: this.current?.number ?? 0, threadIds: this.pool?.threadIds ?? [] };
  }

  /** Bytes the current generation's owner holds in the arena (the ledger's own count). */
  get arenaBytes(): number {
    return this.current === undefined ? 0 : this.memory.generationBytes(this.current.owner);
  }

  /** Memory figures of the current generation's workers (see ModelPool.workerStats); none on the executor. */
  workerStats(timeoutMs: number): Promise<WorkerStats[]> {
    return this.pool?.workerStats(timeoutMs) ?? Promise.resolve([]);
  }

  /**
   * The onnxruntime pool, started and warmed with the load's plan on first
   * need (a native version that moved to CPU). Concurrent callers share one start.
   */
  ensurePool(): Promise<ModelPool> {
    if (this.current !== undefined) return Promise.resolve(this.current.pool);
    this.poolStarting ??= this.startOnDemand().finally(() => {
      this.poolStarting = undefined;
    });
    return this.poolStarting.then((generation) => generation.pool);
  }

  /**
   * Starts the next generation's pool and warms it with the load's plan; a
   * pool that fails to start or warm is closed and its owner destroyed.
   */
  private async startGeneration(): Promise<WorkerGeneration> {
    const number = this.nextGeneration++;
    const owner = this.memory.createGenerationOwner(number);
    let pool: ModelPool | undefined;
    try {
      pool = await this.startPool(number, owner);
      await pool.warmUp(this.plan ?? { samples: [], delayMs: 0 }, this.channels());
    } catch (err) {
      await pool?.close();
      this.memory.destroyGenerationOwner(owner);
      throw err;
    }
    return { number, owner, pool };
  }

  private async startOnDemand(): Promise<WorkerGeneration> {
    const generation = await this.startGeneration();
    // Charged best-effort: the requests waiting for this pool must not fail on it.
    try {
      this.memory.chargeFootprint(generation.pool.footprintBytes);
    } catch {
      // Over the host quota: the pool still serves; the patrol and metrics show the usage.
    }
    this.current = generation;
    return generation;
  }

  /**
   * Closes the CPU pool of a native version that is back on its executor:
   * the pool finishes its tasks and goes, with its host footprint.
   * `stillRetiring` is asked once any on-demand start settled, so a version
   * that moved to CPU again meanwhile keeps its pool.
   */
  async retire(stillRetiring: () => boolean): Promise<void> {
    await this.poolStarting?.catch(() => undefined);
    const old = this.current;
    if (old === undefined || !stillRetiring()) return;
    this.current = undefined;
    await old.pool.close();
    this.memory.destroyGenerationOwner(old.owner);
    this.memory.releaseFootprint();
  }

  get isRestarting(): boolean {
    return this.restarting !== undefined;
  }

  /**
   * A rolling restart: starts a new generation with the same options, warms it
   * with the load's plan, switches dispatch to it (then calls `switched`), lets
   * the old one finish its tasks (piscina's close waits for them), stops it,
   * and destroys its arena owner. Concurrent calls share one restart. A new
   * generation that fails to start or warm is discarded and the old one keeps
   * serving (the promise rejects); so is one whose version stopped serving
   * meanwhile (`notServing` names its state, undefined while it serves).
   */
  restart(notServing: () => string | undefined, switched: () => void): Promise<RestartReport> {
    if (this.current === undefined) return Promise.reject(new Error(NO_POOL));
    this.restarting ??= this.restartNow(notServing, switched).finally(() => {
      this.restarting = undefined;
    });
    return this.restarting;
  }

  private async restartNow(notServing: () => string | undefined, switched: () => void): Promise<RestartReport> {
    const started = performance.now();
    const old = this.current;
    if (old === undefined) throw new Error(NO_POOL);
    const { number, owner, pool } = await this.startGeneration();
    const state = notServing();
    if (state !== undefined) {
      // Unloaded meanwhile (unload waits for this restart): never switch to it.
      await pool.close();
      this.memory.destroyGenerationOwner(owner);
      throw new Error(`version became ${state} during the restart`);
    }
    const oldThreadIds = old.pool.threadIds;
    if (this.current !== old) {
      // Retired meanwhile (the version went back to its executor): never switch to it.
      await pool.close();
      this.memory.destroyGenerationOwner(owner);
      throw new Error('the worker pool was retired during the restart');
    }
    this.current = { number, owner, pool };
    switched();
    const switchMs = performance.now() - started;
    // Tasks already handed to the old pool finish there; nothing new reaches it.
    await old.pool.close();
    const freedBytes = this.memory.destroyGenerationOwner(old.owner);
    return {
      fromGeneration: old.number,
      toGeneration: number,
      oldThreadIds,
      newThreadIds: pool.threadIds,
      switchMs,
      totalMs: performance.now() - started,
      freedBytes,
    };
  }

  /** Waits for a restart in progress to finish or discard its new generation; never rejects. */
  async restartSettled(): Promise<void> {
    await this.restarting?.catch(() => undefined);
  }

  /** Closes the current pool only (a load being aborted: a pending warm-up rejects). */
  async closeCurrent(): Promise<void> {
    await this.pool?.close();
  }

  /** Closes the pool for good, after any on-demand start settled (unload). */
  async close(): Promise<void> {
    await this.poolStarting?.catch(() => undefined);
    await this.pool?.close();
  }

  /** Tells every pool, started or starting, to stop without waiting for it (an abandoned load). */
  abandon(): void {
    this.pool?.abandon();
    void this.poolStarting?.then((generation) => generation.pool.abandon(), () => undefined);
  }

  /** Live worker threads, queued tasks, instances and measured footprint of the current pool (0 on the executor). */
  get threads(): number {
    return this.pool?.threads ?? 0;
  }

  get queueSize(): number {
    return this.pool?.queueSize ?? 0;
  }

  get instances(): number {
    return this.pool?.instances ?? 0;
  }

  get footprintBytes(): number {
    return this.pool?.footprintBytes ?? 0;
  }
}
