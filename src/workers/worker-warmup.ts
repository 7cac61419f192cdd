/**
 * The worker side of warm-up: runs inside each inference worker while piscina
 * imports it (module init), right after the session is created, so a worker —
 * an initial one or the replacement of a crashed one — takes no task before it
 * is warm. piscina cannot address one particular worker, hence the handshake:
 *
 *   worker → main (parentPort): `hotpath:session` with the model's I/O and a port
 *   main → worker (that port):  the WarmupPlan (once the config is complete)
 *   worker → main (parentPort): `hotpath:warm` with runs, duration and failures
 *
 * A failed sample never throws out of module init: piscina would respawn the
 * worker forever. It is reported, and the main thread decides.
 *
 * Resolves with the plan once the worker is warm (undefined when a required
 * sample failed): the worker then opens its batch channel, if the plan names one.
 *
 * The port stays open after warm-up (unref'd, so it never keeps the worker
 * alive): the main thread asks on it for the worker's memory figures
 * (`hotpath:stats`), which the leak patrol samples.
 *
 * Thread-safety: confined to the worker thread.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, parentPort, threadId } from 'node:worker_threads';
import type * as ort from 'onnxruntime-node';
import { toOrtTensor } from './ort-tensors.js';
import type {
  ModelIoDescription,
  WarmupPlan,
  WorkerSessionMessage,
  WorkerStatsMessage,
  WorkerStatsRequest,
  WorkerWarmMessage,
} from './worker-protocol.js';

export async function warmUpWorker(
  session: ort.InferenceSession,
  io: ModelIoDescription,
  footprintBytes: number,
  stats: () => Omit<WorkerStatsMessage, 'type' | 'id'>,
): Promise<WarmupPlan | undefined> {
  if (parentPort === null) return undefined; // not in a worker (never the case under piscina)
  const { port1, port2 } = new MessageChannel();
  const planArrived = once(port1, 'message') as Promise<[WarmupPlan]>;
  const hello: WorkerSessionMessage = { type: 'hotpath:session', threadId, io, port: port2, footprintBytes };
  parentPort.postMessage(hello, [port2]);
  const [plan] = await planArrived;
  port1.on('message', (request: WorkerStatsRequest) => {
    if (request?.type !== 'hotpath:stats') return;
    const reply: WorkerStatsMessage = { type: 'hotpath:stats', id: request.id, ...stats() };
    port1.postMessage(reply);
  });
  port1.unref();

  const started = performance.now();
  const warnings: string[] = [];
  let runs = 0;
  let error: string | undefined;
  if (plan.delayMs > 0) await sleep(plan.delayMs);
  samples: for (const sample of plan.samples) {
    const feeds: Record<string, ort.Tensor> = {};
    for (const input of sample.inputs) feeds[input.name] = toOrtTensor(input);
    for (let i = 0; i < sample.runs; i++) {
      try {
        await session.run(feeds);
        runs += 1;
      } catch (err) {
        const message = `warm-up sample '${sample.name}' failed: ${err instanceof Error ? err.message : String(err)}`;
        if (sample.required) {
          error = message;
          break samples;
        }
        warnings.push(message);
        continue samples;
      }
    }
  }
  const done: WorkerWarmMessage = {
    type: 'hotpath:warm',
    threadId,
    runs,
    durationMs: performance.now() - started,
    warnings,
    ...(error !== undefined ? { error } : {}),
  };
  parentPort.postMessage(done);
  // A worker whose required sample failed takes no batches: its version never turns READY.
  return error === undefined ? plan : undefined;
}
