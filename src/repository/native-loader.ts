/**
 * Which executor a model version runs on, and loading it on the native one.
 *
 * Selection, per version (README "GPU nodes"):
 * - parameter `executor: "onnxruntime"` → onnxruntime on CPU;
 * - parameter `executor: "native"` → the native executor, on the CUDA device
 *   when the server has a device ledger on one, else on host kernels. Forced:
 *   a graph the executor cannot run fails the load, naming the op and node;
 * - `instance_group { kind: KIND_GPU }` → the native executor on the CUDA
 *   device when one is usable and every op is supported; otherwise
 *   onnxruntime on CPU, with the reason in the repository index, /healthz and
 *   the log. (Triton refuses to load a KIND_GPU model without a GPU; hotpath
 *   serves it on CPU instead, deliberately.)
 * - anything else → onnxruntime on CPU.
 *
 * The executor's weights and workspaces are charged to the model's tenant in
 * the device ledger (the host ledger without one); batches stage through the
 * host ledger.
 *
 * Main thread only.
 */
import { echoField } from '../common/echo.js';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { status } from '@grpc/grpc-js';
import type { ModelConfig } from '../generated/model_config_pb.js';
import { ModelInstanceGroup_Kind } from '../generated/model_config_pb.js';
import { ServingError } from '../common/serving-error.js';
import { OnnxPlanError, planFromOnnx, type OnnxPlan } from '../executor/onnx-plan.js';
import { Executor } from '../native/executor.js';
import { NativeError } from '../native/native-error.js';
import type { ModelSignature } from '../tensor/model-signature.js';
import type { ServerMemory } from '../tenancy/server-memory.js';
import { ModelConfigError } from './model-config-error.js';
import { VersionMemory } from './version-memory.js';
import { completeConfig } from './strict-config.js';
import { validateModelConfig } from './model-config.js';
import { ModelVersion, type PoolStarter } from './model-version.js';
import { toTensorInfo } from './tensor-info.js';
import { VersionExecutor } from '../executor/version-executor.js';
import type { DeviceHealth } from '../executor/device-health.js';
import type { DeviceFallbackReason } from '../observability/metric-names.js';
import { signatureFromConfig } from '../tensor/model-signature.js';
import { ARENA_NAME } from '../tenancy/server-memory.js';

export const EXECUTOR_PARAMETER = 'executor';

export interface ExecutorSelection {
  /** Try the native executor (on `device`), or go straight to onnxruntime. */
  readonly native: boolean;
  readonly device: 'cuda' | 'host';
  /** `executor: native`: a failure fails the load instead of falling back. */
  readonly forced: boolean;
  /** Why onnxruntime runs the model although the executor was asked for ('' when it was not asked for). */
  readonly note: string;
}

/** Reads the config's wish and the server's device (see the file comment). */
export function selectExecutor(
  config: ModelConfig | undefined,
  memory: ServerMemory,
  file: string,
  deviceLost: string | undefined,
): ExecutorSelection {
  const parameter = config?.parameters[EXECUTOR_PARAMETER]?.stringValue;
  if (parameter !== undefined && parameter !== 'native' && parameter !== 'onnxruntime') {
    throw new ModelConfigError(file, undefined, `parameter '${EXECUTOR_PARAMETER}': expected "native" or "onnxruntime", got "${parameter}"`);
  }
  // After a lost device, `executor: native` runs on host kernels: the context is unusable.
  const onCuda = memory.device?.backend === 'cuda' && deviceLost === undefined;
  if (parameter === 'onnxruntime') return { native: false, device: 'host', forced: false, note: '' };
  if (parameter === 'native') return { native: true, device: onCuda ? 'cuda' : 'host', forced: true, note: '' };
  const gpuGroups = (config?.instanceGroup ?? []).filter((group) => group.kind === ModelInstanceGroup_Kind.GPU);
  if (gpuGroups.length === 0) return { native: false, device: 'host', forced: false, note: '' };
  const onCpu = (why: string): ExecutorSelection => ({ native: false, device: 'host', forced: false, note: onCpuNote(why) });
  if (deviceLost !== undefined) return onCpu(`the CUDA device was lost earlier in this process (${deviceLost})`);
  if (!onCuda) {
    return onCpu(memory.device === undefined ? memory.deviceUnavailableReason : 'the device ledger is backed by host memory (test hook)');
  }
  const listed = gpuGroups.flatMap((group) => group.gpus);
  const ordinal = memory.device?.ordinal ?? 0;
  if (listed.length > 0 && !listed.includes(ordinal)) {
    return onCpu(`instance_group lists gpus [${listed.join(', ')}], but this server drives device ${ordinal} (--device)`);
  }
  return { native: true, device: 'cuda', forced: false, note: '' };
}

/** Parses the model file into the executor's plan. Throws OnnxPlanError. */
export async function readPlan(modelPath: string, modelName: string, maxBatchSize: number): Promise<OnnxPlan> {
  return planFromOnnx(new Uint8Array(await readFile(modelPath)), { modelName, maxBatchSize });
}

/**
 * The plan with its graph inputs and outputs in the config's order and only
 * the config's outputs: sealed batches carry inputs in config order, and the
 * executor produces exactly what responses need.
 */
export function alignPlan(plan: OnnxPlan, signature: ModelSignature): OnnxPlan {
  const index = (name: string, kind: string): number => {
    const found = plan.tensors.findIndex((tensor) => tensor.name === name);
    if (found < 0) throw new OnnxPlanError('INVALID_ARGUMENT', plan.modelName, `the config's ${kind} '${name}' is not in the model`);
    return found;
  };
  return {
    ...plan,
    inputs: signature.inputs.map((spec) => index(spec.name, 'input')),
    outputs: signature.outputs.map((spec) => index(spec.name, 'output')),
  };
}

export interface CreateExecutorOptions {
  readonly plan: OnnxPlan;
  readonly selection: ExecutorSelection;
  readonly memory: ServerMemory;
  readonly versionMemory: VersionMemory;
  readonly tenant: string;
  readonly instances: number;
}

/**
 * Creates the executor: compiles the plan, uploads the weights and plans the
 * workspaces in the tenant's ledger. Errors: RESOURCE_EXHAUSTED naming the
 * tenant, the ledger, the quota and the usage; otherwise the native message
 * (an unsupported op names the op and node).
 */
export function createExecutor(options: CreateExecutorOptions): Executor {
  const charge = options.versionMemory.executorOwner(options.selection.device);
  try {
    return Executor.create(options.plan, {
      arena: charge.arena,
      tenant: options.tenant,
      owner: charge.ownerId,
      instances: options.instances,
      device: options.selection.device,
      deviceOrdinal: options.memory.device?.ordinal ?? 0,
    });
  } catch (err) {
    if (err instanceof NativeError && err.code === 'RESOURCE_EXHAUSTED') {
      const arena = charge.ledger === 'device' ? options.memory.device?.arena : options.memory.arena;
      const tenant = arena?.stats().tenants.find((t) => t.name === options.tenant);
      const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
      const usage = tenant === undefined ? '' : `; the tenant uses ${mib(tenant.used)} of its ${mib(tenant.quota)} ${charge.ledger} quota`;
      throw new ServingError(
        status.RESOURCE_EXHAUSTED,
        `tenant '${options.tenant}' has no room in the ${charge.ledger} memory ledger for the native executor's weights and workspaces${usage} (${err.message})`,
      );
    }
    throw err;
  }
}

/** Why a KIND_GPU version runs on onnxruntime instead (index, /healthz, log). */
function onCpuNote(why: string): string {
  return `KIND_GPU requested, running on onnxruntime (CPU): ${why}`;
}

/** A forced native version the executor cannot take fails its load as a config error. */
function forcedNativeFailure(file: string, why: string): ModelConfigError {
  return new ModelConfigError(file, undefined, `parameter 'executor' is "native", but ${why}`);
}

/** The message of a plan or executor failure, for logs and the index. */
export function failureMessage(err: unknown): string {
  if (err instanceof OnnxPlanError) return err.reason;
  if (err instanceof NativeError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/** What loading a native version needs from the model manager. */
export interface NativeLoadDeps {
  readonly memory: ServerMemory;
  readonly deviceHealth: DeviceHealth;
  readonly probeIntervalMs: number;
  readonly logger: Logger;
  readonly onDeviceFallback?: ((version: ModelVersion, reason: DeviceFallbackReason, detail: string) => void) | undefined;
  readonly onStateChange?: (() => void) | undefined;
  /** Off: the config must say everything auto-complete would fill (strict-config.ts). */
  readonly autoCompleteConfig: boolean;
  /** max_batch_size of auto-completed configs that can batch (`--backend-config=onnxruntime,default-max-batch-size=N`). */
  readonly defaultMaxBatchSize?: number | undefined;
  /** Threads that record the version's statistics (model-loader.ts's option); default 1. */
  readonly statisticsShards?: number | undefined;
}

/**
 * Loads a version on the native executor: plan, config, executor in the
 * tenant's ledger, and the fallback wiring (see executor/version-executor.ts).
 * When the executor cannot take the model and the choice was not forced,
 * answers the reason instead, and the caller loads it on onnxruntime.
 */
export async function loadNativeVersion(args: {
  name: string;
  version: number;
  config: ModelConfig;
  modelPath: string;
  file: string;
  tenant: string;
  instances: number;
  selection: ExecutorSelection;
  startPool: PoolStarter;
},
deps: NativeLoadDeps,
): Promise<{ version: ModelVersion } | { note: string }> {
  const { name, version, file, tenant, instances, selection } = args;
  const label = `${name}:${version}`;
  let plan;
  let config: ModelConfig;
  let signature: ModelSignature;
  try {
    const parsed = await readPlan(args.modelPath, label, args.config.maxBatchSize);
    config = completeConfig(args.config, name, toTensorInfo(parsed.io), { file, autoComplete: deps.autoCompleteConfig, defaultMaxBatchSize: deps.defaultMaxBatchSize });
    validateModelConfig(config, { file, modelName: name });
    signature = signatureFromConfig(config);
    plan = alignPlan(parsed, signature);
  } catch (err) {
    if (err instanceof ModelConfigError) throw err;
    if (selection.forced) throw forcedNativeFailure(file, failureMessage(err));
    return { note: onCpuNote(failureMessage(err)) };
  }
  const memory = VersionMemory.forLoad(deps.memory, {
    tenant,
    model: echoField(name),
    version,
    estimateBytes: 0,
    hostFootprint: false,
    onEvict: () => false,
  });
  let executor: Executor;
  try {
    executor = createExecutor({ plan, selection, memory: deps.memory, versionMemory: memory, tenant, instances });
  } catch (err) {
    memory.destroy();
    if (selection.forced || (err instanceof ServingError && err.code === status.RESOURCE_EXHAUSTED)) {
      throw selection.forced && err instanceof NativeError && err.code === 'FAILED_PRECONDITION'
        ? forcedNativeFailure(file, err.message)
        : err;
    }
    return { note: onCpuNote(failureMessage(err)) };
  }
  const fields = { model: echoField(name), model_version: String(version), tenant };
  const log = deps.logger.child(fields);
  let loaded: ModelVersion | undefined;
  const native = new VersionExecutor({
    executor,
    signature,
    deviceHealth: deps.deviceHealth,
    probeIntervalMs: deps.probeIntervalMs,
    hostArenaName: ARENA_NAME,
    indexBounds: plan.indexBounds,
    logger: log,
    onMove: (to, reason, detail) => {
      if (loaded === undefined) return;
      if (to === 'cpu') {
        loaded.batcher?.setNativeTarget(undefined);
        if (reason !== 'recovered') deps.onDeviceFallback?.(loaded, reason, detail);
      } else {
        loaded.batcher?.setNativeTarget(executor);
        void loaded.retireCpuPool().catch((err: unknown) => log.error({ error: failureMessage(err) }, 'retiring the CPU pool failed'));
      }
      deps.onStateChange?.();
    },
    onClosed: () => memory.releaseExecutorMemory(),
  });
  loaded = new ModelVersion(name, version, config, undefined, memory, args.startPool, instances, deps.statisticsShards);
  loaded.attachNative(native);
  log.info(
    {
      executor: native.kind,
      kernels: executor.kernels,
      steps: executor.stepCount,
      instances: executor.instances,
      weights_bytes: executor.weightsBytes,
      workspace_bytes: executor.workspaceBytes,
      ledger: memory.executorOwner(selection.device).ledger,
    },
    'model version runs on the native executor',
  );
  return { version: loaded };
}
