/**
 * The response cache's charge in the host arena ledger: each stored answer is
 * an accounting-only reservation of its bytes, charged to its model's tenant,
 * under one 'response-cache' owner, and evictable. So the cache's memory
 * counts against the tenant's quota (an answer the tenant has no room for is
 * not stored), and when the arena needs room it evicts idle cache entries in
 * its LRU order, with idle model versions. Main thread only (eviction
 * callbacks run inside the alloc/reserve that needs room).
 */
import type { Arena } from '../../native/arena.js';
import type { ChargeFn } from './response-cache.js';

export function arenaCharge(arena: Arena): ChargeFn {
  const owner = arena.createOwner('other', 'response-cache');
  return (tenant, bytes, onEvict) => {
    const reservation = arena.reserve(owner, Math.max(1, bytes), { tenant, evictable: true, onEvict: () => onEvict() });
    return {
      release: () => {
        if (!reservation.released) reservation.release();
      },
    };
  };
}
