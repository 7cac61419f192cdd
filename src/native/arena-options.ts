// Argument validation for src/native/arena.ts, piscina-style: a defaults
// table, a filled-options type and one message format per kind of option.
// Native code keeps only guard checks, so every user mistake is reported
// here, in JS terms.
import type { RawArenaConfig, RawBackendKind, RawOwnerKind } from './arena-binding-types.js';

export type ArenaBackend = RawBackendKind;
export type OwnerKind = RawOwnerKind;

export interface ArenaOptions {
  /** 'auto' (default): the CUDA device if usable, else host memory. */
  readonly backend?: ArenaBackend;
  /** Global cap on backend bytes (segments, cached memory included) + reservation bytes. */
  readonly capacityBytes?: number;
  /** Size of ordinary segments. */
  readonly segmentBytes?: number;
  /** Requests at least this big get their own, never split, segment. */
  readonly maxSplitBytes?: number;
  /** Requests up to this size use size classes. */
  readonly smallMaxBytes?: number;
  readonly deviceOrdinal?: number;
}

export const arenaDefaults: RawArenaConfig = {
  backend: 'auto',
  capacityBytes: 1024 * 1024 * 1024,
  segmentBytes: 32 * 1024 * 1024,
  maxSplitBytes: 8 * 1024 * 1024,
  smallMaxBytes: 16 * 1024,
  deviceOrdinal: 0,
};

const backends: readonly ArenaBackend[] = ['auto', 'cuda', 'pinned', 'host', 'simulated'];
export const ownerKinds: readonly OwnerKind[] = ['tenant', 'model', 'worker-generation', 'batch', 'other'];

/** The one message format: "<where>: <what> must be <expectation>, got <value>". */
export function invalid(where: string, what: string, expectation: string, value: unknown): TypeError {
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return new TypeError(`${where}: ${what} must be ${expectation}, got ${shown}`);
}

/** A byte count: a safe integer, at least `min`. */
export function checkBytes(where: string, what: string, value: unknown, min = 1): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw invalid(where, what, `an integer number of bytes >= ${min}`, value);
  }
  return value;
}

export function checkName(where: string, what: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) {
    throw invalid(where, what, 'a non-empty string of at most 256 characters', value);
  }
  return value;
}

export function checkOwnerKind(where: string, value: unknown): OwnerKind {
  if (!ownerKinds.includes(value as OwnerKind)) throw invalid(where, 'kind', `one of ${ownerKinds.join(', ')}`, value);
  return value as OwnerKind;
}

/** Fills the defaults and checks every option. */
export function fillArenaOptions(options: ArenaOptions = {}): RawArenaConfig {
  const where = 'Arena.create';
  if (typeof options !== 'object' || options === null) throw invalid(where, 'options', 'an object', options);
  const filled = { ...arenaDefaults, ...options };
  if (!backends.includes(filled.backend)) throw invalid(where, 'backend', `one of ${backends.join(', ')}`, filled.backend);
  checkBytes(where, 'capacityBytes', filled.capacityBytes);
  checkBytes(where, 'segmentBytes', filled.segmentBytes);
  checkBytes(where, 'maxSplitBytes', filled.maxSplitBytes);
  checkBytes(where, 'smallMaxBytes', filled.smallMaxBytes, 256);
  if (filled.segmentBytes % 256 !== 0) throw invalid(where, 'segmentBytes', 'a multiple of 256', filled.segmentBytes);
  if (filled.maxSplitBytes > filled.segmentBytes) {
    throw invalid(where, 'maxSplitBytes', `at most segmentBytes (${filled.segmentBytes})`, filled.maxSplitBytes);
  }
  if (filled.smallMaxBytes * 8 > filled.maxSplitBytes) {
    throw invalid(where, 'smallMaxBytes', `at most maxSplitBytes / 8 (${filled.maxSplitBytes / 8})`, filled.smallMaxBytes);
  }
  if (!Number.isSafeInteger(filled.deviceOrdinal) || filled.deviceOrdinal < 0) {
    throw invalid(where, 'deviceOrdinal', 'a non-negative integer', filled.deviceOrdinal);
  }
  return filled;
}
