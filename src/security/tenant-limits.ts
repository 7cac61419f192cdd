/**
 * Per-tenant admission limits, so one tenant cannot starve the rest: a
 * request rate (a token bucket) and a cap on requests in flight, both from
 * the tenants file (`"rate"`, `"burst"`, `"max_inflight"`).
 *
 * - **Rate.** Each tenant's bucket holds up to `burst` tokens and refills
 *   continuously at `rate` tokens per second; it starts full. A request takes
 *   one token. With no token left it is refused, and the message says when
 *   the next token arrives. A short burst above the rate is absorbed; a
 *   sustained rate above it is not.
 * - **In flight.** At most `maxInflight` of the tenant's requests are
 *   admitted and not yet answered (queued or running: both hold memory and a
 *   place in the model's queue, which other tenants' models do not share but
 *   the worker threads and the event loop do).
 *
 * A refused request fails RESOURCE_EXHAUSTED (kind 'rate_limited', HTTP 429)
 * with the limit named, and never reaches the model. A request refused for
 * its in-flight cap takes no token. A tenant without limits (or not in the
 * file) is never refused here.
 *
 * Two modes, one API:
 *
 * - **Local** (`new TenantLimiter(specs)`): plain fields on the one thread
 *   that admits (the main thread when the server has no front-door threads).
 *   Nothing is shared, and a request costs what it always did.
 * - **Shared** (`new TenantLimiter(specs, {shards})` on the main thread,
 *   `TenantLimiter.attach(limiter.share(), {shard})` on each front-door
 *   thread): every tenant's counts live in one SharedArrayBuffer, so the
 *   limits hold for the whole process, exactly, whichever thread admits.
 *   - In flight: one Int32 per tenant. A tenant without a rate is admitted
 *     by a compare-exchange loop (read n; n < max or refuse; CAS n → n+1;
 *     retry if another thread moved it), so the count is never above
 *     max_inflight, not even for an instant; release is Atomics.sub.
 *   - Rate: the bucket's tokens and last refill (two Float64 per tenant)
 *     change together, which one CAS cannot do, so they are read and written
 *     under a per-tenant lock: an Int32 taken by Atomics.compareExchange
 *     0 → 1 and freed by Atomics.exchange to 0 (a notify only when a waiter
 *     marked it 2). The section inside is a few float operations with no
 *     allocation or throw (the message is built after the unlock), so a
 *     waiter spins briefly; after
 *     SPINS_BEFORE_WAIT tries (the holder's thread was descheduled) it
 *     sleeps in Atomics.wait for at most LOCK_WAIT_MS, then tries again. A
 *     rate-limited tenant's in-flight check and count happen under the same
 *     lock (a request refused for its rate must not hold an in-flight place,
 *     even briefly, that another thread would see); release stays lock-free.
 *   - The clock: performance.now() is not one clock across threads. The
 *     web platform gives each worker its own time origin; Node 20 reports
 *     the process's timeOrigin in a worker but counts its now() from a base
 *     of its own (measured on this machine: a worker's reading and the main
 *     thread's, each against process.hrtime(), stood 0.01 to 0.45 ms apart,
 *     either sign), and (performance.timeOrigin + now()) would also mix in
 *     the wall clock each thread read at its start. process.hrtime() reads
 *     the same CLOCK_MONOTONIC in every thread (libuv's uv_hrtime) but
 *     allocates an array per call; so each thread measures once, when it
 *     builds its limiter, its offset from performance.now() to hrtime and
 *     reads `performance.now() + offset`: one process-wide monotonic clock,
 *     at performance.now()'s cost. A reading a hair behind the bucket's last
 *     refill (another thread's) adds nothing and never takes tokens away.
 *   - Each thread also counts its own share of every tenant's in-flight
 *     count (an Int32 per shard and tenant, next to the total): a door
 *     thread that dies holding requests never releases them, so the main
 *     thread takes its share off the totals (`releaseShard`) when it sees the
 *     exit, before a replacement attaches the same shard. (A thread
 *     terminated between the two adds of one admission leaves that one
 *     request counted: a window of two instructions.)
 *   - Refusals are counted in the buffer too, one Float64 window per shard
 *     (shard 0: the main thread; shard i + 1: door thread i), each written
 *     by its own thread only; `rejections()` sums them at scrape time, so a
 *     door's refusal is in the same scrape as the main thread's.
 *
 * The clock is injectable (`now`, milliseconds; tests refill the bucket by
 * moving it). A local limiter belongs to one thread; a shared one's state is
 * safe from any thread that attached it.
 */
import { echo } from '../common/echo.js';
import { ServingError } from '../common/serving-error.js';

/** One tenant's limits, as the tenants file gives them (tenancy/tenant-config.ts TenantLimitsConfig). */
export interface TenantLimitSpec {
  readonly tenant: string;
  /** Requests per second, > 0; undefined: no rate limit. */
  readonly rate?: number | undefined;
  /** Bucket size, an integer >= 1; default max(1, ceil(rate)). */
  readonly burst?: number | undefined;
  /** Requests admitted at once, an integer >= 1; undefined: no cap. */
  readonly maxInflight?: number | undefined;
}

/** Why a request was refused: the label value of hotpath_tenant_rejected_total{reason} (metric-names.ts). */
export { TENANT_LIMIT_REASONS, type TenantLimitReason } from '../observability/metric-names.js';
import { TENANT_LIMIT_REASONS, type TenantLimitReason } from '../observability/metric-names.js';

/** A request refused by its tenant's limits. */
export class TenantLimitError extends ServingError {
  override readonly name = 'TenantLimitError';
  constructor(
    readonly tenant: string,
    readonly reason: TenantLimitReason,
    message: string,
  ) {
    super('rate_limited', message);
  }
}

export interface TenantLimiterOptions {
  /** A monotonic clock in milliseconds; default performance.now (shared mode: the process-wide clock, see above). */
  readonly now?: () => number;
  /** Called once for each refused request on this thread (the metric, in local mode). */
  readonly onRejected?: (tenant: string, reason: TenantLimitReason) => void;
  /**
   * Shared mode: the threads that admit (the main thread and each front-door
   * thread), each counting its refusals in its own shard; this limiter is
   * shard 0. Undefined: local mode.
   */
  readonly shards?: number | undefined;
}

export interface AttachedTenantLimiterOptions extends Omit<TenantLimiterOptions, 'shards'> {
  /** This thread's shard, 1..shards-1 (door thread i: i + 1; shard 0 is the main thread's). */
  readonly shard: number;
}

/** What `attach` needs on another thread: plain data (the buffer is shared, not copied), from `share()`. */
export interface SharedTenantLimits {
  readonly specs: readonly TenantLimitSpec[];
  readonly shards: number;
  readonly memory: SharedArrayBuffer;
}

/** Refusals of one tenant for one reason, every thread together (`rejections()`). */
export interface TenantRejectionCount {
  readonly tenant: string;
  readonly reason: TenantLimitReason;
  readonly count: number;
}

/** Ends an admitted request's hold on its tenant's in-flight count; later calls do nothing. */
export type AdmissionRelease = () => void;

/** Which limit refuses, with the figures its message gives (built off the lock). */
type Refusal = { readonly reason: 'inflight'; readonly inflight: number } | { readonly reason: 'rate'; readonly tokens: number };

/** One tenant's counts, in one thread's fields or in the shared buffer. */
interface TenantSlot {
  /** The tenant's place in the spec list (its refusal cells). */
  readonly index: number;
  readonly rate: number | undefined;
  readonly burst: number;
  readonly maxInflight: number | undefined;
  /**
   * Takes an in-flight place and a token, or takes nothing and says which
   * limit refuses. `now` is read only for a bucket (a clock reading costs
   * about as much as the rest of an in-flight-only admission).
   */
  take(now: () => number): Refusal | undefined;
  /** What `take` would say now, taking nothing (the bucket is refilled). */
  peek(now: () => number): Refusal | undefined;
  release(): void;
  /** Puts one token back (capped at the burst). */
  refund(now: () => number): void;
  inflight(): number;
  tokens(now: () => number): number | undefined;
}

const NOTHING_TO_RELEASE: AdmissionRelease = () => {};

export class TenantLimiter {
  private readonly tenants = new Map<string, TenantSlot>();
  private readonly now: () => number;
  private readonly onRejected: ((tenant: string, reason: TenantLimitReason) => void) | undefined;
  /** Shared mode: the state (for `share`), and this thread's window of refusal counts; undefined: local. */
  private readonly sharing: { readonly data: SharedTenantLimits; readonly counts: Float64Array } | undefined;

  /**
   * Local mode, or with `shards` the main thread's shared limiter (see the
   * file comment). `joined` is `attach`'s alone: the shared state another
   * thread made and this thread's shard.
   */
  constructor(
    specs: readonly TenantLimitSpec[],
    options: TenantLimiterOptions = {},
    joined?: { readonly shared: SharedTenantLimits; readonly shard: number },
  ) {
    this.onRejected = options.onRejected;
    if (joined === undefined && options.shards === undefined) {
      this.sharing = undefined;
      this.now = options.now ?? (() => performance.now());
      const startMs = this.now();
      for (const { spec, burst } of checkedSpecs(specs)) {
        this.tenants.set(spec.tenant, new LocalSlot(spec.rate, burst, spec.maxInflight, startMs, this.tenants.size));
      }
      return;
    }
    this.now = options.now ?? sharedClock();
    let data: SharedTenantLimits;
    let shard: number;
    if (joined === undefined) {
      const shards = options.shards!;
      if (!(Number.isSafeInteger(shards) && shards >= 1)) {
        throw new RangeError(`tenant limits: 'shards': expected an integer >= 1, got ${String(shards)}`);
      }
      const checked = checkedSpecs(specs);
      data = { specs: checked.map(({ spec }) => spec), shards, memory: new SharedArrayBuffer(sharedBytes(checked.length, shards)) };
      shard = 0;
      const floats = new Float64Array(data.memory);
      const startMs = this.now();
      checked.forEach(({ burst }, index) => {
        floats[index * FLOATS_PER_TENANT + TOKENS] = burst;
        floats[index * FLOATS_PER_TENANT + REFILLED_AT] = startMs;
      });
    } else {
      ({ shared: data, shard } = joined);
    }
    const tenantCount = data.specs.length;
    const ints = new Int32Array(data.memory, intsOffset(tenantCount), tenantCount * INTS_PER_TENANT);
    const floats = new Float64Array(data.memory, 0, tenantCount * FLOATS_PER_TENANT);
    const window = tenantCount * TENANT_LIMIT_REASONS.length;
    this.sharing = { data, counts: new Float64Array(data.memory, countsOffset(tenantCount) + shard * window * 8, window) };
    const held = new Int32Array(data.memory, heldOffset(tenantCount, data.shards) + shard * tenantCount * 4, tenantCount);
    checkedSpecs(data.specs).forEach(({ spec, burst }, index) => {
      this.tenants.set(spec.tenant, new SharedSlot(spec.rate, burst, spec.maxInflight, ints, floats, held, index));
    });
  }

  /** The main thread's shared limiter on another thread (`share()`'s data, posted to it). */
  static attach(shared: SharedTenantLimits, options: AttachedTenantLimiterOptions): TenantLimiter {
    if (!(Number.isSafeInteger(options.shard) && options.shard >= 1 && options.shard < shared.shards)) {
      throw new RangeError(`tenant limits: 'shard': expected an integer in 1..${shared.shards - 1}, got ${String(options.shard)}`);
    }
    return new TenantLimiter(shared.specs, { now: options.now, onRejected: options.onRejected }, { shared, shard: options.shard });
  }

  /** What `attach` takes on another thread; throws for a local limiter (its state is this thread's alone). */
  share(): SharedTenantLimits {
    if (this.sharing === undefined) throw new Error('tenant limits: share() needs a shared limiter (the shards option); this one is local to its thread');
    return this.sharing.data;
  }

  /** Whether any tenant has a limit (a server without any skips admission entirely). */
  get active(): boolean {
    return this.tenants.size > 0;
  }

  /**
   * Admits one request of `tenant`, or throws TenantLimitError. The returned
   * release must be called when the request is answered (success or failure).
   */
  admit(tenant: string): AdmissionRelease {
    const slot = this.tenants.get(tenant);
    if (slot === undefined) return NOTHING_TO_RELEASE;
    const refusal = slot.take(this.now);
    if (refusal !== undefined) throw this.reject(tenant, slot, refusal);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      slot.release();
    };
  }

  /**
   * Puts back the token an admitted request took, when that request is
   * handed whole to another admission that takes its own (a front-door
   * thread forwarding it to the main thread): one request, one token.
   * Its release is still to be called.
   */
  refund(tenant: string): void {
    this.tenants.get(tenant)?.refund(this.now);
  }

  /**
   * Throws the TenantLimitError `admit` would throw now, taking nothing: the
   * gRPC door's admission (server/admission.ts) refuses from the metadata a
   * call its tenant cannot take, before its message is read. The request
   * that passes is admitted (and takes its token) once its model is known.
   */
  check(tenant: string): void {
    const slot = this.tenants.get(tenant);
    if (slot === undefined) return;
    const refusal = slot.peek(this.now);
    if (refusal !== undefined) throw this.reject(tenant, slot, refusal);
  }

  /** The tenant's admitted, unanswered requests, every thread's (0 for a tenant without limits). */
  inflight(tenant: string): number {
    return this.tenants.get(tenant)?.inflight() ?? 0;
  }

  /** The tenant's tokens now (fractional), or undefined without a rate limit. */
  tokens(tenant: string): number | undefined {
    return this.tenants.get(tenant)?.tokens(this.now);
  }

  /**
   * Shared mode: a thread that admitted with `shard` exited (a door thread
   * that died): the requests it held never release, so its share of every
   * tenant's in-flight count is taken off here, before a replacement
   * attaches the same shard. Its requests may still be queued or running in
   * the shared native batcher for a moment, so the tenant's real concurrency
   * can briefly exceed max_inflight (as a version's gate forgets a dead
   * door). Not covered: a thread killed inside a tenant's lock (only
   * `terminate()` after the drain can do that today) leaves the lock held,
   * and one killed between release()'s two counts leaks one place. Main
   * thread; does nothing in local mode.
   */
  releaseShard(shard: number): void {
    if (this.sharing === undefined) return;
    const { specs, shards, memory } = this.sharing.data;
    if (!(Number.isSafeInteger(shard) && shard >= 1 && shard < shards)) {
      throw new RangeError(`tenant limits: 'shard': expected an integer in 1..${shards - 1}, got ${String(shard)}`);
    }
    const ints = new Int32Array(memory, intsOffset(specs.length), specs.length * INTS_PER_TENANT);
    const held = new Int32Array(memory, heldOffset(specs.length, shards) + shard * specs.length * 4, specs.length);
    for (let index = 0; index < specs.length; index += 1) {
      const lost = Atomics.exchange(held, index, 0);
      if (lost !== 0) Atomics.sub(ints, index * INTS_PER_TENANT + INFLIGHT, lost);
    }
  }

  /** Shared mode: every thread's refusals so far, summed over the shards (the scrape); undefined in local mode. */
  rejections(): TenantRejectionCount[] | undefined {
    if (this.sharing === undefined) return undefined;
    const { specs, shards, memory } = this.sharing.data;
    const window = specs.length * TENANT_LIMIT_REASONS.length;
    const all = new Float64Array(memory, countsOffset(specs.length), window * shards);
    const counts: TenantRejectionCount[] = [];
    specs.forEach((spec, index) => {
      TENANT_LIMIT_REASONS.forEach((reason, r) => {
        let count = 0;
        for (let shard = 0; shard < shards; shard += 1) count += all[shard * window + index * TENANT_LIMIT_REASONS.length + r]!;
        counts.push({ tenant: spec.tenant, reason, count });
      });
    });
    return counts;
  }

  private reject(tenant: string, slot: TenantSlot, refusal: Refusal): TenantLimitError {
    if (this.sharing !== undefined) {
      // This thread's window: one writer, so a plain add.
      this.sharing.counts[slot.index * TENANT_LIMIT_REASONS.length + TENANT_LIMIT_REASONS.indexOf(refusal.reason)]! += 1;
    }
    this.onRejected?.(tenant, refusal.reason);
    const message = refusal.reason === 'inflight' ? inflightMessage(tenant, slot, refusal.inflight) : rateMessage(tenant, slot, refusal.tokens);
    return new TenantLimitError(tenant, refusal.reason, message);
  }
}

/** A tenant's counts in this thread's fields (local mode). */
class LocalSlot implements TenantSlot {
  private inflightCount = 0;
  private tokenCount: number;
  constructor(
    readonly rate: number | undefined,
    readonly burst: number,
    readonly maxInflight: number | undefined,
    private refilledAtMs: number,
    readonly index: number,
  ) {
    this.tokenCount = burst;
  }

  take(now: () => number): Refusal | undefined {
    if (this.maxInflight !== undefined && this.inflightCount >= this.maxInflight) return { reason: 'inflight', inflight: this.inflightCount };
    if (this.rate !== undefined) {
      this.refill(now());
      if (this.tokenCount < 1) return { reason: 'rate', tokens: this.tokenCount };
      this.tokenCount -= 1;
    }
    this.inflightCount += 1;
    return undefined;
  }

  peek(now: () => number): Refusal | undefined {
    if (this.maxInflight !== undefined && this.inflightCount >= this.maxInflight) return { reason: 'inflight', inflight: this.inflightCount };
    if (this.rate === undefined) return undefined;
    this.refill(now());
    return this.tokenCount < 1 ? { reason: 'rate', tokens: this.tokenCount } : undefined;
  }

  release(): void {
    this.inflightCount -= 1;
  }

  refund(now: () => number): void {
    if (this.rate === undefined) return;
    this.refill(now());
    this.tokenCount = Math.min(this.burst, this.tokenCount + 1);
  }

  inflight(): number {
    return this.inflightCount;
  }

  tokens(now: () => number): number | undefined {
    if (this.rate === undefined) return undefined;
    this.refill(now());
    return this.tokenCount;
  }

  private refill(nowMs: number): void {
    // As refilledTokens, on the fields (the hot path of a one-thread server).
    const elapsedMs = nowMs - this.refilledAtMs;
    if (elapsedMs <= 0) return;
    this.tokenCount = Math.min(this.burst, this.tokenCount + (elapsedMs * this.rate!) / 1000);
    this.refilledAtMs = nowMs;
  }
}
/**
 * A tenant's counts in the shared buffer (shared mode; see the file
 * comment for the scheme). Every thread's slot for the tenant has the same
 * limits (one spec list), so all of them take the same path: a tenant with
 * a rate is admitted under its lock by every thread.
 */
class SharedSlot implements TenantSlot {
  private readonly inflightAt: number;
  private readonly lockAt: number;
  private readonly tokensAt: number;
  private readonly refilledAt: number;
  constructor(
    readonly rate: number | undefined,
    readonly burst: number,
    readonly maxInflight: number | undefined,
    private readonly ints: Int32Array,
    private readonly floats: Float64Array,
    /** This thread's own share of each tenant's in-flight count (releaseShard takes a dead thread's off). */
    private readonly held: Int32Array,
    readonly index: number,
  ) {
    this.inflightAt = index * INTS_PER_TENANT + INFLIGHT;
    this.lockAt = index * INTS_PER_TENANT + LOCK;
    this.tokensAt = index * FLOATS_PER_TENANT + TOKENS;
    this.refilledAt = index * FLOATS_PER_TENANT + REFILLED_AT;
  }

  take(now: () => number): Refusal | undefined {
    const max = this.maxInflight;
    if (this.rate === undefined) {
      // The count alone: a compare-exchange loop, so no thread ever moves it past max.
      for (;;) {
        const inflight = Atomics.load(this.ints, this.inflightAt);
        if (max !== undefined && inflight >= max) return { reason: 'inflight', inflight };
        if (Atomics.compareExchange(this.ints, this.inflightAt, inflight, inflight + 1) === inflight) {
          Atomics.add(this.held, this.index, 1);
          return undefined;
        }
      }
    }
    // Read before the lock: the section stays as short as it can be.
    const nowMs = now();
    this.lock();
    // Under the lock no other thread adds to the count (every admission of this tenant takes the lock);
    // releases only lower it, so a count read below max is still below it at the add.
    const inflight = Atomics.load(this.ints, this.inflightAt);
    if (max !== undefined && inflight >= max) {
      this.unlock();
      return { reason: 'inflight', inflight };
    }
    const tokens = this.refillLocked(nowMs);
    if (tokens < 1) {
      this.unlock();
      return { reason: 'rate', tokens };
    }
    this.floats[this.tokensAt] = tokens - 1;
    Atomics.add(this.ints, this.inflightAt, 1);
    this.unlock();
    Atomics.add(this.held, this.index, 1);
    return undefined;
  }

  peek(now: () => number): Refusal | undefined {
    const inflight = Atomics.load(this.ints, this.inflightAt);
    if (this.maxInflight !== undefined && inflight >= this.maxInflight) return { reason: 'inflight', inflight };
    if (this.rate === undefined) return undefined;
    const nowMs = now();
    this.lock();
    const tokens = this.refillLocked(nowMs);
    this.unlock();
    return tokens < 1 ? { reason: 'rate', tokens } : undefined;
  }

  release(): void {
    Atomics.sub(this.held, this.index, 1);
    Atomics.sub(this.ints, this.inflightAt, 1);
  }

  refund(now: () => number): void {
    if (this.rate === undefined) return;
    const nowMs = now();
    this.lock();
    this.floats[this.tokensAt] = Math.min(this.burst, this.refillLocked(nowMs) + 1);
    this.unlock();
  }

  inflight(): number {
    return Atomics.load(this.ints, this.inflightAt);
  }

  tokens(now: () => number): number | undefined {
    if (this.rate === undefined) return undefined;
    const nowMs = now();
    this.lock();
    const tokens = this.refillLocked(nowMs);
    this.unlock();
    return tokens;
  }

  /** The bucket refilled to now (the lock is held): plain float reads and writes, ordered by the lock's atomics. */
  private refillLocked(nowMs: number): number {
    const last = this.floats[this.refilledAt]!;
    const tokens = refilledTokens(this.floats[this.tokensAt]!, last, this.rate!, this.burst, nowMs);
    this.floats[this.tokensAt] = tokens;
    this.floats[this.refilledAt] = Math.max(last, nowMs);
    return tokens;
  }

  /**
   * The tenant's lock: 0 free, 1 held, 2 held with a thread waiting (so only
   * then does the unlock pay for a notify). A short spin first: the holder's
   * section is a few float operations.
   */
  private lock(): void {
    if (Atomics.compareExchange(this.ints, this.lockAt, UNLOCKED, LOCKED) === UNLOCKED) return;
    for (let spin = 0; spin < SPINS_BEFORE_WAIT; spin += 1) {
      if (Atomics.compareExchange(this.ints, this.lockAt, UNLOCKED, LOCKED) === UNLOCKED) return;
    }
    // Taken as contended (2), so whoever unlocks next wakes a waiter; the timeout only bounds a lost wake-up.
    while (Atomics.exchange(this.ints, this.lockAt, CONTENDED) !== UNLOCKED) Atomics.wait(this.ints, this.lockAt, CONTENDED, LOCK_WAIT_MS);
  }

  private unlock(): void {
    if (Atomics.exchange(this.ints, this.lockAt, UNLOCKED) === CONTENDED) Atomics.notify(this.ints, this.lockAt, 1);
  }
}

// The shared buffer: [tokens, refilled at] float64 per tenant; then [in flight, lock] int32 per tenant;
// then the refusal counts, one float64 window per shard of (tenant, reason) cells; then each shard's
// own share of the in-flight counts, one int32 per tenant.
const FLOATS_PER_TENANT = 2;
const TOKENS = 0;
const REFILLED_AT = 1;
const INTS_PER_TENANT = 2;
const INFLIGHT = 0;
const LOCK = 1;
const UNLOCKED = 0;
const LOCKED = 1;
const CONTENDED = 2;
/** Lock tries before sleeping: the section is well under a microsecond, so a holder that needs more was descheduled. */
const SPINS_BEFORE_WAIT = 100;
/** A waiter's sleep at most, in ms, before it tries again. */
const LOCK_WAIT_MS = 1;

function intsOffset(tenants: number): number {
  return tenants * FLOATS_PER_TENANT * 8;
}

function countsOffset(tenants: number): number {
  // Int32 pairs are 8 bytes per tenant: the counts start 8-aligned.
  return intsOffset(tenants) + tenants * INTS_PER_TENANT * 4;
}

/** Each shard's own in-flight counts (int32 per tenant), after the refusal counts. */
function heldOffset(tenants: number, shards: number): number {
  return countsOffset(tenants) + shards * tenants * TENANT_LIMIT_REASONS.length * 8;
}

function sharedBytes(tenants: number, shards: number): number {
  // Whole float64 words, so the buffer can be viewed as one Float64Array.
  return Math.max(8, Math.ceil((heldOffset(tenants, shards) + shards * tenants * 4) / 8) * 8);
}

/**
 * The process-wide monotonic clock in ms, read at performance.now()'s cost
 * (see the file comment): process.hrtime() is the same CLOCK_MONOTONIC in
 * every thread; this thread's offset to it is measured once.
 */
function sharedClock(): () => number {
  const [seconds, nanoseconds] = process.hrtime();
  const offsetMs = seconds * 1e3 + nanoseconds / 1e6 - performance.now();
  return () => performance.now() + offsetMs;
}

function inflightMessage(tenant: string, slot: TenantSlot, inflight: number): string {
  return (
    `tenant ${echo(tenant)} is over its in-flight limit (max_inflight ${slot.maxInflight} in the tenants file): ` +
    `${inflight} of its requests are already in flight; retry when one is answered`
  );
}

function rateMessage(tenant: string, slot: TenantSlot, tokens: number): string {
  const waitMs = Math.max(1, Math.ceil(((1 - tokens) / slot.rate!) * 1000));
  return (
    `tenant ${echo(tenant)} is over its request rate limit (rate ${slot.rate} requests/s, burst ${slot.burst} in the tenants file): ` +
    `no request left in the bucket; the next is allowed in ${waitMs} ms`
  );
}

/** A bucket's tokens at `nowMs`: refilled at `rate` since `refilledAtMs`, up to `burst`. */
function refilledTokens(tokens: number, refilledAtMs: number, rate: number, burst: number, nowMs: number): number {
  // A clock that steps back (or another thread's reading, a hair behind) never takes tokens away.
  const elapsedMs = Math.max(0, nowMs - refilledAtMs);
  return Math.min(burst, tokens + (elapsedMs * rate) / 1000);
}

/** Each spec checked, with its bucket size; a tenant given twice is refused. */
function checkedSpecs(specs: readonly TenantLimitSpec[]): { spec: TenantLimitSpec; burst: number }[] {
  const seen = new Set<string>();
  return specs.map((spec) => {
    checkSpec(spec);
    if (seen.has(spec.tenant)) throw new RangeError(`tenant limits: tenant '${spec.tenant}' is given more than once`);
    seen.add(spec.tenant);
    return { spec, burst: spec.rate === undefined ? 1 : spec.burst ?? Math.max(1, Math.ceil(spec.rate)) };
  });
}

/** The tenants file is checked where it is parsed; this guards embedders that build specs themselves. */
function checkSpec(spec: TenantLimitSpec): void {
  const where = `tenant limits: tenant '${spec.tenant}'`;
  if (spec.rate !== undefined && !(Number.isFinite(spec.rate) && spec.rate > 0)) {
    throw new RangeError(`${where}: 'rate': expected requests per second, a number > 0, got ${String(spec.rate)}`);
  }
  for (const [field, value] of [['burst', spec.burst], ['max_inflight', spec.maxInflight]] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 1)) {
      throw new RangeError(`${where}: '${field}': expected an integer >= 1, got ${String(value)}`);
    }
  }
  if (spec.burst !== undefined && spec.rate === undefined) {
    throw new RangeError(`${where}: 'burst': expected together with 'rate', got 'burst' alone`);
  }
}
