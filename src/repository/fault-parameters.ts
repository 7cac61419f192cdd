/**
 * Test-only model config parameters that inject faults into a model's workers.
 * They are honoured only when the server runs with `--enable-fault-injection`;
 * otherwise a model asking for a leak fails to load, so a test configuration
 * can never leak in production by accident.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
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
