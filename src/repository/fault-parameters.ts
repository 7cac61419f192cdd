/**
 * Test-only model config parameters that inject faults into a model: a
 * worker leak, and request failures and added latency (the model-level
 * faults). They are honoured only when the server runs with
 * `--enable-fault-injection`; otherwise a model asking for one fails to load,
 * so a test configuration can never reach production by accident.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ModelConfig } from '../generated/model_config_pb.js';
import { internal } from '../common/serving-error.js';
import { parseByteSize } from '../tenancy/tenant-config.js';
import type { LeakFault } from '../workers/worker-protocol.js';
import { ModelConfigError } from './model-config-error.js';

/** Bytes each worker allocates and keeps after every task, e.g. "1MiB". */
export const LEAK_PARAMETER = 'hotpath_fault_leak_bytes_per_batch';
/** Only worker generations up to this number leak (default: all), so a restart can cure it. */
export const LEAK_GENERATIONS_PARAMETER = 'hotpath_fault_leak_generations';

/** The leak the config asks for, or undefined. Throws ModelConfigError without fault injection. */
export function leakFault(config: ModelConfig | undefined, faultInjection: boolean, file: string): LeakFault | undefined {
  const raw = config?.parameters[LEAK_PARAMETER]?.stringValue;
  if (raw === undefined) return undefined;
  if (!faultInjection) throw new ModelConfigError(file, undefined, `parameter '${LEAK_PARAMETER}' needs --enable-fault-injection`);
  let bytesPerTask: number;
  try {
    bytesPerTask = parseByteSize(raw, `parameter ${LEAK_PARAMETER}`);
  } catch (err) {
    throw new ModelConfigError(file, undefined, err instanceof Error ? err.message : String(err));
  }
  const generationsRaw = config?.parameters[LEAK_GENERATIONS_PARAMETER]?.stringValue;
  const generations = generationsRaw === undefined ? undefined : Number(generationsRaw);
  if (generations !== undefined && (!Number.isInteger(generations) || generations < 1)) {
    throw new ModelConfigError(file, undefined, `parameter '${LEAK_GENERATIONS_PARAMETER}' must be a positive integer, got '${generationsRaw}'`);
  }
  return bytesPerTask > 0 ? { bytesPerTask, generations } : undefined;
}

/** Share of the model's requests that fail as execution failures (INTERNAL, reason BACKEND), e.g. "0.3". */
export const ERROR_RATE_PARAMETER = 'hotpath_fault_error_rate';
/** Milliseconds added to the model's requests before they execute, e.g. "30". */
export const DELAY_PARAMETER = 'hotpath_fault_delay_ms';
/** Share of the model's requests that get the delay (default "1": all). */
export const DELAY_RATE_PARAMETER = 'hotpath_fault_delay_rate';
/** The faults act only during this many ms from the version's first request (default: forever). */
export const DURATION_PARAMETER = 'hotpath_fault_duration_ms';
/** Comma-separated versions the faults act on, e.g. "2" (default: every version of the model). */
export const VERSIONS_PARAMETER = 'hotpath_fault_versions';

const MODEL_FAULT_PARAMETERS = [ERROR_RATE_PARAMETER, DELAY_PARAMETER, DELAY_RATE_PARAMETER, DURATION_PARAMETER, VERSIONS_PARAMETER];

/** The model-level faults a config asks for (validated; see modelFaults). */
export interface ModelFaults {
  /** In [0, 1]. */
  readonly errorRate: number;
  readonly delayMs: number;
  /** In [0, 1]. */
  readonly delayRate: number;
  readonly durationMs: number | undefined;
  /** undefined: every version. */
  readonly versions: readonly number[] | undefined;
}

/**
 * The request failures and added latency the config asks for, or undefined
 * when it asks for none. Throws ModelConfigError for a malformed value, and
 * for any of them without fault injection (the model fails to load).
 */
export function modelFaults(config: ModelConfig | undefined, faultInjection: boolean, file: string): ModelFaults | undefined {
  const raw = (name: string) => config?.parameters[name]?.stringValue;
  const present = MODEL_FAULT_PARAMETERS.filter((name) => raw(name) !== undefined);
  if (present.length === 0) return undefined;
  if (!faultInjection) throw new ModelConfigError(file, undefined, `parameter '${present[0]}' needs --enable-fault-injection`);
  const number = (name: string, fallback: number, max: number, integer: boolean): number => {
    const text = raw(name);
    if (text === undefined) return fallback;
    const value = text.trim() === '' ? NaN : Number(text);
    if (!Number.isFinite(value) || value < 0 || value > max || (integer && !Number.isInteger(value))) {
      const expected = max === 1 ? 'a number in [0, 1]' : `an integer in [0, ${max}]`;
      throw new ModelConfigError(file, undefined, `parameter '${name}' must be ${expected}, got '${text}'`);
    }
    return value;
  };
  const versionsRaw = raw(VERSIONS_PARAMETER);
  let versions: number[] | undefined;
  if (versionsRaw !== undefined) {
    versions = versionsRaw.split(',').map((part) => (/^\s*\d{1,9}\s*$/.test(part) ? Number(part) : NaN));
    if (versions.length === 0 || versions.some((v) => !Number.isInteger(v) || v < 1)) {
      throw new ModelConfigError(file, undefined, `parameter '${VERSIONS_PARAMETER}' must list versions like "1,2", got '${versionsRaw}'`);
    }
  }
  const durationRaw = raw(DURATION_PARAMETER);
  return {
    errorRate: number(ERROR_RATE_PARAMETER, 0, 1, false),
    delayMs: number(DELAY_PARAMETER, 0, 600_000, true),
    delayRate: number(DELAY_RATE_PARAMETER, 1, 1, false),
    durationMs: durationRaw === undefined ? undefined : number(DURATION_PARAMETER, 0, 86_400_000, true),
    versions,
  };
}

/** What the request path knows of a model version. */
interface FaultTarget {
  readonly modelName: string;
  readonly version: number;
  readonly config: ModelConfig;
}

/** One version's faults and its request counters (each version counts its own requests). */
class ActiveFaults {
  private requests = 0;
  private startedAtMs: number | undefined;

  constructor(private readonly faults: ModelFaults) {}

  /** The next request's fate: its added delay, and whether it fails. */
  next(): { delayMs: number; fail: boolean } {
    const now = performance.now();
    this.startedAtMs ??= now;
    const { durationMs } = this.faults;
    if (durationMs !== undefined && now - this.startedAtMs >= durationMs) return { delayMs: 0, fail: false };
    const n = this.requests++;
    return {
      delayMs: this.faults.delayMs > 0 && spreadHit(n, this.faults.delayRate) ? this.faults.delayMs : 0,
      fail: spreadHit(n, this.faults.errorRate),
    };
  }
}

/**
 * Whether request `n` (0-based) of a version is hit at `rate`: the hits are
 * spread evenly, so every run of k consecutive requests holds floor or ceil
 * of k * rate hits (0.3 hits requests n = 3, 6, 9, 13, ...; 1 hits all; 0 none).
 * Deterministic, unlike a random draw, so a test's counts are exact.
 */
export function spreadHit(n: number, rate: number): boolean {
  return Math.floor((n + 1) * rate + 1e-9) > Math.floor(n * rate + 1e-9);
}

const active = new WeakMap<FaultTarget, ActiveFaults | null>();

/**
 * Acts out the version's model-level faults on one request, where the
 * request path calls it before the request executes: it waits the added
 * delay (without holding a worker or the batcher: the model's capacity is
 * unchanged, as behind a slow dependency), then throws INTERNAL for a request
 * picked to fail. Call it only with fault injection on: the loader refused
 * these parameters otherwise. A version whose config asks for nothing costs
 * one WeakMap lookup.
 */
export async function actOnModelFaults(version: FaultTarget): Promise<void> {
  let faults = active.get(version);
  if (faults === undefined) {
    // Validated when the version loaded, so this does not throw.
    const parsed = modelFaults(version.config, true, version.modelName);
    faults = parsed === undefined || (parsed.versions !== undefined && !parsed.versions.includes(version.version))
      ? null
      : new ActiveFaults(parsed);
    active.set(version, faults);
  }
  if (faults === null) return;
  const fate = faults.next();
  if (fate.delayMs > 0) await sleep(fate.delayMs);
  if (fate.fail) {
    throw internal(`model '${version.modelName}' version ${version.version}: injected failure (parameter '${ERROR_RATE_PARAMETER}')`);
  }
}
