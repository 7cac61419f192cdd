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
 * One per REST server (main thread or one door thread); plain fields.
 */
import type { ServerResponse } from 'node:http';
import { HttpFramingError } from './http-reply.js';

/** Seconds a client refused for the budget is told to wait. */
export const BUDGET_RETRY_AFTER_S = 1;

export class BodyBudget {
  private used = 0;

  constructor(readonly limitBytes: number) {}

  /** Bytes held now, all requests together. */
  get inFlight(): number {
    return this.used;
  }

  /** A lease for one request's body, returned to the budget when `response` closes. */
  lease(response: ServerResponse): BodyLease {
    const lease = new BodyLease(this);
    response.once('close', () => lease.release());
    return lease;
  }

  /** @internal (BodyLease) */
  charge(bytes: number): void {
    if (this.used + bytes > this.limitBytes) {
      throw new HttpFramingError(
        503,
        `the server is holding ${this.used} bytes of request bodies, and ${bytes} more would pass its budget of ${this.limitBytes} bytes ` +
          `(--http-body-budget); retry in ${BUDGET_RETRY_AFTER_S} s`,
        { 'retry-after': String(BUDGET_RETRY_AFTER_S) },
      );
    }
    this.used += bytes;
  }

  /** @internal (BodyLease) */
  refund(bytes: number): void {
    this.used -= bytes;
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
