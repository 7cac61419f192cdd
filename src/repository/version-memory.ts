/**
 * What one model version holds in the memory ledgers, and the rules for it:
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
 * it: only an idle version is evictable. Requests hold one pin between them,
 * taken when the first starts and dropped when the last running one
 * finishes; that unpin marks the version most recently used, which is what
 * LRU eviction orders by. That is the order a pin per request would give
 * (a pinned entry is never a candidate), at two calls into the ledger per
 * busy spell rather than two per request.
 *
 * A version on the native executor has no onnxruntime session at load, so no
 * host reservation (`hostFootprint: false`): its weights and workspaces are
 * blocks under `executorOwner`, in the device ledger when there is one (else
 * the host ledger). If it falls back to CPU, the pool's measured footprint is
 * charged to the host ledger (`chargeFootprint`) until it moves back.
 *
 * Main thread only (arena eviction callbacks run here, synchronously).
 */
import { status } from '@grpc/grpc-js';
import { ServingError } from '../common/serving-error.js';
import { ArenaOutOfMemoryError, ArenaQuotaError, type Block, type EvictionEvent, type Owner, type Reservation } from '../native/arena.js';
import { ARENA_NAME, DEVICE_ARENA_NAME, type Ledger, type ServerMemory } from '../tenancy/server-memory.js';

export interface VersionMemoryOptions {
  readonly tenant: string;
  readonly model: string;
  readonly version: number;
  readonly estimateBytes: number;
  /** False for a version on the native executor: no onnxruntime footprint is reserved at load. */
  readonly hostFootprint?: boolean;
  /** Unloads the version; return false to refuse. Called only while the version is idle. */
  readonly onEvict: (event: EvictionEvent) => boolean;
}

export class VersionMemory {
  private reservation: Reservation | undefined;
  private destroyed = false;
  /** Requests between requestStarted and requestFinished (together they hold one pin on the reservation). */
  private activeRequests = 0;
  /** The executor's owner in the device ledger (undefined: none made, or no device ledger). */
  private deviceOwner: Owner | undefined;

  private constructor(
    private readonly memory: ServerMemory,
    private readonly options: VersionMemoryOptions,
    private readonly owner: Owner,
  ) {
    this.reservation = options.hostFootprint === false ? undefined : this.reserve(options.estimateBytes);
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

  /** The host reservation (onnxruntime footprint); 0 when there is none. */
  get reservedBytes(): number {
    return this.reservation?.bytes ?? 0;
  }

  /** Replaces the estimate with the measured footprint; stays pinned until `loaded()`. */
  settle(measuredBytes: number): void {
    if (this.reservation === undefined || measuredBytes === this.reservation.bytes) return;
    const previous = this.reservation;
    previous.unpin();
    previous.release();
    this.reservation = this.reserve(measuredBytes);
  }

  /** The version serves now: idle (evictable) whenever no request runs. */
  loaded(): void {
    this.reservation?.unpin();
  }

  /** A request starts: the version is in use (the first one running pins it). */
  requestStarted(): void {
    // Pinned before counted: a pin that throws leaves the count as it was,
    // so the next request pins again (counted first, it would never re-pin).
    if (this.activeRequests === 0 && this.reservation !== undefined && !this.reservation.released) this.reservation.pin();
    this.activeRequests += 1;
  }

  /** A request finished: once none runs, the version is idle again, and most recently used. */
  requestFinished(): void {
    this.activeRequests -= 1;
    if (this.activeRequests === 0 && this.reservation !== undefined && !this.reservation.released) this.reservation.unpin();
  }

  /**
   * A native version fell back to CPU: its pool's footprint goes on the host
   * ledger (unpinned: evictable like any idle version). Throws RESOURCE_EXHAUSTED.
   */
  chargeFootprint(bytes: number): void {
    if (this.destroyed || this.reservation !== undefined) return;
    const reservation = this.reserve(bytes);
    // reserve() pinned it once: the running requests' one pin, which the last of them drops.
    if (this.activeRequests === 0) reservation.unpin();
    this.reservation = reservation;
  }

  /** The CPU pool of a native version closed: its host footprint goes. */
  releaseFootprint(): void {
    if (this.options.hostFootprint !== false || this.reservation === undefined) return;
    // Released whatever its pins: running requests then skip the unpin (reservation gone).
    if (!this.reservation.released) this.reservation.release();
    this.reservation = undefined;
  }

  /**
   * Where the native executor's weights and workspaces are charged: the
   * version's owner in the device ledger when there is one, else its host
   * owner. `arena` is the arena name the executor allocates from.
   */
  executorOwner(kernels: 'cuda' | 'host'): { arena: string; ownerId: number; ledger: 'host' | 'device' } {
    // Host kernels need host-accessible memory: a CUDA device ledger is not (the
    // host-backed test ledger is).
    const device = this.memory.device;
    if (device === undefined || (kernels === 'host' && device.backend === 'cuda')) {
      return { arena: ARENA_NAME, ownerId: this.owner.id, ledger: 'host' };
    }
    this.deviceOwner ??= this.memory.createDeviceOwner(this.options.tenant, this.options.model, this.options.version);
    if (this.deviceOwner === undefined) throw new Error('device ledger vanished');
    return { arena: DEVICE_ARENA_NAME, ownerId: this.deviceOwner.id, ledger: 'device' };
  }

  /**
   * Bytes the executor holds in its ledger (the patrol's view). Without a
   * device ledger this is the version's host owner, which also holds the
   * inputs of requests in flight.
   */
  executorBytes(): number {
    if (this.destroyed) return 0;
    if (this.deviceOwner !== undefined && this.memory.device !== undefined) {
      return this.memory.device.arena.ownerUsage(this.deviceOwner).bytes;
    }
    return this.memory.arena.ownerUsage(this.owner).bytes;
  }

  /** Frees the executor's device memory now (device lost: the executor closed); cached device segments are trimmed. */
  releaseExecutorMemory(): void {
    if (this.deviceOwner === undefined || this.memory.device === undefined) return;
    this.memory.device.arena.destroyOwner(this.deviceOwner);
    this.deviceOwner = undefined;
    this.memory.device.arena.releaseCached();
  }

  /** An input buffer for one request, charged to the tenant. Throws RESOURCE_EXHAUSTED. */
  allocInput(bytes: number): Block {
    try {
      return this.memory.arena.alloc(this.owner, bytes, { tenant: this.options.tenant });
    } catch (err) {
      throw asResourceExhausted(err, `input buffer of ${bytes} bytes for model '${this.options.model}'`, 'host');
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
      throw asResourceExhausted(err, `output buffer of ${bytes} bytes for model '${this.options.model}'`, 'host');
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

  /** Frees the reservation and every block the version still holds, in both ledgers. Idempotent. */
  destroy(): void {
    if (this.destroyed) return;
    this.releaseExecutorMemory();
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
      throw asResourceExhausted(err, `model '${this.options.model}' version ${this.options.version} (${Math.ceil(bytes)} bytes)`, 'host');
    }
  }
}

const MiB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

/** Arena failures become RESOURCE_EXHAUSTED naming the tenant, the ledger, the quota and the usage. */
export function asResourceExhausted(err: unknown, what: string, ledger: Ledger): unknown {
  if (err instanceof ArenaQuotaError) {
    return new ServingError(
      status.RESOURCE_EXHAUSTED,
      `tenant '${err.tenant}' is over its ${ledger} memory quota: ${what} needs ${mib(err.requested)}, ` +
        `the tenant uses ${mib(err.used)} of its ${mib(err.quota)} ${ledger} quota`,
    );
  }
  if (err instanceof ArenaOutOfMemoryError) {
    const holders = err.holders
      .slice(0, 5)
      .map((h) => `${h.kind} '${h.name}' ${mib(h.allocatedBytes + h.reservedBytes)}`)
      .join(', ');
    return new ServingError(
      status.RESOURCE_EXHAUSTED,
      `server ${ledger} memory is full: ${what} for tenant '${err.tenant}' needs ${mib(err.requested)}; held by ${holders}`,
    );
  }
  return err;
}
