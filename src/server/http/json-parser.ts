/**
 * Parses JSON request bodies without blocking the event loop, under a
 * process-wide cap on parse work.
 *
 * JSON.parse runs synchronously: a 24 MB body of `{}` once held the event
 * loop for 20 s (health probes included). Small bodies (up to `inlineBytes`)
 * still parse inline, where a parse costs well under a millisecond; larger
 * ones are transferred to one worker thread (json-parse-worker.ts), which
 * first counts the body's values (json-body.ts checkJsonValues: a body of
 * millions of values is refused 400 before any is built) and then parses.
 * The event loop only receives the result (a structured clone).
 *
 * Parse work is capped: at most `maxQueued` bodies wait for or sit in the
 * worker; one more is refused 503 with Retry-After (`--http-json-queue`).
 * A worker that dies fails its jobs (500) and is replaced on the next parse.
 *
 * One per REST server, main thread (or one door thread). The worker is
 * unref'd: it never keeps the process alive; `close()` ends it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { internal, ServingError } from '../../common/serving-error.js';
import { isErrorKind } from '../../common/error-kinds.js';
import { HttpFramingError } from './http-reply.js';
import { parseJson } from './json-body.js';
import type { JsonJob, JsonResult } from './json-parse-worker.js';

export interface JsonParserOptions {
  /** Bodies up to this many bytes parse inline; default 256 KiB. */
  readonly inlineBytes?: number;
  /** Bodies queued for or in the worker at once; default 8. */
  readonly maxQueued?: number;
}

/** Seconds a client refused for parse work is told to wait. */
const RETRY_AFTER_S = 1;

interface Pending {
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export class JsonParser {
  readonly inlineBytes: number;
  readonly maxQueued: number;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(options: JsonParserOptions = {}) {
    this.inlineBytes = options.inlineBytes ?? 256 * 1024;
    this.maxQueued = options.maxQueued ?? 8;
  }

  /** Bodies now queued for or in the worker. */
  get queued(): number {
    return this.pending.size;
  }

  /**
   * The value of the JSON text `bytes`; throws 400 for malformed or oversized
   * JSON, 503 when the parse queue is full. `owned`: the caller gives `bytes`
   * up, so when they span their whole ArrayBuffer it moves to the worker
   * instead of being copied (a copy of a large body is a pause of its own).
   */
  parse(bytes: Uint8Array, owned = false): Promise<unknown> {
    if (bytes.byteLength <= this.inlineBytes) return Promise.resolve().then(() => parseJson(bytes));
    if (this.pending.size >= this.maxQueued) {
      return Promise.reject(
        new HttpFramingError(
          503,
          `the server is parsing ${this.pending.size} large JSON bodies, its limit (--http-json-queue ${this.maxQueued}); ` +
            `retry in ${RETRY_AFTER_S} s, or send tensors as binary data`,
          { 'retry-after': String(RETRY_AFTER_S) },
        ),
      );
    }
    const id = this.nextId++;
    // Otherwise a copy the worker can own: the view may share its ArrayBuffer (Node's pool, the rest of a body).
    const movable = owned && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const sent = movable ? bytes : new Uint8Array(bytes);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ensureWorker().postMessage({ id, bytes: sent } satisfies JsonJob, [sent.buffer as ArrayBuffer]);
    });
  }

  /** Ends the worker; parses still pending fail. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(internal('the server is shutting down'));
    await worker?.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(workerModulePath());
    worker.unref();
    worker.on('message', (result: JsonResult) => {
      const job = this.pending.get(result.id);
      if (job === undefined) return;
      this.pending.delete(result.id);
      if ('error' in result) {
        const { kind, message } = result.error;
        job.reject(new ServingError(isErrorKind(kind) ? kind : 'internal', message));
      } else {
        job.resolve(result.value);
      }
    });
    const lost = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(internal(`the JSON parse worker stopped (${why}); retry the request`));
    };
    worker.on('error', (err) => lost(err.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private failAll(err: ServingError): void {
    for (const job of this.pending.values()) job.reject(err);
    this.pending.clear();
  }
}

/** The compiled worker beside this file (dist), or dist's copy when running from the sources. */
function workerModulePath(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = path.join(path.dirname(here), 'json-parse-worker.js');
  if (existsSync(sibling)) return sibling;
  const packageRoot = path.resolve(path.dirname(here), '..', '..', '..');
  return path.join(packageRoot, 'dist', 'src', 'server', 'http', 'json-parse-worker.js');
}
