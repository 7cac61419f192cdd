/**
 * The one run loop of an inference worker, shared by its two entry points: a
 * piscina task (inference-worker.ts) and a sealed batch handed over natively
 * (worker-batches.ts). Both go through the same three stages on one clock,
 * and both report a failure the same way, as a typed WorkerFailure code
 * (run-failure.ts), never as message text or a thrown error whose fields a
 * structured clone would drop.
 *
 *   input:   the entry point maps its tensors to feeds and fetches (no copy);
 *   compute: InferenceSession.run;
 *   output:  the entry point turns the results into its own answer.
 *
 * Timing comes from process.hrtime (monotonic, ns). Only a piscina task's
 * queue time, which starts on another thread, needs the epoch clock.
 *
 * Thread-safety: runs on the worker thread that owns `session`.
 */
import type * as ort from 'onnxruntime-node';
import type { RunFailure } from './run-failure.js';

/** Durations of one run's stages, in ns. */
export interface RunTiming {
  readonly inputNs: number;
  readonly computeNs: number;
  readonly outputNs: number;
}

/** What an entry point supplies: how to build the run's inputs, and what to make of its results. */
export interface RunStages<T> {
  /** Feeds and fetches over the entry point's memory. May throw (a tensor that cannot be mapped). */
  prepare(): { readonly feeds: Record<string, ort.Tensor>; readonly fetches: ort.InferenceSession.FetchesType };
  /** Called once the compute stage is over, whatever happened (e.g. release mapped arena blocks). */
  release?(): void;
  /** The entry point's answer from the session's results. May throw (an output missing). */
  collect(results: ort.InferenceSession.ReturnType): T;
}

export type RunOutcome<T> = { readonly ok: true; readonly value: T; readonly timing: RunTiming } | RunFailure;

/**
 * Runs `stages` on `session`. Resolves, never rejects: anything a stage or
 * onnxruntime throws becomes an INTERNAL failure carrying its message, which
 * the main thread answers as 'inference failed: ...' whichever entry point
 * ran it.
 */
export async function runOnSession<T>(session: ort.InferenceSession, stages: RunStages<T>): Promise<RunOutcome<T>> {
  const started = process.hrtime.bigint();
  try {
    let results: ort.InferenceSession.ReturnType;
    let inputDone: bigint;
    try {
      const { feeds, fetches } = stages.prepare();
      inputDone = process.hrtime.bigint();
      results = await session.run(feeds, fetches);
    } finally {
      stages.release?.();
    }
    const computeDone = process.hrtime.bigint();
    const value = stages.collect(results);
    return {
      ok: true,
      value,
      timing: {
        inputNs: Number(inputDone - started),
        computeNs: Number(computeDone - inputDone),
        outputNs: Number(process.hrtime.bigint() - computeDone),
      },
    };
  } catch (error) {
    return { ok: false, failure: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
  }
}
