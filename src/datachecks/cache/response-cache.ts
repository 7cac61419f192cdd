/**
 * The response cache (`--cache-config local,size=BYTES`, and
 * `response_cache { enable: true }` per model), with Triton's semantics:
 *
 * - the key is a sha256 of the key material (cache-key.ts); on a hash match
 *   the stored material is compared in full, so a collision is a miss, never
 *   a wrong answer;
 * - entries are evicted least recently used first, by bytes, under one size
 *   for the whole server;
 * - each entry is charged to its model's tenant (`charge`, an evictable entry
 *   of the arena ledger): when the arena needs room it evicts the entry
 *   through `onEvict`, and when the tenant has no room the answer is simply
 *   not stored;
 * - single flight: concurrent identical misses run once; the others wait for
 *   that run and get its answer, or its error (errors are never stored).
 *
 * Generic in the stored value: the runner stores responses. Main thread only.
 */
import { createHash } from 'node:crypto';

/** What one stored entry holds in the ledger; released when the entry goes. */
export interface CacheCharge {
  release(): void;
}

/**
 * Charges `bytes` to `tenant`; `onEvict` is called when the ledger takes the
 * charge back (return true: the entry is gone). Throws when the tenant has no
 * room: the answer is then not stored.
 */
export type ChargeFn = (tenant: string, bytes: number, onEvict: () => boolean) => CacheCharge;

export interface ResponseCacheOptions {
  /** Total bytes of stored answers (key material included). */
  readonly sizeBytes: number;
  readonly charge?: ChargeFn | undefined;
  /** The hash of key material; a test hook to force collisions. Default sha256. */
  readonly hash?: ((material: Uint8Array) => string) | undefined;
}

/** What a run gives to be stored: the value and its size in bytes. */
export interface Computed<T> {
  readonly value: T;
  readonly bytes: number;
}

export interface CacheOutcome<T> {
  readonly value: T;
  /** 'hit': stored answer; 'shared': waited for an identical run in flight; 'miss': ran it. */
  readonly kind: 'hit' | 'shared' | 'miss';
  /** Nanoseconds spent in the cache: the lookup (hit), or the lookup and the insertion (miss). */
  readonly cacheNs: number;
}

interface Entry<T> {
  readonly hash: string;
  readonly material: Uint8Array;
  readonly value: T;
  readonly bytes: number;
  charge: CacheCharge | undefined;
}

interface Flight<T> {
  readonly material: Uint8Array;
  readonly promise: Promise<T>;
}

export class ResponseCache<T> {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry<T>[]>();
  private readonly lru = new Set<Entry<T>>();
  private readonly flights = new Map<string, Flight<T>[]>();
  private used = 0;
  private readonly hash: (material: Uint8Array) => string;

  constructor(private readonly options: ResponseCacheOptions) {
    this.hash = options.hash ?? ((material) => createHash('sha256').update(material).digest('hex'));
  }

  get sizeBytes(): number {
    return this.options.sizeBytes;
  }

  /** Bytes stored now (never above sizeBytes). */
  get usedBytes(): number {
    return this.used;
  }

  get entryCount(): number {
    return this.lru.size;
  }

  /**
   * The stored answer for `material`, or the answer of an identical run in
   * flight, or `run()`'s (stored when it succeeds and fits).
   */
  async get(material: Uint8Array, tenant: string, run: () => Promise<Computed<T>>): Promise<CacheOutcome<T>> {
    const started = process.hrtime.bigint();
    const since = () => Number(process.hrtime.bigint() - started);
    const hash = this.hash(material);
    const entry = this.entries.get(hash)?.find((e) => equalBytes(e.material, material));
    if (entry !== undefined) {
      this.lru.delete(entry);
      this.lru.add(entry);
      return { value: entry.value, kind: 'hit', cacheNs: since() };
    }
    const flight = this.flights.get(hash)?.find((f) => equalBytes(f.material, material));
    if (flight !== undefined) {
      // An error reaches every waiter (and is not stored).
      const value = await flight.promise;
      return { value, kind: 'shared', cacheNs: since() };
    }
    const lookupNs = since();
    let settle!: (value: T) => void;
    let fail!: (err: unknown) => void;
    const promise = new Promise<T>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    // Waiters only: without one, a rejection must not surface as unhandled.
    promise.catch(() => undefined);
    const mine: Flight<T> = { material, promise };
    push(this.flights, hash, mine);
    try {
      const computed = await run();
      const insertStarted = process.hrtime.bigint();
      this.insert(hash, material, tenant, computed);
      settle(computed.value);
      return { value: computed.value, kind: 'miss', cacheNs: lookupNs + Number(process.hrtime.bigint() - insertStarted) };
    } catch (err) {
      fail(err);
      throw err;
    } finally {
      remove(this.flights, hash, mine);
    }
  }

  /** Drops every entry (and its charge). */
  clear(): void {
    for (const entry of [...this.lru]) this.drop(entry);
  }

  private insert(hash: string, material: Uint8Array, tenant: string, computed: Computed<T>): void {
    const bytes = computed.bytes + material.byteLength;
    if (bytes > this.options.sizeBytes) return;
    while (this.used + bytes > this.options.sizeBytes) {
      const oldest = this.lru.values().next().value;
      if (oldest === undefined) break;
      this.drop(oldest);
    }
    const entry: Entry<T> = { hash, material, value: computed.value, bytes, charge: undefined };
    if (this.options.charge !== undefined) {
      try {
        entry.charge = this.options.charge(tenant, bytes, () => {
          // The ledger takes the charge back itself: only forget the entry.
          entry.charge = undefined;
          this.drop(entry);
          return true;
        });
      } catch {
        return; // the tenant has no room: not stored
      }
    }
    push(this.entries, hash, entry);
    this.lru.add(entry);
    this.used += bytes;
  }

  private drop(entry: Entry<T>): void {
    if (!this.lru.delete(entry)) return;
    remove(this.entries, entry.hash, entry);
    this.used -= entry.bytes;
    const charge = entry.charge;
    entry.charge = undefined;
    charge?.release();
  }
}

function push<V>(map: Map<string, V[]>, key: string, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function remove<V>(map: Map<string, V[]>, key: string, value: V): void {
  const list = map.get(key);
  if (list === undefined) return;
  const i = list.indexOf(value);
  if (i >= 0) list.splice(i, 1);
  if (list.length === 0) map.delete(key);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}
