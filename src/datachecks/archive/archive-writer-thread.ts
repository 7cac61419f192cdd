/**
 * The archive's writer thread (a worker_thread started by PayloadArchive):
 * every file call of the archive happens here, off the main thread.
 *
 * It takes batches of encoded payloads, frames and appends them
 * (SegmentStore), syncs on a timer when something was written (batched
 * fsync), and acknowledges each batch, so the main thread's bounded queue
 * knows what is still in flight. A failed write (a full disk) drops the
 * batch, reports it, and gives up the segment it was writing; the next batch
 * starts a new one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SegmentStore } from './segment-store.js';
import type { WriterCommand, WriterEvent, WriterSettings } from './writer-protocol.js';

const settings = workerData as WriterSettings;
const port = parentPort!;
const post = (event: WriterEvent) => port.postMessage(event);

let store: SegmentStore | undefined;
try {
  store = new SegmentStore(settings);
} catch (err) {
  post({ type: 'fatal', message: messageOf(err) });
}

const syncTimer = setInterval(() => syncNow(), settings.fsyncIntervalMs);
syncTimer.unref();

port.on('message', (command: WriterCommand) => {
  switch (command.type) {
    case 'records':
      write(command.payloads, command.queuedBytes);
      break;
    case 'close':
      clearInterval(syncTimer);
      try {
        store?.close();
      } catch (err) {
        post({ type: 'failed', records: 0, queuedBytes: 0, message: messageOf(err) });
      }
      post({ type: 'closed' });
      port.close();
      break;
  }
});

function write(payloads: Uint8Array[], queuedBytes: number): void {
  if (store === undefined) {
    post({ type: 'failed', records: payloads.length, queuedBytes, message: 'the archive directory could not be opened' });
    return;
  }
  try {
    const result = store.append(payloads);
    post({ type: 'written', records: result.records, bytes: result.bytes, tooLarge: result.tooLarge, queuedBytes });
  } catch (err) {
    store.abandonCurrent();
    post({ type: 'failed', records: payloads.length, queuedBytes, message: messageOf(err) });
  }
}

function syncNow(): void {
  try {
    store?.sync();
  } catch (err) {
    store?.abandonCurrent();
    post({ type: 'failed', records: 0, queuedBytes: 0, message: `fsync: ${messageOf(err)}` });
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
