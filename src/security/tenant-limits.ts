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
 * Pure state over an injectable millisecond clock (tests refill the bucket
 * by moving the clock). Main thread only.
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
import type { TenantLimitReason } from '../observability/metric-names.js';

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
  /** A monotonic clock in milliseconds; default performance.now. */
  readonly now?: () => number;
  /** Called once for each refused request (the metric). */
  readonly onRejected?: (tenant: string, reason: TenantLimitReason) => void;
}

/** Ends an admitted request's hold on its tenant's in-flight count; later calls do nothing. */
export type AdmissionRelease = () => void;

interface Bucket {
  readonly rate: number;
  readonly burst: number;
  tokens: number;
  refilledAtMs: number;
}

interface TenantState {
  readonly bucket: Bucket | undefined;
  readonly maxInflight: number | undefined;
  inflight: number;
}

const NOTHING_TO_RELEASE: AdmissionRelease = () => {};

export class TenantLimiter {
  private readonly tenants = new Map<string, TenantState>();
  private readonly now: () => number;
  private readonly onRejected: ((tenant: string, reason: TenantLimitReason) => void) | undefined;

  constructor(specs: readonly TenantLimitSpec[], options: TenantLimiterOptions = {}) {
    this.now = options.now ?? (() => performance.now());
    this.onRejected = options.onRejected;
    const startMs = this.now();
    for (const spec of specs) {
      checkSpec(spec);
      if (this.tenants.has(spec.tenant)) throw new RangeError(`tenant limits: tenant '${spec.tenant}' is given more than once`);
      const burst = spec.rate === undefined ? undefined : spec.burst ?? Math.max(1, Math.ceil(spec.rate));
      this.tenants.set(spec.tenant, {
        bucket: spec.rate === undefined ? undefined : { rate: spec.rate, burst: burst!, tokens: burst!, refilledAtMs: startMs },
        maxInflight: spec.maxInflight,
        inflight: 0,
      });
    }
  }

  /** Whether `tenant` has a rate or in-flight limit. */
  limits(tenant: string): boolean {
    return this.tenants.has(tenant);
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
    const state = this.tenants.get(tenant);
    if (state === undefined) return NOTHING_TO_RELEASE;
    this.check(tenant); // refills the bucket
    if (state.bucket !== undefined) state.bucket.tokens -= 1;
    state.inflight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      state.inflight -= 1;
    };
  }

  /**
   * Throws the TenantLimitError `admit` would throw now, taking nothing: the
   * gRPC door's admission (server/admission.ts) refuses from the metadata a
   * call its tenant cannot take, before its message is read. The request
   * that passes is admitted (and takes its token) once its model is known.
   */
  check(tenant: string): void {
    const state = this.tenants.get(tenant);
    if (state === undefined) return;
    if (state.maxInflight !== undefined && state.inflight >= state.maxInflight) {
      throw this.reject(tenant, 'inflight', inflightMessage(tenant, state));
    }
    const bucket = state.bucket;
    if (bucket === undefined) return;
    refill(bucket, this.now());
    if (bucket.tokens < 1) throw this.reject(tenant, 'rate', rateMessage(tenant, bucket));
  }

  /** The tenant's admitted, unanswered requests (0 for a tenant without limits). */
  inflight(tenant: string): number {
    return this.tenants.get(tenant)?.inflight ?? 0;
  }

  /** The tenant's tokens now (fractional), or undefined without a rate limit. */
  tokens(tenant: string): number | undefined {
    const bucket = this.tenants.get(tenant)?.bucket;
    if (bucket === undefined) return undefined;
    refill(bucket, this.now());
    return bucket.tokens;
  }

  private reject(tenant: string, reason: TenantLimitReason, message: string): TenantLimitError {
    this.onRejected?.(tenant, reason);
    return new TenantLimitError(tenant, reason, message);
  }
}

function inflightMessage(tenant: string, state: TenantState): string {
  return (
    `tenant ${echo(tenant)} is over its in-flight limit (max_inflight ${state.maxInflight} in the tenants file): ` +
    `${state.inflight} of its requests are already in flight; retry when one is answered`
  );
}

function rateMessage(tenant: string, bucket: Bucket): string {
  const waitMs = Math.max(1, Math.ceil(((1 - bucket.tokens) / bucket.rate) * 1000));
  return (
    `tenant ${echo(tenant)} is over its request rate limit (rate ${bucket.rate} requests/s, burst ${bucket.burst} in the tenants file): ` +
    `no request left in the bucket; the next is allowed in ${waitMs} ms`
  );
}

function refill(bucket: Bucket, nowMs: number): void {
  // A clock that steps back (it should not) never takes tokens away.
  const elapsedMs = Math.max(0, nowMs - bucket.refilledAtMs);
  bucket.tokens = Math.min(bucket.burst, bucket.tokens + (elapsedMs * bucket.rate) / 1000);
  bucket.refilledAtMs = Math.max(bucket.refilledAtMs, nowMs);
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
