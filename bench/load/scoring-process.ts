// One contender of the gpu benchmark (bench/suites/gpu.ts), in a fresh child
// process: builds the model in-process from its seed, opens it on the native
// executor (CUDA device or host kernels) or on onnxruntime-node's CPU
// provider, and for each batch size warms up, then times sequential runs
// (inputs already in host memory, outputs read back). Sends the per-run
// latencies and the last run's outputs, so the suite can check that both
// contenders computed the same numbers.
import { performance } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';

import { initMlp, mlpGraph } from '../../models/lib/mlp.js';
import { serializeModel } from '../../models/lib/onnx-builder.js';
import { SAMPLE_MODELS } from '../../models/lib/sample-models.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { planFromOnnx } from '../../src/executor/onnx-plan.js';
import { Arena } from '../../src/native/arena.js';
import { Executor } from '../../src/native/executor.js';
import { parentChannel } from './child-process.js';
import type { ToChild } from './messages.js';

/** A sample model by name, or an MLP generated from a seed (never written to disk). */
export type ScoringModel =
  | { readonly kind: 'sample'; readonly name: string; readonly width: number; readonly layers: readonly number[] }
  | { readonly kind: 'mlp'; readonly name: string; readonly width: number; readonly layers: readonly number[]; readonly seed: number };

export interface ScoringConfig {
  readonly contender: 'executor' | 'onnxruntime';
  readonly model: ScoringModel;
  /** Executor only: where it runs. */
  readonly device: 'cuda' | 'host';
  readonly deviceOrdinal: number;
  /** onnxruntime only. */
  readonly intraOpThreads: number;
  readonly batchSizes: readonly number[];
  /** Warm-up: at least 1 run, at most warmupRuns, stopping once warmupMs has passed. */
  readonly warmupRuns: number;
  readonly warmupMs: number;
  /** Timed: until durationMs has passed and minRuns are done, or maxRuns. */
  readonly durationMs: number;
  readonly minRuns: number;
  readonly maxRuns: number;
  readonly seed: number;
}

export interface ScoringFacts {
  /** 'cuda', 'host' (executor) or 'cpu' (onnxruntime). */
  readonly device: string;
  readonly kernels: string;
  readonly loadMs: number;
  readonly weightsBytes?: number;
  readonly workspaceBytes?: number;
  readonly steps?: number;
}

export interface ScoringPointRaw {
  readonly batch: number;
  readonly latenciesMs: Float64Array;
  /** Executor only: its own compute time per run (kernels, without copies). */
  readonly computeMs?: Float64Array;
  readonly elapsedMs: number;
  /** The last run's first output, flattened. */
  readonly output: Float32Array;
}

export interface ScoringResult {
  readonly facts: ScoringFacts;
  readonly points: readonly ScoringPointRaw[];
}

/** The model bytes: the same bytes models/generate.ts writes for a sample, or the seeded MLP. */
export function scoringModelBytes(model: ScoringModel): Uint8Array {
  if (model.kind === 'sample') {
    const sample = SAMPLE_MODELS.find((m) => m.name === model.name);
    if (sample === undefined) throw new Error(`no sample model '${model.name}'`);
    return sample.model();
  }
  const layers = initMlp(new SeededRandom(model.seed), { sizes: model.layers, finalActivation: 'none' });
  return serializeModel(mlpGraph(layers, { name: model.name, doc: 'gpu benchmark MLP (synthetic)', inputName: 'features', outputName: 'score' }));
}

/** Inputs in [-1, 1), the same for every contender at a given batch size. */
function inputFor(cfg: ScoringConfig, batch: number): Float32Array {
  return new SeededRandom(cfg.seed + batch).uniformArray(batch * cfg.model.width, -1, 1);
}

/** One contender behind one `run(batch)`: resolves with the first output and the compute time, if known. */
interface Runner {
  readonly facts: ScoringFacts;
  run(values: Float32Array, batch: number): Promise<{ output: Float32Array; computeMs?: number }>;
  close(): Promise<void>;
}

async function executorRunner(cfg: ScoringConfig, bytes: Uint8Array, maxBatchSize: number): Promise<Runner> {
  const started = performance.now();
  const capacityBytes = 4 * 1024 ** 3;
  const arena = Arena.create(`bench-gpu-${process.pid}`, {
    backend: cfg.device === 'cuda' ? 'cuda' : 'host',
    capacityBytes,
    deviceOrdinal: cfg.deviceOrdinal,
  });
  arena.setTenantQuota('default', capacityBytes);
  const owner = arena.createOwner('model', `${cfg.model.name}/1`);
  const plan = planFromOnnx(bytes, { modelName: `${cfg.model.name}:1`, maxBatchSize });
  const executor = Executor.create(plan, {
    arena: arena.name, tenant: 'default', owner: owner.id, instances: 1, device: cfg.device,
    ...(cfg.device === 'cuda' ? { deviceOrdinal: cfg.deviceOrdinal } : {}),
  });
  const facts: ScoringFacts = {
    device: executor.deviceKind,
    kernels: executor.kernels,
    loadMs: performance.now() - started,
    weightsBytes: executor.weightsBytes,
    workspaceBytes: executor.workspaceBytes,
    steps: executor.stepCount,
  };
  return {
    facts,
    async run(values, batch) {
      const result = await executor.run([new Uint8Array(values.buffer, values.byteOffset, values.byteLength)], batch);
      const out = result.outputs[0]!.bytes;
      return {
        output: new Float32Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength)),
        computeMs: result.timing.computeNs / 1e6,
      };
    },
    async close() {
      await executor.close();
      arena.destroyOwner(owner);
      arena.close();
    },
  };
}

async function ortRunner(cfg: ScoringConfig, bytes: Uint8Array): Promise<Runner> {
  const started = performance.now();
  const session = await ort.InferenceSession.create(bytes, {
    intraOpNumThreads: cfg.intraOpThreads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const input = session.inputNames[0]!;
  const output = session.outputNames[0]!;
  return {
    facts: { device: 'cpu', kernels: `onnxruntime-node CPU, intraOpNumThreads ${cfg.intraOpThreads}`, loadMs: performance.now() - started },
    async run(values, batch) {
      const results = await session.run({ [input]: new ort.Tensor('float32', values, [batch, cfg.model.width]) });
      return { output: results[output]!.data as Float32Array };
    },
    close: () => session.release(),
  };
}

async function measure(cfg: ScoringConfig): Promise<ScoringResult> {
  const bytes = scoringModelBytes(cfg.model);
  const maxBatchSize = Math.max(...cfg.batchSizes);
  const runner = cfg.contender === 'executor' ? await executorRunner(cfg, bytes, maxBatchSize) : await ortRunner(cfg, bytes);
  try {
    const points: ScoringPointRaw[] = [];
    for (const batch of cfg.batchSizes) {
      const values = inputFor(cfg, batch);
      const warmUntil = performance.now() + cfg.warmupMs;
      for (let i = 0; i < cfg.warmupRuns; i += 1) {
        await runner.run(values, batch);
        if (performance.now() >= warmUntil) break;
      }
      const latencies: number[] = [];
      const compute: number[] = [];
      let last: Float32Array = new Float32Array(0);
      const t0 = performance.now();
      const stopAt = t0 + cfg.durationMs;
      while (latencies.length < cfg.maxRuns) {
        const t = performance.now();
        const { output, computeMs } = await runner.run(values, batch);
        const done = performance.now();
        latencies.push(done - t);
        if (computeMs !== undefined) compute.push(computeMs);
        last = output;
        if (done >= stopAt && latencies.length >= cfg.minRuns) break;
      }
      points.push({
        batch,
        latenciesMs: Float64Array.from(latencies),
        ...(compute.length > 0 ? { computeMs: Float64Array.from(compute) } : {}),
        elapsedMs: performance.now() - t0,
        output: last,
      });
    }
    return { facts: runner.facts, points };
  } finally {
    await runner.close();
  }
}

if (process.send !== undefined) {
  const channel = parentChannel();
  channel.onMessage((message: ToChild) => {
    if (message.type !== 'start') return;
    measure(message.config as ScoringConfig).then(
      (result) => process.send!({ type: 'done', result }, () => process.exit(0)),
      (err: unknown) =>
        process.send!({ type: 'error', message: `${(message.config as ScoringConfig).contender}: ${err instanceof Error ? err.stack ?? err.message : err}` }, () => process.exit(1)),
    );
  });
}
