// Argument validation for src/native/executor.ts, piscina-style: a defaults
// table, a filled-options type and one message format ("<where>: <what> must
// be <expectation>, got <value>"). Native code keeps only guard checks.
//
// Run checks (rows, input bytes) name the input, the expected and the actual
// value, and throw NativeError INVALID_ARGUMENT, as batcher-options.ts does
// for enqueue.
import { checkName, invalid } from './arena-options.js';
import { NativeError } from './native-error.js';
import { planDTypes, type ExecutorDeviceKind, type ExecutorPlan, type RawExecutorOptions, type RawIoSpec } from './executor-binding-types.js';

export interface ExecutorOptions {
  /** A registered arena (Arena.create name): device memory for 'cuda', host-accessible for 'host'. */
  readonly arena: string;
  /** The tenant charged for weights and workspaces; default 'default'. */
  readonly tenant?: string;
  /** Arena owner id of the model version (Owner.id); destroying it frees the executor's memory. */
  readonly owner: number;
  /** Instance threads (streams) running batches at once; default 1. */
  readonly instances?: number;
  /** 'host' (default): the portable reference kernels; 'cuda': the device's own. */
  readonly device?: ExecutorDeviceKind;
  /** CUDA device ordinal; default 0. */
  readonly deviceOrdinal?: number;
}

export const executorDefaults = {
  tenant: 'default',
  instances: 1,
  device: 'host' as ExecutorDeviceKind,
  deviceOrdinal: 0,
};

const devices: readonly ExecutorDeviceKind[] = ['host', 'cuda'];

function checkInt(where: string, what: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(where, what, `an integer in [${min}, ${max}]`, value);
  }
  return value;
}

/** Fills the defaults and checks every option of Executor.create. */
export function fillExecutorOptions(options: ExecutorOptions): RawExecutorOptions {
  const where = 'Executor.create';
  if (typeof options !== 'object' || options === null) throw invalid(where, 'options', 'an object', options);
  const o = { ...executorDefaults, ...options };
  if (!devices.includes(o.device)) throw invalid(where, 'device', "'host' or 'cuda'", o.device);
  return {
    arena: checkName(where, 'arena', o.arena),
    tenant: checkName(where, 'tenant', o.tenant),
    owner: checkInt(where, 'owner', o.owner, 1, Number.MAX_SAFE_INTEGER),
    instances: checkInt(where, 'instances', o.instances, 1, 1024),
    device: o.device,
    deviceOrdinal: checkInt(where, 'deviceOrdinal', o.deviceOrdinal, 0, 1024),
  };
}

/** The plan's outline: the native side checks every field, this catches the wrong kind of value early. */
export function checkPlan(plan: ExecutorPlan): ExecutorPlan {
  const where = 'Executor.create';
  if (typeof plan !== 'object' || plan === null) throw invalid(where, 'plan', 'an object (planFromOnnx)', plan);
  checkName(where, 'plan.modelName', plan.modelName);
  for (const field of ['tensors', 'nodes', 'inputs', 'outputs'] as const) {
    if (!Array.isArray(plan[field])) throw invalid(where, `plan.${field}`, 'an array', plan[field]);
  }
  checkInt(where, 'plan.maxBatchSize', plan.maxBatchSize, 0, 0xffff_ffff);
  return plan;
}

const dtypeBytes: ReadonlyMap<number, number> = new Map([
  [planDTypes.FLOAT, 4],
  [planDTypes.INT32, 4],
  [planDTypes.INT64, 8],
  [planDTypes.FLOAT16, 2],
  [planDTypes.DOUBLE, 8],
]);

/** Bytes of `spec` for `rows` rows (-1 dims are the batch); undefined for an unknown dtype. */
export function ioBytes(spec: RawIoSpec, rows: number): number | undefined {
  const size = dtypeBytes.get(spec.dtype);
  if (size === undefined) return undefined;
  return spec.dims.reduce((n, d) => n * (d < 0 ? rows : d), size);
}

function bad(model: string, message: string): NativeError {
  return new NativeError('INVALID_ARGUMENT', `model '${model}': ${message}`, 'run');
}

/** Checks one run's rows and inputs against the executor's inputs; throws NativeError INVALID_ARGUMENT. */
export function checkRun(model: string, maxBatchSize: number, specs: readonly RawIoSpec[], inputs: readonly Uint8Array[], rows: number): void {
  const limit = Math.max(1, maxBatchSize);
  if (!Number.isSafeInteger(rows) || rows < 1 || rows > limit) {
    const why = maxBatchSize === 0 ? '1 (max_batch_size is 0)' : `in [1, ${limit}] (max_batch_size)`;
    throw bad(model, `rows: expected ${why}, got ${String(rows)}`);
  }
  if (!Array.isArray(inputs) || inputs.length !== specs.length) {
    throw bad(model, `expected ${specs.length} inputs (${specs.map((s) => s.name).join(', ')}), got ${Array.isArray(inputs) ? inputs.length : String(inputs)}`);
  }
  specs.forEach((spec, i) => {
    const data = inputs[i];
    if (!(data instanceof Uint8Array)) throw bad(model, `input '${spec.name}': expected a Uint8Array, got ${String(data)}`);
    const expected = ioBytes(spec, rows);
    if (expected !== undefined && data.byteLength !== expected) {
      throw bad(model, `input '${spec.name}': expected ${expected} bytes (${spec.dtypeName} [${spec.dims.map((d) => (d < 0 ? rows : d)).join(', ')}]), got ${data.byteLength}`);
    }
  });
}
