/**
 * SharedGate (src/common/shared-gate.ts): the version gate front-door threads
 * pass and the main thread closes on unload. With a real worker thread
 * holding requests inside (the compiled SharedGate, as a door thread runs it): close() waits for them and resolves once the last
 * one leaves; after close nothing enters; forget() releases a dead door's
 * count; bad door indices are refused with the range.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { SharedGate } from '../../src/common/shared-gate.js';

/** The compiled module (npm test builds it first): the workers pass the gate with the real SharedGate. */
const GATE_MODULE = pathToFileURL(path.join(import.meta.dirname, '..', '..', 'dist', 'src', 'common', 'shared-gate.js')).href;

/** A worker that enters the gate `count` times as door `door`, reports, and leaves when told. */
function doorWorker(buffer: SharedArrayBuffer, door: number, count: number): Worker {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.module).then(({ SharedGate }) => {
      const gate = new SharedGate(workerData.buffer);
      let entered = 0;
      for (let i = 0; i < workerData.count; i++) if (gate.enter(workerData.door)) entered++;
      parentPort.postMessage({ entered });
      parentPort.once('message', () => {
        for (let i = 0; i < entered; i++) gate.leave(workerData.door);
        parentPort.postMessage({ left: entered });
      });
    });
  `;
  return new Worker(source, { eval: true, workerData: { buffer, door, count, module: GATE_MODULE } });
}

const next = (worker: Worker) => new Promise<Record<string, number>>((resolve) => worker.once('message', resolve));

describe('SharedGate', () => {
  it('lets doors in while open, and close() waits for those inside another thread', async () => {
    const gate = SharedGate.create(2);
    const worker = doorWorker(gate.buffer, 1, 3);
    try {
      expect(await next(worker)).toEqual({ entered: 3 });
      expect(gate.inside).toBe(3);
      let closed = false;
      const closing = gate.close().then(() => (closed = true));
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Closed for newcomers at once, still waiting for the three inside.
      expect(gate.isOpen).toBe(false);
      expect(gate.enter(0)).toBe(false);
      expect(closed).toBe(false);
      worker.postMessage('leave');
      expect(await next(worker)).toEqual({ left: 3 });
      await closing;
      expect(closed).toBe(true);
      expect(gate.inside).toBe(0);
    } finally {
      await worker.terminate();
    }
  });

  it('refuses entry from another thread once closed', async () => {
    const gate = SharedGate.create(1);
    await gate.close();
    const worker = doorWorker(gate.buffer, 0, 2);
    try {
      expect(await next(worker)).toEqual({ entered: 0 });
      expect(gate.inside).toBe(0);
    } finally {
      await worker.terminate();
    }
  });

  it("forgets a dead door's requests so close() does not wait for them", async () => {
    const gate = SharedGate.create(2);
    const shared = new SharedGate(gate.buffer);
    expect(shared.enter(1)).toBe(true);
    expect(shared.enter(0)).toBe(true);
    shared.leave(0);
    const closing = gate.close();
    gate.forget(1);
    // Woken by forget's notify, well before close's 1 s re-read would end the wait anyway.
    const settled = await Promise.race([closing.then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 300))]);
    expect(settled).toBe('closed');
    expect(gate.inside).toBe(0);
  });

  it('names the door range and the buffer size it expects', () => {
    const gate = SharedGate.create(2);
    expect(() => gate.enter(2)).toThrow('SharedGate: door must be an integer in [0, 2), got 2');
    expect(() => gate.enter(-1)).toThrow(RangeError);
    expect(() => SharedGate.create(0)).toThrow('SharedGate: doors must be an integer >= 1, got 0');
    expect(() => new SharedGate(new SharedArrayBuffer(4))).toThrow('expected a buffer of at least 2 Int32 words, got 4 bytes');
  });
});
