/**
 * A load-generator process of `hotpath perf --load-processes N` (forked by
 * load-processes.ts with an IPC channel, advanced serialization so that
 * typed arrays and maps travel as they are). It runs one LoadLoop over its
 * share of the connections and obeys the parent: open, concurrency or rate, start a
 * window, take it, drain, close. It exits when told to close or when the
 * channel closes (its parent is gone), so it never outlives a run.
 *
 * Single-threaded: the loop and the message handler share this process's
 * event loop.
 */
import { LoadLoop, type LoadLoopOptions, type RequestDistribution, type WindowRecord } from './load-loop.js';

export type ToLoadWorker =
  | { readonly type: 'open'; readonly options: LoadLoopOptions }
  | { readonly type: 'concurrency'; readonly value: number }
  | { readonly type: 'rate'; readonly perSecond: number; readonly distribution: RequestDistribution }
  | { readonly type: 'start'; readonly atNs: bigint }
  | { readonly type: 'take'; readonly atNs: bigint }
  | { readonly type: 'drain'; readonly timeoutMs: number }
  | { readonly type: 'close' };

export type FromLoadWorker =
  | { readonly type: 'opened' }
  | { readonly type: 'window'; readonly record: WindowRecord }
  | { readonly type: 'drained' }
  | { readonly type: 'error'; readonly message: string };

let loop: LoadLoop | undefined;

function reply(message: FromLoadWorker): void {
  process.send?.(message);
}

async function onMessage(message: ToLoadWorker): Promise<void> {
  switch (message.type) {
    case 'open':
      loop = await LoadLoop.open(message.options);
      reply({ type: 'opened' });
      return;
    case 'concurrency':
      loop?.setConcurrency(message.value);
      return;
    case 'rate':
      loop?.setRate(message.perSecond, message.distribution);
      return;
    case 'start':
      loop?.startWindow(message.atNs);
      return;
    case 'take':
      if (loop !== undefined) reply({ type: 'window', record: loop.takeWindow(message.atNs) });
      return;
    case 'drain':
      await loop?.drain(message.timeoutMs);
      reply({ type: 'drained' });
      return;
    case 'close':
      loop?.close();
      process.disconnect?.();
      return;
  }
}

if (process.send !== undefined) {
  process.on('message', (message: ToLoadWorker) => {
    onMessage(message).catch((err: unknown) => reply({ type: 'error', message: err instanceof Error ? err.message : String(err) }));
  });
  // The parent is gone (or said close): nothing more to do.
  process.on('disconnect', () => {
    loop?.close();
    process.exit(0);
  });
}
