// Argument validation for src/native/batcher.ts, piscina-style: a defaults
// table, a filled-options type and one message format ("<where>: <what> must
// be <expectation>, got <value>"). Native code keeps only guard checks.
//
// Request checks (enqueue) name the input, the expected and the actual value,
// and throw NativeError INVALID_ARGUMENT, so the server answers them as it
// answers any other bad request.
import { invalid } from './arena-options.js';
import { NativeError } from './native-error.js';
import type { RawBatcherConfig, RawQueuePolicy } from './batcher-binding-types.js';
import type { BatcherInputSpec, BatcherOptions, EnqueueRequest, QueuePolicyOptions, SealedBatch, ValidatedEnqueue } from './batcher-types.js';

const u32Max = 0xffff_ffff;
/** The core's bound on configured durations (about 11.6 days). */
const maxMicroseconds = 1e12;

export const queuePolicyDefaults: RawQueuePolicy = {
  maxQueueSize: 0,
  defaultTimeoutUs: 0,
  timeoutAction: 'REJECT',
  allowTimeoutOverride: false,
};

export const batcherDefaults = {
  tenant: 'default',
  maxBatchSize: 0,
  preferredBatchSizes: [] as readonly number[],
  maxQueueDelayUs: 0,
  preserveOrdering: false,
  priorityLevels: 0,
  defaultPriorityLevel: 0,
  instances: 1,
  clock: 'steady' as const,
};

/** Options after defaults and checks: what the wrapper keeps. */
export interface FilledBatcherOptions {
  readonly raw: RawBatcherConfig;
  readonly modelName: string;
  readonly tenant: string;
  readonly maxBatchSize: number;
  readonly inputs: readonly BatcherInputSpec[];
  /**
   * Per input, the positions of its -1 dims (those a request sets): the
   * fixed ones crossed to native once, at create (raw.inputDims), so a
   * request carries only these (variableDimsOf).
   */
  readonly variableDims: readonly (readonly number[])[];
  /** The number of -1 dims over all inputs; 0: a request carries no dims at all. */
  readonly variableDimCount: number;
  readonly onBatch: (batch: SealedBatch) => unknown;
}

function checkInt(where: string, what: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(where, what, `an integer in [${min}, ${max}]`, value);
  }
  return value;
}

function checkString(where: string, what: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) {
    throw invalid(where, what, 'a non-empty string of at most 256 characters', value);
  }
  return value;
}

function checkBool(where: string, what: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalid(where, what, 'a boolean', value);
  return value;
}

function fillQueuePolicy(where: string, what: string, policy: QueuePolicyOptions | undefined): RawQueuePolicy {
  if (policy !== undefined && (typeof policy !== 'object' || policy === null)) throw invalid(where, what, 'an object', policy);
  const filled = { ...queuePolicyDefaults, ...policy };
  checkInt(where, `${what}.maxQueueSize`, filled.maxQueueSize, 0, u32Max);
  checkInt(where, `${what}.defaultTimeoutUs`, filled.defaultTimeoutUs, 0, maxMicroseconds);
  if (filled.timeoutAction !== 'REJECT' && filled.timeoutAction !== 'DELAY') {
    throw invalid(where, `${what}.timeoutAction`, "'REJECT' or 'DELAY'", filled.timeoutAction);
  }
  checkBool(where, `${what}.allowTimeoutOverride`, filled.allowTimeoutOverride);
  return filled;
}

function checkInputs(where: string, inputs: unknown): readonly BatcherInputSpec[] {
  if (!Array.isArray(inputs) || inputs.length === 0) throw invalid(where, 'inputs', 'a non-empty array', inputs);
  return inputs.map((input: BatcherInputSpec, i) => {
    const what = `inputs[${i}]`;
    if (typeof input !== 'object' || input === null) throw invalid(where, what, 'an object', input);
    const name = checkString(where, `${what}.name`, input.name);
    const elementBytes = checkInt(where, `${what}.elementBytes`, input.elementBytes, 0, 1024);
    if (!Array.isArray(input.dims)) throw invalid(where, `${what}.dims`, 'an array of integers >= -1', input.dims);
    input.dims.forEach((dim, d) => checkInt(where, `${what}.dims[${d}]`, dim, -1, 2 ** 40));
    return { name, elementBytes, dims: [...input.dims] };
  });
}

/** Fills the defaults and checks every option of Batcher.create. */
export function fillBatcherOptions(options: BatcherOptions): FilledBatcherOptions {
  const where = 'Batcher.create';
  if (typeof options !== 'object' || options === null) throw invalid(where, 'options', 'an object', options);
  const o = { ...batcherDefaults, ...options };
  const arena = checkString(where, 'arena', o.arena);
  const tenant = checkString(where, 'tenant', o.tenant);
  const owner = checkInt(where, 'owner', o.owner, 1, Number.MAX_SAFE_INTEGER);
  const modelName = checkString(where, 'modelName', o.modelName);
  if (typeof o.onBatch !== 'function') throw invalid(where, 'onBatch', 'a function', o.onBatch);
  const maxBatchSize = checkInt(where, 'maxBatchSize', o.maxBatchSize, 0, u32Max);
  if (!Array.isArray(o.preferredBatchSizes)) throw invalid(where, 'preferredBatchSizes', 'an array', o.preferredBatchSizes);
  for (const size of o.preferredBatchSizes) {
    if (maxBatchSize === 0) throw invalid(where, 'preferredBatchSizes', 'empty when maxBatchSize is 0', `[${o.preferredBatchSizes.join(', ')}]`);
    checkInt(where, 'preferredBatchSizes[]', size, 1, maxBatchSize);
  }
  const maxQueueDelayUs = checkInt(where, 'maxQueueDelayUs', o.maxQueueDelayUs, 0, maxMicroseconds);
  const preserveOrdering = checkBool(where, 'preserveOrdering', o.preserveOrdering);
  const priorityLevels = checkInt(where, 'priorityLevels', o.priorityLevels, 0, u32Max);
  const defaultPriorityLevel =
    priorityLevels === 0
      ? checkInt(where, 'defaultPriorityLevel', o.defaultPriorityLevel, 0, 0)
      : checkInt(where, 'defaultPriorityLevel', o.defaultPriorityLevel, 1, priorityLevels);
  const defaultQueuePolicy = fillQueuePolicy(where, 'defaultQueuePolicy', o.defaultQueuePolicy);
  const levels = o.priorityQueuePolicy ?? {};
  if (typeof levels !== 'object' || levels === null) throw invalid(where, 'priorityQueuePolicy', 'an object keyed by level', levels);
  const priorityQueuePolicy = Object.entries(levels).map(([key, policy]) => {
    const level = Number(key);
    if (!Number.isSafeInteger(level) || level < 1 || level > priorityLevels) {
      throw invalid(where, 'priorityQueuePolicy', `keys in [1, ${priorityLevels}] (priorityLevels)`, key);
    }
    return { level, ...fillQueuePolicy(where, `priorityQueuePolicy[${level}]`, policy) };
  });
  const instanceCount = checkInt(where, 'instances', o.instances, 1, u32Max);
  if (o.clock !== 'steady' && o.clock !== 'manual') throw invalid(where, 'clock', "'steady' or 'manual'", o.clock);
  const inputs = checkInputs(where, o.inputs);
  const variableDims = inputs.map((input) => input.dims.flatMap((dim, k) => (dim === -1 ? [k] : [])));
  return {
    raw: {
      arena,
      tenant,
      owner,
      modelName,
      clock: o.clock,
      inputCount: inputs.length,
      inputDims: inputs.map((input) => [...input.dims]),
      instanceCount,
      maxBatchSize,
      preferredBatchSizes: [...o.preferredBatchSizes],
      maxQueueDelayUs,
      preserveOrdering,
      priorityLevels,
      defaultPriorityLevel,
      defaultQueuePolicy,
      priorityQueuePolicy,
    },
    modelName,
    tenant,
    maxBatchSize,
    inputs,
    variableDims,
    variableDimCount: variableDims.reduce((sum, positions) => sum + positions.length, 0),
    onBatch: o.onBatch,
  };
}

/**
 * A request's dims at its version's -1 positions, inputs in order: all the
 * shape a request carries across to native (null when every dim is fixed).
 * `shapes[i][offset + k]` is input i's dim k as the batcher counts it, so
 * offset 1 reads shapes that lead with the batch dimension. A missing dim
 * reads -1, which the native side refuses (INVALID_ARGUMENT).
 */
export function variableDimsOf(options: FilledBatcherOptions, shapes: readonly (readonly number[] | undefined)[], offset: number): number[] | null {
  if (options.variableDimCount === 0) return null;
  const out: number[] = [];
  options.variableDims.forEach((positions, i) => {
    const shape = shapes[i];
    for (const k of positions) out.push(shape?.[offset + k] ?? -1);
  });
  return out;
}

/** A deadline given as ms remaining, in the binding's µs (clamped to [0, 10^12]). */
export function deadlineMicroseconds(deadlineMs: number): number {
  return Math.min(maxMicroseconds, Math.max(0, Math.round(deadlineMs * 1000)));
}

/**
 * What batcherEnqueue needs after the checks: a validated request, its
 * deadline in µs (null: none) and its variable dims (variableDimsOf).
 */
export type CheckedRequest = Omit<ValidatedEnqueue, 'deadlineMs' | 'shapes'> & {
  readonly deadlineUs: number | null;
  readonly variableDims: readonly number[] | null;
};

function bad(model: string, message: string): NativeError {
  return new NativeError('INVALID_ARGUMENT', `model '${model}': ${message}`, 'enqueue');
}

function shown(dims: readonly number[]): string {
  return `[${dims.join(', ')}]`;
}

/** Checks one request against the model's inputs; throws NativeError INVALID_ARGUMENT. */
export function checkEnqueue(options: FilledBatcherOptions, request: EnqueueRequest): CheckedRequest {
  const model = options.modelName;
  if (typeof request !== 'object' || request === null) throw bad(model, `request must be an object, got ${String(request)}`);
  const { rows = 1, priority = 0, timeoutUs = 0, deadlineMs, inputs, dims } = request;
  const rowLimit = options.maxBatchSize === 0 ? 1 : options.maxBatchSize;
  if (!Number.isSafeInteger(rows) || rows < 1 || rows > rowLimit) {
    const limit = options.maxBatchSize === 0 ? '1 (max_batch_size is 0)' : `in [1, ${rowLimit}] (max_batch_size)`;
    throw bad(model, `rows: expected ${limit}, got ${String(rows)}`);
  }
  if (!Number.isSafeInteger(priority) || priority < 0 || priority > u32Max) throw bad(model, `priority: expected an integer >= 0, got ${String(priority)}`);
  if (!Number.isSafeInteger(timeoutUs) || timeoutUs < 0) throw bad(model, `timeout: expected an integer number of µs >= 0, got ${String(timeoutUs)}`);
  let deadlineUs: number | null = null;
  if (deadlineMs !== undefined) {
    if (typeof deadlineMs !== 'number' || Number.isNaN(deadlineMs)) throw bad(model, `deadlineMs: expected a number, got ${String(deadlineMs)}`);
    deadlineUs = deadlineMicroseconds(deadlineMs);
  }
  const specs = options.inputs;
  if (!Array.isArray(inputs) || inputs.length !== specs.length) {
    throw bad(model, `expected ${specs.length} inputs (${specs.map((s) => s.name).join(', ')}), got ${Array.isArray(inputs) ? inputs.length : String(inputs)}`);
  }
  if (!Array.isArray(dims) || dims.length !== specs.length) {
    throw bad(model, `expected dims for ${specs.length} inputs, got ${Array.isArray(dims) ? dims.length : String(dims)}`);
  }
  specs.forEach((spec, i) => {
    const data = inputs[i];
    const shape = dims[i];
    if (!(data instanceof Uint8Array)) throw bad(model, `input '${spec.name}': expected a Uint8Array, got ${String(data)}`);
    if (!Array.isArray(shape) || shape.length !== spec.dims.length || shape.some((d, k) => !Number.isSafeInteger(d) || d < 0 || (spec.dims[k] !== -1 && d !== spec.dims[k]))) {
      throw bad(model, `input '${spec.name}': expected dims ${shown(spec.dims)}, got ${Array.isArray(shape) ? shown(shape) : String(shape)}`);
    }
    if (spec.elementBytes > 0) {
      const elements = shape.reduce((a, b) => a * b, 1) * (options.maxBatchSize === 0 ? 1 : rows);
      const expected = elements * spec.elementBytes;
      if (data.byteLength !== expected) {
        throw bad(model, `input '${spec.name}': expected ${expected} bytes (${elements} elements of ${spec.elementBytes} bytes), got ${data.byteLength}`);
      }
    }
  });
  return { rows, priority, timeoutUs, deadlineUs, inputs, variableDims: variableDimsOf(options, dims, 0) };
}
