/**
 * What one model version holds in the memory ledger, and the rules for it:
 *
 * - an accounting-only, evictable reservation equal to its sessions' measured
 *   footprint (an estimate — the model file's size per worker, or the declared
 *   `memory_footprint_bytes` — is charged before the workers start, so a model
 *   that cannot fit is refused before it costs anything, then settled to the
 *   measurement);
 * - its requests' input blocks, charged to the same tenant;
 * - an owner under its tenant, destroyed when the version goes, so nothing it
 *   held stays charged;
 * - one child owner per worker generation (kind 'worker-generation'): what
 *   the workers themselves allocate is charged there, and destroying it when
 *   the generation is retired frees it, whatever the workers leaked.
 *
 * The reservation is pinned while the version loads and while requests run on
 * it: only an idle version is evictable. Each request also marks it most
 * recently used, which is what LRU eviction orders by.
 *
 * Main thread only (arena eviction callbacks run here, synchronously).
 */
import { status } from '@grpc/grpc-js';
import { ServingError } from '../common/serving-error.js';
import { ArenaOutOfMemoryError, ArenaQuotaError, type Block, type EvictionEvent, type Owner, type Reservation } from '../native/arena.js';
import type { ServerMemory } from '../tenancy/server-memory.js';

export interface VersionMemoryOptions {
  readonly tenant: string;
  readonly model: string;
  readonly version: number;
  readonly estimateBytes: number;
  /** Unloads the version; return false to refuse. Called only while the version is idle. */
  readonly onEvict: (event: EvictionEvent) => boolean;
}

export class VersionMemory {
  private reservation: Reservation;
  private destroyed = false;

  private constructor(
    private readonly memory: ServerMemory,
    private readonly options: VersionMemoryOptions,
    private readonly owner: Owner,
  ) {
    this.reservation = this.reserve(options.estimateBytes);
  }

  /** Charges the estimate (pinned: a loading version is never evicted). Throws RESOURCE_EXHAUSTED. */
  static forLoad(memory: ServerMemory, options: VersionMemoryOptions): VersionMemory {
    memory.tenant(options.tenant); // a clear error for an unconfigured tenant
    const owner = memory.createVersionOwner(options.tenant, options.model, options.version);
    try {
      return new VersionMemory(memory, options, owner);
    } catch (err) {
      memory.arena.destroyOwner(owner);
      throw err;
    }
  }

  get tenant(): string {
    return this.options.tenant;
  }

  get reservedBytes(): number {
    return this.reservation.bytes;
  }

  /** Replaces the estimate with the measured footprint; stays pinned until `loaded()`. */
  settle(measuredBytes: number): void {
    if (measuredBytes === this.reservation.bytes) return;
    const previous = this.reservation;
    previous.unpin();
    previous.release();
    this.reservation = this.reserve(measuredBytes);
  }

  /** The version serves now: idle (evictable) whenever no request runs. */
  loaded(): void {
    this.reservation.unpin();
  }

  /** A request starts: the version is in use and most recently used. */
  requestStarted(): void {
    if (!this.reservation.released) this.reservation.pin();
  }

  requestFinished(): void {
    if (!this.reservation.released) this.reservation.unpin();
  }

  /** An input buffer for one request, charged to the tenant. Throws RESOURCE_EXHAUSTED. */
  allocInput(bytes: number): Block {
    try {
      return this.memory.arena.alloc(this.owner, bytes, { tenant: this.options.tenant });
    } catch (err) {
      throw asResourceExhausted(err, `input buffer of ${bytes} bytes for model '${this.options.model}'`);
    }
  }

  /** The arena owner the version's blocks are allocated under (batches use it too). */
  get ownerId(): number {
    return this.owner.id;
  }

  /** A batch's pre-allocated output buffer, charged to the tenant. Throws RESOURCE_EXHAUSTED. */
  allocOutput(bytes: number): Block {
    try {
      return this.memory.arena.alloc(this.owner, bytes, { tenant: this.options.tenant });
    } catch (err) {
      throw asResourceExhausted(err, `output buffer of ${bytes} bytes for model '${this.options.model}'`);
    }
  }

  /** A new worker generation's owner, under the version's owner (so `destroy()` covers it too). */
  createGenerationOwner(generation: number): Owner {
    return this.memory.arena.createOwner('worker-generation', `${this.options.model}/${this.options.version}#${generation}`, this.owner);
  }

  /** What a generation's owner holds in the ledger now (bytes), read from the arena itself. */
  generationBytes(owner: Owner): number {
    if (this.destroyed) return 0;
    return this.memory.arena.ownerUsage(owner).bytes;
  }

  /** Frees everything a retired generation's workers held; the bytes freed. No-op once the version is destroyed. */
  destroyGenerationOwner(owner: Owner): number {
    if (this.destroyed) return 0;
    return this.memory.arena.destroyOwner(owner).bytes;
  }

  /** Frees the reservation and every block the version still holds. Idempotent. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.memory.arena.destroyOwner(this.owner);
  }

  private reserve(bytes: number): Reservation {
    try {
      const reservation = this.memory.arena.reserve(this.owner, Math.max(1, Math.ceil(bytes)), {
        tenant: this.options.tenant,
        evictable: true,
        onEvict: this.options.onEvict,
      });
      reservation.pin();
      return reservation;
    } catch (err) {
      throw asResourceExhausted(err, `model '${this.options.model}' version ${this.options.version} (${Math.ceil(bytes)} bytes)`);
    }
  }
}

const MiB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

/** Arena failures become RESOURCE_EXHAUSTED naming the tenant, the quota and the usage. */
export function asResourceExhausted(err: unknown, what: string): unknown {
  if (err instanceof ArenaQuotaError) {
    return new ServingError(
      status.RESOURCE_EXHAUSTED,
      `tenant '${err.tenant}' is over its memory quota: ${what} needs ${mib(err.requested)}, ` +
        `the tenant uses ${mib(err.used)} of its ${mib(err.quota)} quota`,
    );
  }
  if (err instanceof ArenaOutOfMemoryError) {
    const holders = err.holders
      .slice(0, 5)
      .map((h) => `${h.kind} '${h.name}' ${mib(h.allocatedBytes + h.reservedBytes)}`)
      .join(', ');
    return new ServingError(
      status.RESOURCE_EXHAUSTED,
      `server memory is full: ${what} for tenant '${err.tenant}' needs ${mib(err.requested)}; held by ${holders}`,
    );
  }
  return err;
}
