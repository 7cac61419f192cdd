/**
 * What the tenant-limit unit tests share: a millisecond clock the test moves
 * by hand (TenantLimiter's injectable `now`), and the refusal an admission
 * must throw.
 */
import { TenantLimitError } from '../../src/security/tenant-limits.js';

/** A clock the test moves by hand. */
export function fakeClock(startMs = 1000) {
  let nowMs = startMs;
  return { now: () => nowMs, advance: (ms: number) => (nowMs += ms) };
}

/** The TenantLimitError `admit` throws; fails the test when it admits or throws anything else. */
export function refusal(admit: () => unknown): TenantLimitError {
  try {
    admit();
  } catch (err) {
    if (err instanceof TenantLimitError) return err;
    throw err;
  }
  throw new Error('admitted, but a refusal was expected');
}
