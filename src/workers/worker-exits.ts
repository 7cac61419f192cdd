/**
 * A pool's worker deaths, known from the workers' exits, not from the wording
 * of the error piscina rejects a task with.
 *
 * Each worker of a pool claims one slot of a shared table when it starts
 * (`claimTaskSlot`, its thread id) and writes the id of the task it runs into
 * that slot when the task starts. The main thread sees every Worker this
 * thread creates (process 'worker'); when one exits, the ledger of the pool
 * whose table holds its thread id reads the task in its slot and records that
 * the task died with exit code N. piscina rejects that task from inside the
 * same 'exit' event, so the record is there by the time the pool's `await`
 * resumes: `settle(taskId)` then says whether, and how, the task's worker died.
 *
 * A task can also die with a worker that never started it: piscina had
 * posted it to a worker that exited (idle from its own point of view, say
 * after a natively handed batch ended it) before reading it. That worker's
 * slot names no task, so its exit is kept as unclaimed until the event loop
 * moves on (setImmediate): piscina rejects the tasks of an exiting worker
 * from inside that worker's 'exit' event, so their rejections are handled
 * within the same turn, before the unclaimed exit is dropped. One unclaimed
 * exit explains at most one failed task (a worker runs one task at a time).
 *
 * Cost per task: one Atomics.store in the worker, one Map set and delete in
 * the main thread. The table is read only when a worker exits.
 *
 * Thread-safety: a TaskLedger belongs to the main thread that created it (the
 * pool's owner). The table is shared with the workers: each slot's owner cell
 * is claimed by compare-exchange (a worker) and freed by a plain store (the
 * main thread, after that worker exited); each task cell is written only by
 * its slot's worker and read by the main thread after that worker exited.
 */
import { threadId, type Worker } from 'node:worker_threads';

/** Int32 cells per slot: [owner thread id (0: free), running task id (0: none)]. */
const CELLS = 2;

/** How a task's worker ended while the task was running. */
export interface WorkerExit {
  readonly threadId: number;
  readonly exitCode: number;
}

/** The ledgers of live pools, told of every exit of a Worker this thread created. */
const ledgers = new Set<TaskLedger>();
let watching = false;

/**
 * One 'exit' listener per Worker, whatever the number of pools (a listener
 * per pool per worker would pass EventEmitter's leak warning at 11 pools).
 * The thread id is read now: a Worker reports -1 once it has exited.
 */
function watchWorkers(): void {
  if (watching) return;
  watching = true;
  process.on('worker', (worker: Worker) => {
    const id = worker.threadId;
    worker.once('exit', (exitCode: number) => {
      for (const ledger of ledgers) ledger.workerExited(id, exitCode);
    });
  });
}

export class TaskLedger {
  /** Shared with the pool's workers (WorkerInitData.taskSlots). */
  readonly table: SharedArrayBuffer;
  readonly #cells: Int32Array;
  /** Tasks submitted and not yet settled; a value once the task's worker exited under it. */
  readonly #running = new Map<number, WorkerExit | undefined>();
  /** Exits this turn of this pool's workers that named no running task (see above). */
  readonly #unclaimed: WorkerExit[] = [];
  #nextId = 1;

  /**
   * `slots` bounds the workers alive at once that can report their task: a
   * pool's threads, plus replacements that start before a dead worker's exit
   * is seen (its slot is freed on that exit).
   */
  constructor(slots: number) {
    this.table = new SharedArrayBuffer(slots * CELLS * Int32Array.BYTES_PER_ELEMENT);
    this.#cells = new Int32Array(this.table);
    watchWorkers();
    ledgers.add(this);
  }

  /** A fresh task id (never 0; wraps after 2^31 tasks, far more than ever run at once). */
  begin(): number {
    const id = this.#nextId;
    this.#nextId = id >= 0x7fffffff ? 1 : id + 1;
    this.#running.set(id, undefined);
    return id;
  }

  /** Forgets task `id`, which succeeded. */
  settle(id: number): void {
    this.#running.delete(id);
  }

  /**
   * Forgets task `id`, which failed: how its worker exited under it, if it
   * did. A task its worker marked is matched exactly; otherwise an exit this
   * turn of one of this pool's workers that had not started a task accounts
   * for it (and is used up).
   */
  settleFailed(id: number): WorkerExit | undefined {
    const exit = this.#running.get(id);
    this.#running.delete(id);
    return exit ?? this.#unclaimed.shift();
  }

  /** Called for every exit of a Worker this thread created; ignores other pools' workers. */
  workerExited(workerThreadId: number, exitCode: number): void {
    const cells = this.#cells;
    for (let slot = 0; slot < cells.length; slot += CELLS) {
      if (Atomics.load(cells, slot) !== workerThreadId) continue;
      const task = Atomics.load(cells, slot + 1);
      Atomics.store(cells, slot + 1, 0);
      Atomics.store(cells, slot, 0);
      const exit = { threadId: workerThreadId, exitCode };
      if (task !== 0 && this.#running.has(task)) {
        this.#running.set(task, exit);
      } else {
        if (this.#unclaimed.length === 0) setImmediate(() => (this.#unclaimed.length = 0)).unref();
        this.#unclaimed.push(exit);
      }
      return;
    }
  }

  /** Stops listening (the pool closed). Tasks still running keep whatever was recorded. */
  close(): void {
    ledgers.delete(this);
  }
}

/**
 * The worker's end (worker thread): claims a free slot of `table` for this
 * thread. Returns the function that marks a task as running here (0: none);
 * a no-op when every slot is taken, in which case a death of this worker is
 * not told apart from any other failure of its task.
 */
export function claimTaskSlot(table: SharedArrayBuffer | undefined): (taskId: number) => void {
  if (table === undefined) return () => undefined;
  const cells = new Int32Array(table);
  for (let slot = 0; slot < cells.length; slot += CELLS) {
    if (Atomics.compareExchange(cells, slot, 0, threadId) === 0) {
      return (taskId) => Atomics.store(cells, slot + 1, taskId);
    }
  }
  return () => undefined;
}
