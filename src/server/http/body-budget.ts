/**
 * The HTTP door's process-wide budget of body bytes in flight: every byte a
 * request body holds in memory, as received and as inflated (gzip, deflate),
 * from its first chunk until its answer is sent. Each request is bounded by
 * --max-message-size already; this bounds them all together, so many
 * concurrent large or compressed bodies (16 gzip bombs, each inflating to the
 * limit) cannot add up to the container's memory.
 *
 * A request that would pass the budget is refused 503 with `Retry-After`,
 * naming the flag: it is the server's momentary state, not the request, that
 * is wrong, and a retry is right. Bytes are charged chunk by chunk as they
 * arrive (never a declared length), and released once, when the answer is
 * sent or the connection closes.
 *
 * With front-door threads the main thread's REST server and every door
 * thread's share one count (a BodyBudgetShare's `memory`, a SharedArrayBuffer
 * posted to each door thread), so the flag bounds the process, not each
 * thread. Charges and refunds are atomic (a compare-and-swap on the count);
 * each BodyBudget object, with its leases, belongs to one thread.
 *
 * Beside the total, `memory` holds one word per thread (its slot: the main
 * thread's, then one per door index), the bytes that thread holds now. A
 * door thread that dies cannot release its leases; the main thread then
 * takes the dead thread's word off the total (`forgetThread`), so its bytes
 * are not held against the others for good.
 */
import type { ServerResponse } from 'node:http';
import { HttpFramingError } from './http-reply.js';

/** Seconds a client refused for the budget is told to wait. */
export const BUDGET_RETRY_AFTER_S = 1;

/** The word of `memory` that holds the total; a slot's word is 1 + slot. */
const TOTAL = 0;

/** The main thread's slot in a shared budget. */
export const MAIN_THREAD_SLOT = 0;

/** Door thread `index`'s slot in a shared budget (the main thread's is 0). */
export function doorThreadSlot(index: number): number {
  return 1 + index;
}

/**
 * One thread's place in a budget several threads share: the count's memory
 * (BodyBudget.newMemory) and the thread's own word in it. Plain data: it
 * crosses postMessage (the SharedArrayBuffer stays shared).
 */
export interface BodyBudgetShare {
  readonly memory: SharedArrayBuffer;
  /** MAIN_THREAD_SLOT, or doorThreadSlot(index); each slot is one live thread's at a time. */
  readonly slot: number;
}

export class BodyBudget {
  /** [TOTAL]: bytes held now, all requests of every thread sharing the memory; [1 + slot]: bytes each thread holds. */
  private readonly words: BigInt64Array;
  /** This thread's word in `words`. */
  private readonly own: number;
  private readonly limit: bigint;

  /** `share`: this thread's place in a count other threads share; absent: a count of its own. */
  constructor(
    readonly limitBytes: number,
    share?: BodyBudgetShare,
  ) {
    this.words = wordsOf(share ?? { memory: BodyBudget.newMemory(1), slot: MAIN_THREAD_SLOT });
    this.own = 1 + (share?.slot ?? MAIN_THREAD_SLOT);
    this.limit = BigInt(limitBytes);
  }

  /** A count at 0 for `threads` threads (slots 0..threads-1), which will share one budget. */
  static newMemory(threads: number): SharedArrayBuffer {
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`a body budget needs at least 1 thread; got ${threads}`);
    return new SharedArrayBuffer((1 + threads) * BigInt64Array.BYTES_PER_ELEMENT);
  }

  /**
   * The thread of `share` has exited: the bytes it still held (leases it
   * never released) go back to the budget, and its word is 0 again. Main
   * thread only, after the thread's 'exit' and before a replacement on the
   * same slot starts (a dead thread writes nothing, so nothing races the
   * exchange; the replacement starts from 0). Returns the bytes given back.
   *
   * A thread terminated between the two steps of a charge (the total, then
   * its word) or of a refund (its word, then the total) leaves that one chunk
   * on the total: the order errs towards refusing, never towards letting the
   * threads hold more than the limit.
   */
  static forgetThread(share: BodyBudgetShare): number {
    const words = wordsOf(share);
    const held = Atomics.exchange(words, 1 + share.slot, 0n);
    Atomics.sub(words, TOTAL, held);
    return Number(held);
  }

  /** Bytes held now, all requests of every thread together. */
  get inFlight(): number {
    return Number(Atomics.load(this.words, TOTAL));
  }

  /** Bytes this thread's requests hold now. */
  get heldHere(): number {
    return Number(Atomics.load(this.words, this.own));
  }

  /** A lease for one request's body, returned to the budget when `response` closes. */
  lease(response: ServerResponse): BodyLease {
    const lease = new BodyLease(this);
    response.once('close', () => lease.release());
    return lease;
  }

  /** @internal (BodyLease) */
  charge(bytes: number): void {
    const more = BigInt(bytes);
    for (;;) {
      const used = Atomics.load(this.words, TOTAL);
      if (used + more > this.limit) {
        throw new HttpFramingError(
          503,
          `the server is holding ${used} bytes of request bodies, and ${bytes} more would pass its budget of ${this.limitBytes} bytes ` +
            `(--http-body-budget); retry in ${BUDGET_RETRY_AFTER_S} s`,
          { 'retry-after': String(BUDGET_RETRY_AFTER_S) },
        );
      }
      // Another thread charged or refunded in between: decide again on the new count.
      if (Atomics.compareExchange(this.words, TOTAL, used, used + more) === used) break;
    }
    // Total first, then this thread's word: see forgetThread.
    Atomics.add(this.words, this.own, more);
  }

  /** @internal (BodyLease) */
  refund(bytes: number): void {
    const less = BigInt(bytes);
    // This thread's word first, then the total: see forgetThread.
    Atomics.sub(this.words, this.own, less);
    Atomics.sub(this.words, TOTAL, less);
  }
}

/** `share`'s memory as words, checked to hold its slot. */
function wordsOf(share: BodyBudgetShare): BigInt64Array {
  const words = new BigInt64Array(share.memory);
  if (!Number.isInteger(share.slot) || share.slot < 0 || 1 + share.slot >= words.length) {
    throw new RangeError(`body budget slot ${share.slot} is outside its memory's ${words.length - 1} thread slots`);
  }
  return words;
}

/** One request's share of the budget; `release` returns all of it (later calls do nothing). */
export class BodyLease {
  private held = 0;
  private released = false;

  constructor(private readonly budget: BodyBudget) {}

  /** Charges `bytes` more to the request; throws 503 when the budget cannot take them. */
  charge(bytes: number): void {
    if (this.released) return;
    this.budget.charge(bytes);
    this.held += bytes;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.refund(this.held);
    this.held = 0;
  }
}
