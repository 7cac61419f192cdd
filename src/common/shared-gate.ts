/**
 * A gate in shared memory that several threads pass through and one thread
 * closes: the front-door threads (server/door-threads.ts) serve a model
 * version's requests through its gate, and the main thread closes it when the
 * version unloads, then waits until every request that passed has left.
 *
 * Int32 words in a SharedArrayBuffer: [0] open (1) or closed (0), then one
 * count of requests inside per door thread (each door writes only its own,
 * so the owner can forget a door thread that died with requests inside). A
 * door enters by counting itself in first and reading the state second; the
 * closer writes the state first and reads the counts second. With
 * sequentially consistent Atomics, one of the two sees the other's write
 * (Dekker's pattern): either the entering request sees the gate closed (and
 * leaves at once, never running), or the closer sees it inside (and waits
 * for it). So once `close()` has resolved, no request passes and none is
 * inside.
 *
 * Thread-safety: a door's `enter`/`leave` from that door's thread only (its
 * `door` index); `close` and `forget` from the owner's (the main thread's).
 * Structured clone of the buffer shares it.
 */

/** Atomics.waitAsync (Node 16+, V8); the project's TypeScript lib (ES2022) does not declare it. */
const waitAsync = (Atomics as unknown as {
  waitAsync(array: Int32Array, index: number, value: number, timeoutMs: number): { async: boolean; value: unknown };
}).waitAsync;

const STATE = 0;
const OPEN = 1;
const CLOSED = 0;

export class SharedGate {
  private readonly words: Int32Array;

  /** A new open gate for `doors` door threads (door indices 0..doors-1). */
  static create(doors: number): SharedGate {
    if (!Number.isInteger(doors) || doors < 1) throw new TypeError(`SharedGate: doors must be an integer >= 1, got ${doors}`);
    const gate = new SharedGate(new SharedArrayBuffer((1 + doors) * Int32Array.BYTES_PER_ELEMENT));
    Atomics.store(gate.words, STATE, OPEN);
    return gate;
  }

  /** Another thread's gate (its `buffer`). */
  constructor(buffer: SharedArrayBuffer) {
    if (buffer.byteLength < 2 * Int32Array.BYTES_PER_ELEMENT || buffer.byteLength % Int32Array.BYTES_PER_ELEMENT !== 0) {
      throw new TypeError(`SharedGate: expected a buffer of at least 2 Int32 words, got ${buffer.byteLength} bytes`);
    }
    this.words = new Int32Array(buffer);
  }

  /** What another thread passes to the constructor to share this gate. */
  get buffer(): SharedArrayBuffer {
    return this.words.buffer as SharedArrayBuffer;
  }

  get doors(): number {
    return this.words.length - 1;
  }

  /** Door `door` passes: true when open (call `leave(door)` once done), false when closed (nothing to undo). */
  enter(door: number): boolean {
    const slot = this.slotOf(door);
    Atomics.add(this.words, slot, 1);
    if (Atomics.load(this.words, STATE) === OPEN) return true;
    this.leave(door);
    return false;
  }

  /** One request of door `door` that entered has left. */
  leave(door: number): void {
    const slot = this.slotOf(door);
    if (Atomics.sub(this.words, slot, 1) === 1) Atomics.notify(this.words, slot);
  }

  /** Requests inside now, all doors (a reading; it may change at once). */
  get inside(): number {
    let inside = 0;
    for (let slot = 1; slot < this.words.length; slot += 1) inside += Atomics.load(this.words, slot);
    return inside;
  }

  get isOpen(): boolean {
    return Atomics.load(this.words, STATE) === OPEN;
  }

  /** Door `door`'s thread is gone: its requests will never leave, so they no longer count. */
  forget(door: number): void {
    const slot = this.slotOf(door);
    Atomics.store(this.words, slot, 0);
    Atomics.notify(this.words, slot);
  }

  /** Closes the gate; resolves once no request is inside. Safe to call again. */
  async close(): Promise<void> {
    Atomics.store(this.words, STATE, CLOSED);
    for (let slot = 1; slot < this.words.length; slot += 1) {
      for (let inside = Atomics.load(this.words, slot); inside !== 0; inside = Atomics.load(this.words, slot)) {
        // Wakes on the door's last leave (or at once if the count moved meanwhile). The 1 s timeout only
        // bounds a wait whose notify raced ahead of it; the loop reads the count again either way.
        const wait = waitAsync(this.words, slot, inside, 1000);
        if (wait.async) await wait.value;
      }
    }
  }

  private slotOf(door: number): number {
    const slot = door + 1;
    if (!Number.isInteger(door) || slot < 1 || slot >= this.words.length) {
      throw new RangeError(`SharedGate: door must be an integer in [0, ${this.words.length - 1}), got ${door}`);
    }
    return slot;
  }
}
