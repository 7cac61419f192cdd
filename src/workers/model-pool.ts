/**
 * One model version's worker pool: a piscina pool whose every thread holds one
 * onnxruntime session for the same model file.
 *
 * Ownership: the ModelVersion that created the pool owns it and is the only one
 * that closes it. Thread-safety: used from the main thread only; piscina does
 * the cross-thread work.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type {
  DescribeTask,
  InferResult,
  InferTask,
  ModelIoDescription,
  WorkerInitData,
} from './worker-protocol.js';

export interface ModelPoolOptions {
  readonly modelPath: string;
  /** Worker threads, i.e. `instance_group.count`. */
  readonly instances: number;
  readonly intraOpThreads: number;
  readonly faultInjection: boolean;
  readonly logger: Logger;
}

/** Raised when the worker running a task died; the task's requests fail, later ones succeed. */
export class WorkerCrashedError extends Error {
  override readonly name = 'WorkerCrashedError';
}

export class ModelPool {
  private readonly piscina: Piscina<InferTask | DescribeTask, InferResult | ModelIoDescription>;

  private constructor(private readonly options: ModelPoolOptions) {
    const workerData: WorkerInitData = {
      modelPath: options.modelPath,
      intraOpThreads: options.intraOpThreads,
      faultInjection: options.faultInjection,
    };
    this.piscina = new Piscina({
      filename: workerModulePath(),
      minThreads: options.instances,
      maxThreads: options.instances,
      // Sessions are expensive to create: never retire an idle worker.
      idleTimeout: Number.POSITIVE_INFINITY,
      // One task per worker at a time: a session runs one batch at a time.
      concurrentTasksPerWorker: 1,
      // Tasks are async (onnxruntime resolves through the event loop), so the
      // worker must not block in Atomics.wait between tasks.
      atomics: 'disabled',
      workerData,
    });
    // piscina reports worker deaths that had no task attached here; a death with
    // a task attached rejects that task instead (and the pool replaces the worker).
    this.piscina.on('error', (err: Error) => {
      options.logger.error({ err, model_path: options.modelPath }, 'inference worker failed');
    });
  }

  /** Starts the workers and returns once one of them has loaded the model. */
  static async create(options: ModelPoolOptions): Promise<{ pool: ModelPool; io: ModelIoDescription }> {
    const pool = new ModelPool(options);
    try {
      const io = (await pool.piscina.run({ kind: 'describe' })) as ModelIoDescription;
      return { pool, io };
    } catch (err) {
      await pool.close();
      throw new Error(`cannot load ${options.modelPath}: ${errorMessage(err)}`, { cause: err });
    }
  }

  get instances(): number {
    return this.options.instances;
  }

  /** Runs one inference task; input buffers in `transfer` are moved, not copied. */
  async infer(task: InferTask, transfer: ArrayBuffer[]): Promise<InferResult> {
    try {
      return (await this.piscina.run(task, { transferList: transfer })) as InferResult;
    } catch (err) {
      if (err instanceof Error && /^worker exited with code/.test(err.message)) {
        throw new WorkerCrashedError(`inference worker died while running the request (${err.message})`);
      }
      throw err;
    }
  }

  /** Finishes queued and running tasks, then stops every worker (and its session). */
  async close(): Promise<void> {
    await this.piscina.close();
  }

}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The compiled worker module. Under vitest this file is loaded from src/*.ts,
 * while workers must run compiled JS, so map to the dist/ twin in that case.
 */
function workerModulePath(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = path.join(path.dirname(here), 'inference-worker.js');
  if (existsSync(sibling)) return sibling;
  const packageRoot = path.resolve(path.dirname(here), '..', '..');
  return path.join(packageRoot, 'dist', 'src', 'workers', 'inference-worker.js');
}
