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
 * thread's share one count (`memory`, a SharedArrayBuffer posted to each
 * door thread), so the flag bounds the process, not each thread. Charges and
 * refunds are atomic (a compare-and-swap on the count); each BodyBudget
 * object, with its leases, belongs to one thread.
 */
import type { ServerResponse } from 'node:http';
import { HttpFramingError } from './http-reply.js';

/** Seconds a client refused for the budget is told to wait. */
export const BUDGET_RETRY_AFTER_S = 1;

export class BodyBudget {
  /** Bytes held now, all requests of every thread sharing `memory` (one BigInt64 word). */
  private readonly used: BigInt64Array;
  private readonly limit: bigint;

  /** `memory`: another thread's budget's `memory`, to share its count; absent: a count of its own. */
  constructor(
    readonly limitBytes: number,
    memory?: SharedArrayBuffer,
  ) {
    this.used = new BigInt64Array(memory ?? BodyBudget.newMemory());
    this.limit = BigInt(limitBytes);
  }

  /** A count at 0, for the threads that will share one budget. */
  static newMemory(): SharedArrayBuffer {
    return new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT);
  }

  /** The shared count, for the threads that share this budget. */
  get memory(): SharedArrayBuffer {
    return this.used.buffer as SharedArrayBuffer;
  }

  /** Bytes held now, all requests together. */
  get inFlight(): number {
    return Number(Atomics.load(this.used, 0));
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
      const used = Atomics.load(this.used, 0);
      if (used + more > this.limit) {
        throw new HttpFramingError(
          503,
          `the server is holding ${used} bytes of request bodies, and ${bytes} more would pass its budget of ${this.limitBytes} bytes ` +
            `(--http-body-budget); retry in ${BUDGET_RETRY_AFTER_S} s`,
          { 'retry-after': String(BUDGET_RETRY_AFTER_S) },
        );
      }
      // Another thread charged or refunded in between: decide again on the new count.
      if (Atomics.compareExchange(this.used, 0, used, used + more) === used) return;
    }
  }

  /** @internal (BodyLease) */
  refund(bytes: number): void {
    Atomics.sub(this.used, 0, BigInt(bytes));
  }
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
