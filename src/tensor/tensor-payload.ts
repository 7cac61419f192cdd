/**
 * Tensors as they cross the thread boundary between the request path and an
 * inference worker (src/workers/worker-protocol.ts carries them): inline,
 * with their data, or as a handle to an arena block the worker maps. Types
 * and two pure functions; safe in any thread.
 */
import type { NumericArray, OrtTensorType } from './wire-types.js';

/** A tensor as it crosses the thread boundary: data buffers are transferred, not copied. */
export interface TensorPayload {
  readonly name: string;
  readonly type: OrtTensorType;
  readonly dims: readonly number[];
  /** Typed array for fixed-size types; for BYTES, the raw wire bytes (length-prefixed). */
  readonly data: NumericArray | Uint8Array;
}

/**
 * A tensor whose bytes live in an arena block the main thread allocated: the
 * worker maps the block (no copy) by its handle. The main thread keeps its
 * reference until the response is built, so the block outlives the task.
 */
export interface ArenaTensorPayload {
  readonly name: string;
  readonly type: Exclude<OrtTensorType, 'string'>;
  readonly dims: readonly number[];
  readonly arenaBlock: number;
  readonly byteLength: number;
}

export type InputPayload = TensorPayload | ArenaTensorPayload;

export function isArenaPayload(payload: InputPayload): payload is ArenaTensorPayload {
  return (payload as ArenaTensorPayload).arenaBlock !== undefined;
}

/** Outputs of a task without pre-allocated fetches: every one carries its bytes. */
export function inlineOutputs(outputs: readonly InputPayload[]): TensorPayload[] {
  return outputs.map((output) => {
    if (isArenaPayload(output)) throw new Error(`output '${output.name}' is in arena memory, not inline`);
    return output;
  });
}
