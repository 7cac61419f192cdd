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
import { getHeapStatistics } from 'node:v8';
import { threadId } from 'node:worker_threads';
import { Piscina } from 'piscina';
import * as ort from 'onnxruntime-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { useUint16ArrayForFloat16 } from './ort-float16.js';
import { Arena, type Block } from '../native/arena.js';
import { arenaTensor, fromOrtTensor, toOrtTensor } from './ort-tensors.js';
import { measureSessionFootprint } from './session-footprint.js';
import { warmUpWorker } from './worker-warmup.js';
import { openBatchChannel } from './worker-batches.js';
import { runOnSession } from './session-run.js';
import { claimTaskSlot } from './worker-exits.js';
import {
  epochMs,
  isArenaPayload,
  isInferFailure,
  type DescribeTask,
  type InferFailure,
  type InferResult,
  type InferTask,
  type InputPayload,
  type IoTensorDescription,
  type ModelIoDescription,
  type WorkerInitData,
} from './worker-protocol.js';

const init = Piscina.workerData as WorkerInitData;

/** Marks the task this worker runs in its pool's task table (worker-exits.ts); 0: none. */
const markTask = claimTaskSlot(init.taskSlots);

useUint16ArrayForFloat16();

// Measured so the model can be charged to its tenant (see session-footprint.ts).
const { value: session, bytes: footprintBytes } = await measureSessionFootprint(
  init.footprintLock,
  init.footprintFloorBytes,
  () =>
    ort.InferenceSession.create(init.modelPath, {
      intraOpNumThreads: init.intraOpThreads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    }),
);

/** The request arena, attached when the first arena-backed input arrives. */
let arena: Arena | undefined;

/**
 * Test-only leak (WorkerInitData.leakFault): blocks and buffers kept forever.
 * The blocks are allocated under the generation owner, which the main thread
 * created; destroying that owner frees them, whatever this thread holds.
 */
const leaked: { blocks: Block[]; buffers: Buffer[] } = { blocks: [], buffers: [] };
const leakBytes = init.faultInjection && init.leakFault !== undefined &&
  (init.leakFault.generations === undefined || init.generation <= init.leakFault.generations)
  ? init.leakFault.bytesPerTask
  : 0;

// Every worker warms itself before piscina hands it a task (see worker-warmup.ts).
const plan = await warmUpWorker(session, describe(), footprintBytes, () => {
  const heap = getHeapStatistics();
  return {
    threadId,
    heapTotalBytes: heap.total_heap_size,
    externalBytes: heap.external_memory,
  };
});

// Warm: from now on the batcher may hand this worker sealed batches natively
// (worker-batches.ts); piscina tasks (golden checks, faults, re-runs) still come too.
if (plan?.channel !== undefined) {
  try {
    openBatchChannel(session, plan.channel, leakAfterTask, init.faultInjection ? plan.channel.crashOnBatch : undefined);
  } catch {
    // The pool closed meanwhile (a retired generation): this worker serves piscina tasks only.
    // A throw here would fail module init, and piscina would respawn the worker forever.
  }
}

export default async function runTask(task: InferTask | DescribeTask): Promise<InferResult | InferFailure | ModelIoDescription> {
  if (task.kind === 'describe') return describe();
  const result = await infer(task);
  // A task refused before it ran leaks nothing, as a thrown one did not.
  if (!isInferFailure(result)) leakAfterTask();
  return result;
}

function leakAfterTask(): void {
  if (leakBytes <= 0) return;
  try {
    leak(leakBytes);
  } catch {
    // The arena is full: the fault hook must not fail the request it follows.
  }
}

function leak(bytes: number): void {
  arena ??= Arena.attach(init.arenaName ?? '');
  const owner = { id: init.generationOwnerId, kind: 'worker-generation' as const, label: `generation ${init.generation}`, parent: undefined };
  const block = arena.alloc(owner, bytes, { tenant: init.tenant });
  leaked.blocks.push(block);
  // Filled, so the pages are really touched (external memory and RSS grow).
  leaked.buffers.push(Buffer.alloc(bytes, 1));
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

async function infer(task: InferTask): Promise<InferResult | InferFailure> {
  // Cleared when the task ends, so a later exit of this worker takes no finished task with it.
  markTask(task.taskId ?? 0);
  try {
    return await inferMarked(task);
  } finally {
    markTask(0);
  }
}

async function inferMarked(task: InferTask): Promise<InferResult | InferFailure> {
  const startedAt = epochMs();
  const queueNs = msToNs(startedAt - task.queuedAtMs);
  if (task.deadlineMs !== undefined && startedAt > task.deadlineMs) {
    // Waited in the pool's queue past the caller's deadline: never run it.
    return { ok: false, failure: 'DEADLINE', message: `deadline exceeded before execution (waited ${Math.round(queueNs / 1e6)} ms for a worker)` };
  }
  if (task.fault === 'crash-worker' || task.fault === 'crash-worker-once') {
    if (!init.faultInjection) throw new Error('fault injection is disabled in this server');
    // Simulates a native crash of this worker: the thread ends with the task unfinished.
    process.exit(70);
  }
  if (task.faultDelayMs !== undefined) {
    if (!init.faultInjection) throw new Error('fault injection is disabled in this server');
    // Simulates a slow model: keeps this worker busy, as a long inference would.
    await sleep(task.faultDelayMs);
  }

  const mapped: Block[] = [];
  const run = await runOnSession(session, {
    prepare: () => {
      const feeds: Record<string, ort.Tensor> = {};
      for (const input of task.inputs) {
        if (isArenaPayload(input)) {
          // Map the main thread's block: a reference for the duration of the run, no copy.
          arena ??= Arena.attach(init.arenaName ?? '');
          const block = arena.adopt(input.arenaBlock);
          mapped.push(block);
          feeds[input.name] = arenaTensor(input, block.view());
        } else {
          feeds[input.name] = toOrtTensor(input);
        }
      }
      if (task.fetches === undefined) return { feeds, fetches: [...task.outputNames] };
      const fetches: Record<string, ort.Tensor | null> = {};
      for (const name of task.outputNames) fetches[name] = null;
      for (const output of task.fetches) {
        // Pre-allocated in the arena: onnxruntime fills it in place.
        arena ??= Arena.attach(init.arenaName ?? '');
        const block = arena.adopt(output.arenaBlock);
        mapped.push(block);
        fetches[output.name] = arenaTensor(output, block.view());
      }
      return { feeds, fetches };
    },
    release: () => {
      for (const block of mapped) block.release();
    },
    collect: (results) => {
      const preallocated = new Map((task.fetches ?? []).map((fetch) => [fetch.name, fetch]));
      return task.outputNames.map((name): InputPayload => preallocated.get(name) ?? fromOrtTensor(name, results[name]));
    },
  });
  if (!run.ok) return run;

  const outputs = run.value;
  const transfer = [
    ...new Set(outputs.flatMap((output) => (isArenaPayload(output) ? [] : [output.data.buffer as ArrayBuffer]))),
  ];
  const result: InferResult = {
    outputs,
    timing: {
      queueNs,
      computeInputNs: run.timing.inputNs,
      computeInferNs: run.timing.computeNs,
      computeOutputNs: run.timing.outputNs,
    },
  };
  // Hand the output buffers back without a structured-clone copy.
  const movable = { [Piscina.transferableSymbol]: transfer, [Piscina.valueSymbol]: result };
  return Piscina.move(movable as never) as unknown as InferResult;
}

function msToNs(ms: number): number {
  return Math.max(0, Math.round(ms * 1e6));
}
