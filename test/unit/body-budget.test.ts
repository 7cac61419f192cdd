// --http-body-budget's count shared by several BodyBudgets (the main thread's
// REST server and each front-door thread's): charges of one are seen by all,
// the limit holds for them together, and real worker_threads charging and
// refunding at once leave the count exact. The workers load the compiled
// module (workers cannot run TypeScript) and get the count by structured
// clone, as a door thread gets it in its settings.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BodyBudget } from '../../src/server/http/body-budget.js';
import { HttpFramingError } from '../../src/server/http/http-reply.js';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'src');
const budgetModule = pathToFileURL(path.join(dist, 'server', 'http', 'body-budget.js')).href;

const doorCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
import(data.budgetModule).then(({ BodyBudget }) => {
  const budget = new BodyBudget(data.limit, data.memory);
  // All start together, so their charges interleave.
  const start = new Int32Array(data.start);
  Atomics.add(start, 0, 1);
  Atomics.wait(start, 1, 0);
  let refused = 0;
  let overLimit = 0;
  const held = [];
  for (let i = 0; i < data.rounds; i += 1) {
    const bytes = 1 + ((i * 7919 + data.seed) % 997);
    try {
      budget.charge(bytes);
      held.push(bytes);
      if (budget.inFlight > data.limit) overLimit += 1;
    } catch {
      refused += 1;
    }
    if (held.length > 6 || (i % 9 === 0 && held.length > 0)) budget.refund(held.shift());
  }
  for (const bytes of held) budget.refund(bytes);
  parentPort.postMessage({ refused, overLimit });
});
`;

function runDoor(workerData: object): Promise<{ refused: number; overLimit: number }> {
  const worker = new Worker(doorCode, { eval: true, workerData });
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was done`)));
  });
}

describe('BodyBudget shared between threads', () => {
  it('counts the charges of every budget on one memory against one limit', () => {
    const main = new BodyBudget(1000);
    const door = new BodyBudget(1000, main.memory);
    main.charge(600);
    expect(door.inFlight).toBe(600);
    let refusal: unknown;
    try {
      door.charge(500);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(HttpFramingError);
    expect((refusal as HttpFramingError).status).toBe(503);
    expect((refusal as HttpFramingError).message).toMatch(/holding 600 bytes .* 500 more would pass its budget of 1000 bytes \(--http-body-budget\)/);
    expect((refusal as HttpFramingError).headers).toEqual({ 'retry-after': '1' });
    door.charge(400);
    expect(main.inFlight).toBe(1000);
    main.refund(600);
    expect(door.inFlight).toBe(400);
    const lease = new BodyBudget(1000, main.memory);
    expect(lease.inFlight).toBe(400);
    door.refund(400);
    expect(main.inFlight).toBe(0);
  });

  it('keeps its own count without a memory given', () => {
    const a = new BodyBudget(100);
    const b = new BodyBudget(100);
    a.charge(100);
    expect(b.inFlight).toBe(0);
    expect(() => a.charge(1)).toThrow(/--http-body-budget/);
  });

  it('stays exact and under its limit with four threads charging and refunding at once', async () => {
    const memory = BodyBudget.newMemory();
    const start = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
    const limit = 4000;
    const running = [0, 1, 2, 3].map((seed) => runDoor({ budgetModule, memory, start, limit, rounds: 200_000, seed }));
    const gate = new Int32Array(start);
    for (let i = 0; Atomics.load(gate, 0) < 4; i += 1) {
      if (i === 1000) throw new Error('the workers never became ready');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    Atomics.store(gate, 1, 1);
    Atomics.notify(gate, 1);
    const outcomes = await Promise.all(running);
    expect(outcomes.map((outcome) => outcome.overLimit)).toEqual([0, 0, 0, 0]);
    // The limit was reached (each thread holds up to 7 bodies of up to 997 bytes), and every byte charged was refunded.
    expect(outcomes.reduce((sum, outcome) => sum + outcome.refused, 0)).toBeGreaterThan(0);
    expect(new BodyBudget(limit, memory).inFlight).toBe(0);
  });
});
