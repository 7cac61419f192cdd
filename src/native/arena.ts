// Typed wrapper for native/napi/arena_binding.cc: the memory ledger.
//
//   const arena = Arena.create('main', { capacityBytes: 8 * GiB });   // main thread, once
//   const team = arena.createTenant('team-a', 512 * MiB);
//   const model = arena.createOwner('model', 'resnet/1');
//   const footprint = arena.reserve(model, bytes, { tenant: team, evictable: true, onEvict: () => unload() });
//   footprint.pin(); ... footprint.unpin();                            // in use: never evicted
//   const batch = arena.createOwner('batch', 'batch-17', model);
//   const input = arena.alloc(batch, 4096, { tenant: team });
//   new Float32Array(input.view()).set(data);                          // zero copy (host/pinned)
//   arena.destroyOwner(batch);                                         // frees all the batch held
//
// Worker threads call `Arena.attach('main')` and `arena.adopt(id)` to map a
// block the main thread allocated (adopting takes a reference).
//
// Lifetimes: JS releases explicitly (`release()`); a FinalizationRegistry
// only backstops handles that were dropped without it. An ArrayBuffer from
// `view()` holds no reference: it is valid while its Block holds one, and it
// is detached (length 0) when the Block is released, its owner destroyed
// through this wrapper, or the block evicted. Views made in another thread
// are that thread's to drop first.
//
// Thread-safety: an Arena object belongs to the JS thread that made it (as
// any JS object); the native arena behind it is shared by all threads.
import { nativeAddon, type LoadedAddon } from './loader.js';
import { NativeError, unwrapNative, type NativeResult } from './native-error.js';
import { arenaExports, type ArenaBinding, type RawArenaInfo, type RawArenaStats, type RawEviction } from './arena-binding-types.js';
import { unwrapArena } from './arena-errors.js';
import { checkBytes, checkName, checkOwnerKind, fillArenaOptions, invalid, type ArenaOptions, type OwnerKind } from './arena-options.js';

export { ArenaOutOfMemoryError, ArenaQuotaError, type ArenaHolder } from './arena-errors.js';
export type { ArenaBackend, ArenaOptions, OwnerKind } from './arena-options.js';
export type ArenaStats = RawArenaStats;
export type ArenaDeviceInfo = RawArenaInfo;

export interface Tenant {
  readonly id: number;
  readonly name: string;
}

export interface Owner {
  readonly id: number;
  readonly kind: OwnerKind;
  readonly label: string;
  readonly parent: Owner | undefined;
}

export interface EvictionEvent {
  readonly kind: 'block' | 'reservation';
  readonly id: number;
  readonly tenant: string;
  readonly ownerId: number;
  readonly bytes: number;
  /** Time since the entry was last used (created, pinned, unpinned, touched). */
  readonly idleMs: number;
}

export interface ChargeOptions {
  /** A Tenant or a tenant name; default 'default'. */
  readonly tenant?: Tenant | string;
  /** Join the LRU list: evicted (through onEvict) when idle and memory is short. */
  readonly evictable?: boolean;
  /**
   * Runs synchronously on this thread, inside the alloc/reserve that needs
   * room. Return true after unloading what the entry stands for (the arena
   * then frees it), false to refuse. Evictions needed by other threads are refused.
   */
  readonly onEvict?: (event: EvictionEvent) => boolean;
}

export interface ReleaseSummary {
  readonly owners: number;
  readonly blocks: number;
  readonly reservations: number;
  readonly bytes: number;
}

const GiB = 1024 ** 3;

interface Held {
  refs: number;
  released: boolean;
}

/** Shared by an Arena and the handles it made; `closed` stops late finalizers. */
interface Context {
  readonly binding: ArenaBinding;
  readonly id: number;
  closed: boolean;
  /** Lets the Arena drop its bookkeeping for an entry that is gone. */
  readonly untrack: (entry: Entry) => void;
}

const backstop = new FinalizationRegistry<{ context: Context; handle: number; held: Held }>(({ context, handle, held }) => {
  if (context.closed) return;
  for (; held.refs > 0; held.refs -= 1) context.binding.arenaRelease(context.id, handle);
});

abstract class Entry {
  protected readonly held: Held = { refs: 1, released: false };

  constructor(
    protected readonly context: Context,
    /** The native handle: unique while the entry lives, exact as a number. */
    readonly id: number,
    readonly ownerId: number,
  ) {
    backstop.register(this, { context, handle: id, held: this.held }, this);
  }

  get released(): boolean {
    return this.held.released;
  }

  /** Marks this entry as in use: never evicted until unpin(). Also counts as a use. */
  pin(): void {
    this.call((b, a, h) => b.arenaPin(a, h), 'pin', this.pin);
  }

  unpin(): void {
    this.call((b, a, h) => b.arenaUnpin(a, h), 'unpin', this.unpin);
  }

  /** Marks this entry most recently used. */
  touch(): void {
    this.call((b, a, h) => b.arenaTouch(a, h), 'touch', this.touch);
  }

  /** Called when the native entry is gone (released, evicted, owner destroyed). */
  forget(): void {
    if (this.held.released) return;
    this.held.refs = 0;
    this.held.released = true;
    backstop.unregister(this);
    this.context.untrack(this);
  }

  protected call<T>(op: (b: ArenaBinding, arena: number, handle: number) => NativeResult<T>, name: string, boundary: (...args: never[]) => unknown): T {
    if (this.held.released) throw new NativeError('FAILED_PRECONDITION', `${this.constructor.name} ${this.id} was released`, name);
    return unwrapNative(op(this.context.binding, this.context.id, this.id), name, boundary);
  }
}

/** An arena block. Refcounted: each retain() needs a release(). */
export class Block extends Entry {
  private views: ArrayBuffer[] = [];

  constructor(context: Context, id: number, ownerId: number, readonly size: number, readonly requested: number) {
    super(context, id, ownerId);
  }

  retain(): this {
    this.call((b, a, h) => b.arenaRetain(a, h), 'retain', this.retain);
    this.held.refs += 1;
    return this;
  }

  /** Drops one reference held through this object; returns the native refcount left. */
  release(): number {
    const left = this.call((b, a, h) => b.arenaRelease(a, h), 'release', this.release);
    this.held.refs -= 1;
    if (this.held.refs === 0) this.forget();
    return left;
  }

  /** The block's `requested` bytes as an external ArrayBuffer: no copy. Host and pinned memory only. */
  view(): ArrayBuffer {
    const view = this.call((b, a, h) => b.arenaView(a, h), 'view', this.view);
    this.views.push(view);
    return view;
  }

  override forget(): void {
    super.forget();
    for (const view of this.views) this.context.binding.arenaDetachView(view);
    this.views = [];
  }

  /** Refcount and sizes as the arena sees them now. */
  info(): { refcount: number; size: number; requested: number } {
    return this.call((b, a, h) => b.arenaLookup(a, h), 'info', this.info);
  }
}

/** An accounting-only charge for memory another runtime owns. */
export class Reservation extends Entry {
  constructor(context: Context, id: number, ownerId: number, readonly bytes: number) {
    super(context, id, ownerId);
  }

  release(): void {
    this.call((b, a, h) => b.arenaRelease(a, h), 'release', this.release);
    this.forget();
  }
}

function bindingOf(addon: LoadedAddon): ArenaBinding {
  const record = addon.binding as unknown as Record<string, unknown>;
  const missing = arenaExports.filter((name) => typeof record[name] !== 'function');
  if (missing.length > 0) {
    throw new Error(`${addon.path} has no arena bindings (${missing.join(', ')}); rebuild it with \`npm run build:native\``);
  }
  return addon.binding as unknown as ArenaBinding;
}

export class Arena {
  private readonly context: Context;
  private readonly tenants = new Map<string, number>([['default', 0]]);
  private readonly tenantNames = new Map<number, string>([[0, 'default']]);
  /** Live entries made through this object, by owner then id, so destroyOwner can detach their views. */
  private readonly byOwner = new Map<number, Map<number, WeakRef<Entry>>>();
  private readonly evictable = new Map<number, WeakRef<Entry>>();
  private readonly owners = new Map<number, Owner>();

  private constructor(binding: ArenaBinding, id: number, readonly name: string) {
    this.context = { binding, id, closed: false, untrack: (entry) => this.untrack(entry) };
  }

  /** Creates the process-wide arena `name`. Closing it (or this thread's exit) shuts it down for every thread. */
  static create(name: string, options?: ArenaOptions, addon: LoadedAddon = nativeAddon()): Arena {
    checkName('Arena.create', 'name', name);
    const config = fillArenaOptions(options);
    const binding = bindingOf(addon);
    return new Arena(binding, unwrapNative(binding.arenaCreate(name, config), 'Arena.create', Arena.create), name);
  }

  /** Attaches to an arena another thread created. Closing detaches (and destroys owners made here). */
  static attach(name: string, addon: LoadedAddon = nativeAddon()): Arena {
    checkName('Arena.attach', 'name', name);
    const binding = bindingOf(addon);
    return new Arena(binding, unwrapNative(binding.arenaAttach(name), 'Arena.attach', Arena.attach), name);
  }

  /** Backend facts: 'host' with a fallbackReason when a CUDA device was wanted but is not usable. */
  deviceInfo(): ArenaDeviceInfo {
    return unwrapNative(this.binding.arenaInfo(this.id), 'deviceInfo', this.deviceInfo);
  }

  createTenant(name: string, quotaBytes: number): Tenant {
    checkName('createTenant', 'name', name);
    checkBytes('createTenant', 'quotaBytes', quotaBytes, 0);
    const id = unwrapNative(this.binding.arenaCreateTenant(this.id, name, quotaBytes), 'createTenant', this.createTenant);
    this.remember(name, id);
    return { id, name };
  }

  /** A tenant by name (created here or by another thread). */
  tenant(name: string): Tenant {
    checkName('tenant', 'name', name);
    return { id: this.tenantId(name, this.tenant), name };
  }

  setTenantQuota(tenant: Tenant | string, quotaBytes: number): void {
    checkBytes('setTenantQuota', 'quotaBytes', quotaBytes, 0);
    const id = this.resolveTenant(tenant, 'setTenantQuota', this.setTenantQuota);
    unwrapNative(this.binding.arenaSetTenantQuota(this.id, id, quotaBytes), 'setTenantQuota', this.setTenantQuota);
  }

  /** Owners form a tree: destroying a model destroys its batches too. */
  createOwner(kind: OwnerKind, label: string, parent?: Owner): Owner {
    checkOwnerKind('createOwner', kind);
    if (typeof label !== 'string') throw invalid('createOwner', 'label', 'a string', label);
    if (parent !== undefined && typeof parent?.id !== 'number') throw invalid('createOwner', 'parent', 'an Owner', parent);
    const id = unwrapNative(this.binding.arenaCreateOwner(this.id, kind, label, parent?.id ?? 0), 'createOwner', this.createOwner);
    const owner: Owner = { id, kind, label, parent };
    this.owners.set(id, owner);
    return owner;
  }

  /** Frees every block (whatever its refcount) and reservation the owner and its descendants hold. */
  destroyOwner(owner: Owner): ReleaseSummary {
    if (typeof owner?.id !== 'number') throw invalid('destroyOwner', 'owner', 'an Owner', owner);
    const summary = unwrapNative(this.binding.arenaDestroyOwner(this.id, owner.id), 'destroyOwner', this.destroyOwner);
    for (const id of this.descendants(owner.id)) {
      for (const ref of [...(this.byOwner.get(id)?.values() ?? [])]) ref.deref()?.forget();
      this.byOwner.delete(id);
      this.owners.delete(id);
    }
    return summary;
  }

  /**
   * What an owner (by object or id, so any thread can ask about any owner)
   * and its descendants hold now: what destroyOwner would free. For periodic
   * sampling, not the request path.
   */
  ownerUsage(owner: Owner | number): ReleaseSummary {
    const id = typeof owner === 'number' ? owner : owner?.id;
    if (typeof id !== 'number') throw invalid('ownerUsage', 'owner', 'an Owner or an owner id', owner);
    return unwrapNative(this.binding.arenaOwnerUsage(this.id, id), 'ownerUsage', this.ownerUsage);
  }

  /** A block of at least `bytes`, refcount 1, charged to the tenant. */
  alloc(owner: Owner, bytes: number, options: ChargeOptions = {}): Block {
    if (typeof owner?.id !== 'number') throw invalid('alloc', 'owner', 'an Owner', owner);
    checkBytes('alloc', 'bytes', bytes);
    const { tenant, onEvict } = this.charge('alloc', options, this.alloc);
    const raw = unwrapArena(this.binding.arenaAlloc(this.id, owner.id, bytes, tenant, onEvict), 'alloc', this.alloc);
    return this.track(new Block(this.context, raw.handle, owner.id, raw.size, raw.requested), onEvict !== undefined);
  }

  /** Takes a reference to a block by id (e.g. one the main thread allocated), for this thread to use and release. */
  adopt(id: number, ownerId = 0): Block {
    checkBytes('adopt', 'id', id, 0);
    unwrapNative(this.binding.arenaRetain(this.id, id), 'adopt', this.adopt);
    const raw = unwrapNative(this.binding.arenaLookup(this.id, id), 'adopt', this.adopt);
    return this.track(new Block(this.context, id, ownerId, raw.size, raw.requested), false);
  }

  /** Charges `bytes` to the tenant without allocating them (e.g. an onnxruntime session's footprint). */
  reserve(owner: Owner, bytes: number, options: ChargeOptions = {}): Reservation {
    if (typeof owner?.id !== 'number') throw invalid('reserve', 'owner', 'an Owner', owner);
    checkBytes('reserve', 'bytes', bytes);
    const { tenant, onEvict } = this.charge('reserve', options, this.reserve);
    const handle = unwrapArena(this.binding.arenaReserve(this.id, owner.id, bytes, tenant, onEvict), 'reserve', this.reserve);
    return this.track(new Reservation(this.context, handle, owner.id, bytes), onEvict !== undefined);
  }

  stats(): ArenaStats {
    return unwrapNative(this.binding.arenaStats(this.id), 'stats', this.stats);
  }

  /** Returns every fully free cached segment to the backend; the bytes returned. */
  releaseCached(): number {
    return unwrapNative(this.binding.arenaReleaseCached(this.id), 'releaseCached', this.releaseCached);
  }

  /** Detaches this thread: destroys the owners it created; the creating thread also shuts the arena down. */
  close(): void {
    if (this.context.closed) return;
    unwrapNative(this.binding.arenaClose(this.id), 'close', this.close);
    this.context.closed = true;
    for (const refs of [...this.byOwner.values()]) for (const ref of [...refs.values()]) ref.deref()?.forget();
    this.byOwner.clear();
  }

  private get binding(): ArenaBinding {
    return this.context.binding;
  }

  private get id(): number {
    if (this.context.closed) throw new NativeError('FAILED_PRECONDITION', `arena '${this.name}' is closed`, 'arena');
    return this.context.id;
  }

  private remember(name: string, id: number): void {
    this.tenants.set(name, id);
    this.tenantNames.set(id, name);
  }

  private tenantId(name: string, boundary: (...args: never[]) => unknown): number {
    const known = this.tenants.get(name);
    if (known !== undefined) return known;
    const id = unwrapNative(this.binding.arenaFindTenant(this.id, name), 'tenant', boundary);
    this.remember(name, id);
    return id;
  }

  private resolveTenant(tenant: Tenant | string | undefined, where: string, boundary: (...args: never[]) => unknown): number {
    if (tenant === undefined) return 0;
    if (typeof tenant === 'string') return this.tenantId(checkName(where, 'tenant', tenant), boundary);
    if (typeof tenant?.id === 'number') return tenant.id;
    throw invalid(where, 'tenant', 'a Tenant or a tenant name', tenant);
  }

  private charge(where: string, options: ChargeOptions, boundary: (...args: never[]) => unknown) {
    if (typeof options !== 'object' || options === null) throw invalid(where, 'options', 'an object', options);
    const tenant = this.resolveTenant(options.tenant, where, boundary);
    const { evictable = false, onEvict } = options;
    if (typeof evictable !== 'boolean') throw invalid(where, 'evictable', 'a boolean', evictable);
    if (evictable && typeof onEvict !== 'function') throw invalid(where, 'onEvict', 'a function when evictable is true', onEvict);
    if (!evictable && onEvict !== undefined) throw invalid(where, 'onEvict', 'undefined unless evictable is true', 'a function');
    const wrapped = evictable && onEvict ? (raw: RawEviction) => this.evict(raw, onEvict) : undefined;
    return { tenant, onEvict: wrapped };
  }

  private evict(raw: RawEviction, onEvict: (event: EvictionEvent) => boolean): boolean {
    const event: EvictionEvent = {
      kind: raw.kind,
      id: raw.handle,
      tenant: this.tenantNames.get(raw.tenant) ?? String(raw.tenant),
      ownerId: raw.owner,
      bytes: raw.bytes,
      idleMs: raw.idleMs,
    };
    if (onEvict(event) !== true) return false;
    this.evictable.get(raw.handle)?.deref()?.forget();
    return true;
  }

  private track<T extends Entry>(entry: T, evictable: boolean): T {
    let entries = this.byOwner.get(entry.ownerId);
    if (!entries) this.byOwner.set(entry.ownerId, (entries = new Map()));
    const ref = new WeakRef<Entry>(entry);
    entries.set(entry.id, ref);
    if (evictable) this.evictable.set(entry.id, ref);
    return entry;
  }

  private untrack(entry: Entry): void {
    const entries = this.byOwner.get(entry.ownerId);
    if (entries?.get(entry.id)?.deref() === entry) entries.delete(entry.id);
    if (entries?.size === 0) this.byOwner.delete(entry.ownerId);
    if (this.evictable.get(entry.id)?.deref() === entry) this.evictable.delete(entry.id);
  }

  private descendants(root: number): number[] {
    const out = [root];
    for (let i = 0; i < out.length; i += 1) {
      for (const owner of this.owners.values()) if (owner.parent?.id === out[i]) out.push(owner.id);
    }
    return out;
  }
}

export const arenaUnits = { KiB: 1024, MiB: 1024 * 1024, GiB };
