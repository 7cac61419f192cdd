/**
 * The worker side of the native batch hand-off: once warm, a worker opens a
 * channel to its generation's native worker pool (src/native/worker-channel.ts)
 * and runs every sealed batch the pool hands it, on the batch's own arena
 * memory (inputs mapped, pre-allocated outputs filled in place, no copy).
 * Outputs whose shape is known only after the run are handed back as
 * onnxruntime allocated them (the native side copies them into batch memory).
 *
 * The handler starts the run and returns: onnxruntime resolves through this
 * thread's event loop, so piscina's own messages (warm-up, stats, tasks) keep
 * flowing. The run itself is session-run.ts's, the same loop (stages, clock,
 * failure codes) a piscina task goes through.
 *
 * Thread-safety: confined to the worker thread that opened the channel.
 */
import * as ort from 'onnxruntime-node';
import { WorkerChannel, type ChannelBatch, type ChannelOutcome } from '../native/worker-channel.js';
import { ortTypeToWire, wireTypeInfo } from '../tensor/wire-types.js';
import { runOnSession } from './session-run.js';
import type { ChannelSpec, ChannelTensor } from './worker-protocol.js';

/**
 * Registers this worker with the pool named in `spec`; batches run on
 * `session`. `afterBatch` runs after each (the test-only leak hook).
 */
export function openBatchChannel(
  session: ort.InferenceSession,
  spec: ChannelSpec,
  afterBatch: () => void,
  /** Test-only (fault injection): exit on this batch, with it in flight. */
  crashOnBatch: number | undefined,
): WorkerChannel {
  let batches = 0;
  const channel: WorkerChannel = WorkerChannel.open(spec.pool, (batch) => {
    batches += 1;
    if (batches === crashOnBatch) process.exit(70);
    // runBatch never rejects (runOnSession turns every failure into a code).
    void runBatch(session, spec, batch).then((outcome) => {
      channel.done(batch.token, outcome);
      if (outcome.ok) afterBatch();
    });
  });
  return channel;
}

async function runBatch(session: ort.InferenceSession, spec: ChannelSpec, batch: ChannelBatch): Promise<ChannelOutcome> {
  const run = await runOnSession(session, {
    prepare: () => {
      const feeds: Record<string, ort.Tensor> = {};
      spec.inputs.forEach((tensor, i) => {
        const input = batch.inputs[i];
        if (input === undefined) throw new Error(`the batch has no input '${tensor.name}'`);
        feeds[tensor.name] = over(tensor, input.buffer, input.shape);
      });
      const fetches: Record<string, ort.Tensor | null> = {};
      spec.outputs.forEach((tensor, i) => {
        const output = batch.outputs[i];
        // Pre-allocated in batch memory: onnxruntime fills it in place.
        fetches[tensor.name] = output === null || output === undefined ? null : over(tensor, output.buffer, output.shape);
      });
      return { feeds, fetches };
    },
    collect: (results) =>
      spec.outputs.map((tensor, i) => {
        const preallocated = batch.outputs[i];
        if (preallocated !== null && preallocated !== undefined) return { shape: preallocated.shape };
        const value = results[tensor.name] as ort.Tensor | undefined;
        if (value === undefined) throw new Error(`model produced no output named '${tensor.name}'`);
        return { shape: [...value.dims], data: value.data as ArrayBufferView };
      }),
  });
  return run.ok ? { ok: true, outputs: run.value, timing: run.timing } : run;
}

/** A tensor over `buffer` (batch memory), without copying it. */
function over(tensor: ChannelTensor, buffer: ArrayBuffer, shape: readonly number[]): ort.Tensor {
  const wire = ortTypeToWire(tensor.type);
  const array = wire === undefined ? undefined : wireTypeInfo(wire).array;
  if (array === undefined) throw new Error(`tensor '${tensor.name}': ${tensor.type} cannot live in batch memory`);
  const data = new array(buffer, 0, buffer.byteLength / array.BYTES_PER_ELEMENT);
  return new ort.Tensor(tensor.type, data as never, [...shape]);
}
