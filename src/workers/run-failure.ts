/**
 * How an inference worker's run fails, on both of its entry points (a piscina
 * task and a natively handed batch): one data shape, one set of codes, and
 * one way the main thread turns it into the error a client sees.
 *
 * The codes are the native ExecutionFailure names a worker may report
 * (native/batcher/execution_target.h), so a failure reads the same whether it
 * crossed back through piscina or through the addon; their kinds come from the
 * shared vocabulary (common/error-kinds.ts, checked against the addon by
 * test/native/failure-vocabulary.test.ts).
 *
 * Pure types and functions: safe on any thread, loads no onnxruntime.
 */
import { ClassifiedError } from '../common/classified-error.js';
import { kindOfExecutionFailure, type ErrorKind } from '../common/error-kinds.js';
import type { WorkerFailure } from '../common/error-kinds.js';

export type { WorkerFailure } from '../common/error-kinds.js';

/** A run that failed, as data (a structured clone keeps it whole, unlike an Error's own fields). */
export interface RunFailure {
  readonly ok: false;
  readonly failure: WorkerFailure;
  readonly message: string;
}

/**
 * A worker's failed run, rethrown on the main thread. Its kind is the code's;
 * an INTERNAL failure (onnxruntime refused or failed the run) reads
 * 'inference failed: <onnxruntime's message>' to clients, as every failure
 * of a run that is not otherwise classified does (serving-error.ts).
 */
export class WorkerRunError extends ClassifiedError {
  override readonly name = 'WorkerRunError';
  readonly kind: ErrorKind;

  constructor(
    readonly failure: WorkerFailure,
    message: string,
  ) {
    super(message);
    this.kind = kindOfExecutionFailure(failure);
  }

  get clientMessage(): string {
    return this.failure === 'INTERNAL' ? `inference failed: ${this.message}` : this.message;
  }
}

export function isRunFailure(value: unknown): value is RunFailure {
  return (value as { ok?: unknown } | null)?.ok === false;
}
