// --http-body-budget's count shared by several BodyBudgets (the main thread's
// REST server and each front-door thread's): charges of one are seen by all,
// the limit holds for them together, real worker_threads charging and
// refunding at once leave the count exact, and the bytes a thread held when
// it died go back to the budget. The workers load the compiled module
// (workers cannot run TypeScript) and get their share by structured clone, as
// a door thread gets it in its settings.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BodyBudget, doorThreadSlot, MAIN_THREAD_SLOT, type BodyBudgetShare } from '../../src/server/http/body-budget.js';
import { HttpFramingError } from '../../src/server/http/http-reply.js';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'src');
const budgetModule = pathToFileURL(path.join(dist, 'server', 'http', 'body-budget.js')).href;

const doorCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
import(data.budgetModule).then(({ BodyBudget }) => {
  const budget = new BodyBudget(data.limit, data.share);
  // All start together, so their charges interleave.
  const start = new Int32Array(data.start);
  Atomics.add(start, 0, 1);
  Atomics.wait(start, 1, 0);
  let refused = 0;
  let overLimit = 0;
  // Charges that found other threads' bytes on the count (more than this thread holds).
  let sawOthers = 0;
  let heldWrong = 0;
  const held = [];
  for (let i = 0; i < data.rounds; i += 1) {
    const bytes = 1 + ((i * 7919 + data.seed) % 997);
    try {
      budget.charge(bytes);
      held.push(bytes);
      if (budget.inFlight > data.limit) overLimit += 1;
      if (budget.inFlight > budget.heldHere) sawOthers += 1;
    } catch {
      refused += 1;
    }
    if (held.length > data.maxHeld - 1 || (i % 9 === 0 && held.length > 0)) budget.refund(held.shift());
    if (budget.heldHere !== held.reduce((sum, b) => sum + b, 0)) heldWrong += 1;
  }
  for (const bytes of held) budget.refund(bytes);
  parentPort.postMessage({ refused, overLimit, sawOthers, heldWrong, heldAtEnd: budget.heldHere });
});
`;

interface DoorOutcome {
  readonly refused: number;
  readonly overLimit: number;
  readonly sawOthers: number;
  readonly heldWrong: number;
  readonly heldAtEnd: number;
}

function runDoor(workerData: object): Promise<DoorOutcome> {
  const worker = new Worker(doorCode, { eval: true, workerData });
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was done`)));
  });
}

/** A door thread that charges `bytes` on its share, says so, and then holds them until it is terminated. */
const holdingCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
import(data.budgetModule).then(({ BodyBudget }) => {
  const budget = new BodyBudget(data.limit, data.share);
  for (const bytes of data.charges) budget.charge(bytes);
  parentPort.postMessage({ heldHere: budget.heldHere });
  setInterval(() => {}, 1000);
});
`;

describe('BodyBudget shared between threads', () => {
  it('counts the charges of every budget on one memory against one limit', () => {
    const memory = BodyBudget.newMemory(3);
    const main = new BodyBudget(1000, { memory, slot: MAIN_THREAD_SLOT });
    const door = new BodyBudget(1000, { memory, slot: doorThreadSlot(0) });
    main.charge(600);
    expect(door.inFlight).toBe(600);
    expect(door.heldHere).toBe(0);
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
    expect(door.heldHere).toBe(0);
    door.charge(400);
    expect(main.inFlight).toBe(1000);
    expect([main.heldHere, door.heldHere]).toEqual([600, 400]);
    main.refund(600);
    expect(door.inFlight).toBe(400);
    const other = new BodyBudget(1000, { memory, slot: doorThreadSlot(1) });
    expect(other.inFlight).toBe(400);
    door.refund(400);
    expect(main.inFlight).toBe(0);
    expect([main.heldHere, door.heldHere, other.heldHere]).toEqual([0, 0, 0]);
  });

  it('keeps its own count without a share given', () => {
    const a = new BodyBudget(100);
    const b = new BodyBudget(100);
    a.charge(100);
    expect(b.inFlight).toBe(0);
    expect(() => a.charge(1)).toThrow(/--http-body-budget/);
  });

  it('refuses a slot its memory has no word for, naming it', () => {
    const memory = BodyBudget.newMemory(2);
    expect(() => new BodyBudget(100, { memory, slot: doorThreadSlot(1) })).toThrow(/slot 2 is outside its memory's 2 thread slots/);
    expect(() => BodyBudget.newMemory(0)).toThrow(/at least 1 thread; got 0/);
  });

  it('gives back what a door thread held when it died, and its replacement starts from 0', async () => {
    const memory = BodyBudget.newMemory(3);
    const main = new BodyBudget(10_000, { memory, slot: MAIN_THREAD_SLOT });
    const survivor = new BodyBudget(10_000, { memory, slot: doorThreadSlot(1) });
    main.charge(1000);
    survivor.charge(2000);
    const share: BodyBudgetShare = { memory, slot: doorThreadSlot(0) };
    const worker = new Worker(holdingCode, { eval: true, workerData: { budgetModule, limit: 10_000, share, charges: [3000, 1500] } });
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    const holding = await new Promise<{ heldHere: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    expect(holding.heldHere).toBe(4500);
    expect(main.inFlight).toBe(7500);
    // Killed mid-hold: its leases are never released.
    await worker.terminate();
    await exited;
    expect(main.inFlight).toBe(7500);
    expect(BodyBudget.forgetThread(share)).toBe(4500);
    expect(main.inFlight).toBe(main.heldHere + survivor.heldHere);
    expect(main.inFlight).toBe(3000);
    // A second forget (nothing held) changes nothing.
    expect(BodyBudget.forgetThread(share)).toBe(0);
    const replacement = new BodyBudget(10_000, share);
    expect(replacement.heldHere).toBe(0);
    replacement.charge(7000);
    expect(() => replacement.charge(1)).toThrow(/holding 10000 bytes/);
    replacement.refund(7000);
    main.refund(1000);
    survivor.refund(2000);
    expect(main.inFlight).toBe(0);
  });

  it('stays exact and under its limit with four threads charging and refunding at once, on one count', async () => {
    const threads = 4;
    const memory = BodyBudget.newMemory(threads);
    const start = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
    const limit = 4000;
    // Each thread holds at most 3 bodies of up to 997 bytes (2991 < 4000): alone, none is ever refused; all four together can be.
    const maxHeld = 3;
    const running = Array.from({ length: threads }, (_, seed) =>
      runDoor({ budgetModule, share: { memory, slot: seed }, start, limit, maxHeld, rounds: 200_000, seed }),
    );
    const gate = new Int32Array(start);
    for (let i = 0; Atomics.load(gate, 0) < threads; i += 1) {
      if (i === 1000) throw new Error('the workers never became ready');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    Atomics.store(gate, 1, 1);
    Atomics.notify(gate, 1);
    const outcomes = await Promise.all(running);
    expect(outcomes.map((outcome) => outcome.overLimit)).toEqual([0, 0, 0, 0]);
    expect(outcomes.map((outcome) => outcome.heldWrong)).toEqual([0, 0, 0, 0]);
    expect(outcomes.map((outcome) => outcome.heldAtEnd)).toEqual([0, 0, 0, 0]);
    // Refusals can only come from the others' bytes on the same count (see maxHeld), and threads saw each other's bytes.
    expect(outcomes.reduce((sum, outcome) => sum + outcome.refused, 0)).toBeGreaterThan(0);
    expect(outcomes.filter((outcome) => outcome.sawOthers > 0).length).toBeGreaterThan(1);
    // Every byte charged was refunded, on the total and on each thread's word.
    expect(new BodyBudget(limit, { memory, slot: 0 }).inFlight).toBe(0);
    for (let slot = 0; slot < threads; slot += 1) expect(new BodyBudget(limit, { memory, slot }).heldHere).toBe(0);
  });
});
