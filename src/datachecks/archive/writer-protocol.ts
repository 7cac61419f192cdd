/**
 * Messages between PayloadArchive (main thread) and its writer thread.
 * `queuedBytes` is what the main thread charged to its bounded queue for a
 * batch; the thread hands it back with the batch's result, and the charge is
 * released then.
 */

export interface WriterSettings {
  readonly dir: string;
  readonly segmentBytes: number;
  readonly maxBytes: number;
  readonly fsyncIntervalMs: number;
}

export type WriterCommand =
  | { readonly type: 'records'; readonly payloads: Uint8Array[]; readonly queuedBytes: number }
  | { readonly type: 'close' };

export type WriterEvent =
  | { readonly type: 'written'; readonly records: number; readonly bytes: number; readonly tooLarge: number; readonly queuedBytes: number }
  | { readonly type: 'failed'; readonly records: number; readonly queuedBytes: number; readonly message: string }
  | { readonly type: 'fatal'; readonly message: string }
  | { readonly type: 'closed' };
