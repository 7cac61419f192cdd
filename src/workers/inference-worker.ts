/**
 * The piscina worker that owns one onnxruntime InferenceSession.
 *
 * `InferenceSession.run()` executes synchronously on the calling JS thread, so
 * it must never run on the gRPC thread; each worker thread holds exactly one
 * session and runs one task at a time. The session is created when piscina
 * imports this module (top-level await), then warmed up; a model that cannot
 * be loaded makes the worker fail before it reports its session, which fails
 * the pool's creation.
 *
 * Thread-safety: everything here is confined to this worker thread.
 */
import { threadId } from 'node:worker_threads';
import { Piscina } from 'piscina';
import * as ort from 'onnxruntime-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { useUint16ArrayForFloat16 } from './ort-float16.js';
import { fromOrtTensor, toOrtTensor } from './ort-tensors.js';
import { warmUpWorker } from './worker-warmup.js';
import {
  epochMs,
  type DescribeTask,
  type InferResult,
  type InferTask,
  type IoTensorDescription,
  type ModelIoDescription,
  type TensorPayload,
  type WorkerInitData,
} from './worker-protocol.js';

const init = Piscina.workerData as WorkerInitData;

useUint16ArrayForFloat16();

const session = await ort.InferenceSession.create(init.modelPath, {
  intraOpNumThreads: init.intraOpThreads,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
});

// Every worker warms itself before piscina hands it a task (see worker-warmup.ts).
await warmUpWorker(session, describe());

export default async function runTask(task: InferTask | DescribeTask): Promise<InferResult | ModelIoDescription> {
  if (task.kind === 'describe') return describe();
  return infer(task);
}

function describe(): ModelIoDescription {
  const toDescription = (meta: ort.InferenceSession.ValueMetadata): IoTensorDescription => {
    if (!meta.isTensor) return { name: meta.name, type: 'non-tensor', shape: [] };
    return {
      name: meta.name,
      type: meta.type,
      shape: meta.shape.map((dim) => (typeof dim === 'number' && dim >= 0 ? dim : -1)),
    };
  };
  return {
    inputs: session.inputMetadata.map(toDescription),
    outputs: session.outputMetadata.map(toDescription),
    threadId,
  };
}

async function infer(task: InferTask): Promise<InferResult> {
  const startedAt = epochMs();
  if (task.fault === 'crash-worker') {
    if (!init.faultInjection) throw new Error('fault injection is disabled in this server');
    // Simulates a native crash of this worker: the thread ends with the task unfinished.
    process.exit(70);
  }
  if (task.faultDelayMs !== undefined) {
    if (!init.faultInjection) throw new Error('fault injection is disabled in this server');
    // Simulates a slow model: keeps this worker busy, as a long inference would.
    await sleep(task.faultDelayMs);
  }

  const feeds: Record<string, ort.Tensor> = {};
  for (const input of task.inputs) feeds[input.name] = toOrtTensor(input);
  const inputDone = epochMs();

  const results = await session.run(feeds, [...task.outputNames]);
  const inferDone = epochMs();

  const outputs: TensorPayload[] = task.outputNames.map((name) => fromOrtTensor(name, results[name]));
  const outputDone = epochMs();

  const transfer = [...new Set(outputs.map((output) => output.data.buffer as ArrayBuffer))];
  const result: InferResult = {
    outputs,
    timing: {
      queueNs: msToNs(startedAt - task.queuedAtMs),
      computeInputNs: msToNs(inputDone - startedAt),
      computeInferNs: msToNs(inferDone - inputDone),
      computeOutputNs: msToNs(outputDone - inferDone),
    },
  };
  // Hand the output buffers back without a structured-clone copy.
  const movable = { [Piscina.transferableSymbol]: transfer, [Piscina.valueSymbol]: result };
  return Piscina.move(movable as never) as unknown as InferResult;
}

function msToNs(ms: number): number {
  return Math.max(0, Math.round(ms * 1e6));
}
