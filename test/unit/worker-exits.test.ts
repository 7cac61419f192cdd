// A pool's task table (src/workers/worker-exits.ts) with real worker threads:
// a task is known to have died with its worker from the worker's exit (its
// code), never from an error's wording; a task the worker finished and a
// worker of another table take no task down; the exit of a worker that had
// not started a task explains one failed task, in that turn only.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskLedger } from '../../src/workers/worker-exits.js';

// Workers cannot run TypeScript: they load the compiled twin, as piscina's do.
const compiled = pathToFileURL(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'src', 'workers', 'worker-exits.js'),
).href;

/**
 * A worker that claims a slot of `table`, marks `taskId` as running, then
 * clears it when `finish` is set, and exits with `exitCode`.
 */
function runWorker(table: SharedArrayBuffer, taskId: number, exitCode: number, finish = false): Promise<number> {
  // taskId 0: the worker claims its slot and exits without starting a task.
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    import(workerData.module).then(({ claimTaskSlot }) => {
      const mark = claimTaskSlot(workerData.table);
      mark(workerData.taskId);
      if (workerData.finish) mark(0);
      process.exit(workerData.exitCode);
    });
  `;
  const worker = new Worker(code, { eval: true, workerData: { module: compiled, table, taskId, exitCode, finish } });
  return new Promise((resolve) => worker.once('exit', resolve));
}

const ledgers: TaskLedger[] = [];
function ledger(slots: number): TaskLedger {
  const made = new TaskLedger(slots);
  ledgers.push(made);
  return made;
}

afterEach(() => {
  for (const made of ledgers.splice(0)) made.close();
});

describe('TaskLedger', () => {
  it("records the exit code of the worker that died running a task, by the task's id", async () => {
    const tasks = ledger(2);
    const id = tasks.begin();
    expect(await runWorker(tasks.table, id, 70)).toBe(70);
    const exit = tasks.settleFailed(id);
    expect(exit?.exitCode).toBe(70);
    expect(exit?.threadId).toBeGreaterThan(0);
    // Settled once: the record is gone.
    expect(tasks.settleFailed(id)).toBeUndefined();
  });

  it('takes down no task when the worker cleared its mark before exiting', async () => {
    const tasks = ledger(2);
    const id = tasks.begin();
    await runWorker(tasks.table, id, 0, true);
    // Its exit was idle, so it may explain one failure this turn; it is no record of this task.
    await new Promise((resolve) => setImmediate(resolve));
    expect(tasks.settleFailed(id)).toBeUndefined();
  });

  it("ignores the exit of another table's worker, and frees the slot of a worker that exited", async () => {
    const mine = ledger(1);
    const other = ledger(1);
    const id = mine.begin();
    const otherId = other.begin();
    await runWorker(other.table, otherId, 70);
    expect(mine.settleFailed(id)).toBeUndefined();
    expect(other.settleFailed(otherId)?.exitCode).toBe(70);
    // One slot: the dead worker's was freed on its exit, so the next worker can claim it.
    const again = other.begin();
    await runWorker(other.table, again, 71);
    expect(other.settleFailed(again)?.exitCode).toBe(71);
  });

  it('records nothing for a task that was already settled when its worker exited', async () => {
    const tasks = ledger(1);
    const id = tasks.begin();
    tasks.settle(id);
    await runWorker(tasks.table, id, 70);
    await new Promise((resolve) => setImmediate(resolve));
    expect(tasks.settleFailed(id)).toBeUndefined();
  });

  it('lets the exit of a worker that had started no task explain one failed task, in the same turn only', async () => {
    const tasks = ledger(2);
    const [posted, other] = [tasks.begin(), tasks.begin()];
    // As piscina does: the task was posted to a worker that exited before reading it.
    await runWorker(tasks.table, 0, 70);
    expect(tasks.settleFailed(posted)?.exitCode).toBe(70);
    // Used up: it explains no second failure.
    expect(tasks.settleFailed(other)).toBeUndefined();
    const late = tasks.begin();
    await runWorker(tasks.table, 0, 70);
    await new Promise((resolve) => setImmediate(resolve));
    expect(tasks.settleFailed(late)).toBeUndefined();
  });

  it('hands out distinct non-zero ids', () => {
    const tasks = ledger(1);
    const ids = Array.from({ length: 100 }, () => tasks.begin());
    expect(new Set(ids).size).toBe(100);
    expect(ids).not.toContain(0);
  });
});
