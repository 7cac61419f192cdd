/**
 * The front-door threads (`--front-door-threads N`): N worker threads that
 * own the gRPC and HTTP connections the acceptor (door-acceptor.ts) hands
 * them, round-robin. Each runs server/door-thread-main.ts.
 *
 * What a door thread does (issue 20): it takes the transport (TLS, HTTP/2
 * and HTTP/1 framing, connection options and timeouts, the admission from
 * headers) off the main thread; it serves inference itself (gRPC ModelInfer,
 * ModelStreamInfer requests, HTTP infer) for the versions the main thread's
 * door catalog lists (inference/door-catalog.ts: batched numeric versions
 * whose path is the run alone), into the same
 * native batchers, counting in shared statistics and metrics; and it
 * forwards every other call to the main thread's own servers over private
 * unix sockets (door-forwarding.ts), where the request path runs as with one
 * thread. The catalog is posted again whenever it can change (`publish`) and
 * to each thread once it is ready.
 *
 * Life cycle: `start()` spawns them and waits until each has built its
 * servers; a door thread that exits while the server is not stopping is
 * logged, counted (`hotpath_door_thread_exits_total`) and, if it had been
 * ready, replaced (one that exits before it is ready fails start(), or, as a
 * replacement, is not started again: the others take its turns); its
 * connections' slots under the connection caps are freed (the thread's
 * sockets close with it). `drain()` asks every thread to finish its open
 * calls (a thread that exited has none: it counts as drained at once);
 * `cut()` cuts them; `close()` ends the threads.
 *
 * Ownership: main thread only; owns the Workers.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { HandOff } from './door-acceptor.js';
import { DOOR_COUNTERS, newDoorCounters, type DoorThreadSettings, type FromDoorMessage, type ToDoorMessage } from './door-thread-settings.js';
import type { DoorCatalog } from '../inference/door-catalog.js';
import type { DeviceFaultReport } from '../inference/door-inference.js';

/**
 * `--front-door-threads auto`: one door thread per two cores (the other
 * core of each pair is left to the batcher, executor and inference threads
 * the doors feed), at least 2 from 2 cores up, at most 8; 1 on one core.
 * Measured on this project's 2-core machine with the load generator on the
 * same cores (`npm run bench -- serve --threads 1,2`, ctr_mlp, h2load -c 4
 * -m 16, three runs): 2 threads served 1.51 to 1.77 times the requests per
 * second of 1 at 0.86 to 0.96 times the server's CPU per request, and one
 * request at one stream took 0.90 to 1.09 times as long. The 8 is the
 * issue's GPU-node sweep point, not yet measured: past it the single
 * batcher thread per version is the next limit to look at.
 */
export function frontDoorThreadCount(choice: number | 'auto', cores: number = os.availableParallelism()): number {
  if (choice !== 'auto') return choice;
  if (cores <= 1) return 1;
  return Math.min(AUTO_MAX_DOOR_THREADS, Math.max(2, Math.floor(cores / 2)));
}

/** `auto`'s ceiling (see frontDoorThreadCount). */
const AUTO_MAX_DOOR_THREADS = 8;

/** What the door threads ask of the server. */
export interface DoorThreadHooks {
  /** The door catalog now, for `doors` threads (inference/door-catalog.ts); undefined: doors forward every call. */
  readonly catalog?: (doors: number) => DoorCatalog;
  /** Door thread `index` exited: requests it had inside a version's gate will never leave. */
  readonly onExit?: (index: number) => void;
  /** A door's batch failed on the device (native executor): the version moves to CPU. */
  readonly onDeviceFault?: (report: DeviceFaultReport) => void;
}

/** One door thread's figures, read at scrape time. */
export interface DoorThreadFigures {
  readonly doorThread: number;
  /** Connections handed to this door (gRPC and HTTP), since start, replacements included. */
  readonly connections: number;
  /** Inference requests (gRPC ModelInfer, stream messages, HTTP infer) this door answered itself / forwarded to the main thread, since start, replacements included. */
  readonly servedInDoor: number;
  readonly forwarded: number;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  /** Built its servers and not exited: connections may go to it. */
  live: boolean;
  /** The worker exited (an unreplaced slot keeps it): nothing answers its messages. */
  exited: boolean;
  /** Open connections handed to this thread: id → frees its slot under the caps. */
  readonly open: Map<number, () => void>;
  connections: number;
  drained: (() => void) | undefined;
  /** The thread's ModelInfer counts (DOOR_COUNTERS layout), written by the thread, kept for its replacement. */
  readonly counters: SharedArrayBuffer;
}

export class FrontDoorThreads {
  private readonly slots: Slot[] = [];
  private next = 0;
  private nextId = 1;
  private stopping = false;
  /** start() resolved: a thread that exits before it is ready from now on is a replacement. */
  private started = false;
  /** Door threads that exited while the server was not stopping (replaced if they had been ready). */
  exits = 0;
  private readonly log: Logger;

  constructor(
    readonly count: number,
    private readonly settingsOf: (index: number) => DoorThreadSettings,
    private readonly logger: Logger,
    private readonly hooks: DoorThreadHooks = {},
  ) {
    this.log = logger.child({ component: 'door-threads' });
    for (let index = 0; index < count; index += 1) this.slots.push(this.spawn(index, 0, newDoorCounters()));
  }

  /** Resolves once every door thread has built its servers. */
  async start(): Promise<void> {
    await Promise.all(this.slots.map((slot) => slot.ready));
    this.started = true;
    this.log.info(
      { front_door_threads: this.count },
      'front-door threads serving: connections are handed round-robin; inference on the versions in the door catalog is served ' +
        'in the threads, every other call is forwarded to the main thread',
    );
  }

  /** The door catalog may have changed (a model loaded or unloaded, new routes): every live thread gets it now. */
  publish(): void {
    const catalogOf = this.hooks.catalog;
    if (catalogOf === undefined || this.stopping) return;
    const catalog = catalogOf(this.count);
    for (const slot of this.slots) if (slot.live) this.post(slot, { type: 'catalog', catalog });
    if (catalog.forwarded.length > 0) this.log.debug({ forwarded: catalog.forwarded }, 'versions the door threads forward to the main thread');
  }

  /** The acceptor's hand-off: the next door thread takes the descriptor. */
  readonly handOff: HandOff = (door, fd, release) => {
    if (this.stopping) return false;
    // The next live door thread (a replacement still starting takes its turn once ready); none: the acceptor closes it.
    let slot: Slot | undefined;
    for (let tries = 0; tries < this.slots.length && slot === undefined; tries += 1) {
      const candidate = this.slots[this.next]!;
      this.next = (this.next + 1) % this.slots.length;
      if (candidate.live) slot = candidate;
    }
    if (slot === undefined) return false;
    const id = this.nextId++;
    slot.open.set(id, release);
    slot.connections += 1;
    this.post(slot, { type: 'connection', door, fd, id });
    return true;
  };

  /** SIGHUP: each door thread reads its certificate files again. */
  reloadCertificates(): void {
    for (const slot of this.slots) this.post(slot, { type: 'reload-certificates' });
  }

  /** The drain: no new calls in any door thread; resolves once each finished its open calls (or exited). */
  async drain(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.slots.map(
        (slot) =>
          new Promise<void>((resolve) => {
            // An exited thread (one not replaced) would never answer: it has no calls open.
            if (slot.exited) {
              resolve();
              return;
            }
            slot.drained = resolve;
            this.post(slot, { type: 'drain' });
          }),
      ),
    );
  }

  /** The drain timed out: every door thread cuts its open calls and connections. */
  cut(): void {
    for (const slot of this.slots) this.post(slot, { type: 'cut' });
  }

  /** Ends every door thread (after the drain). */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.slots.map((slot) => slot.worker.terminate()));
  }

  figures(): DoorThreadFigures[] {
    return this.slots.map((slot, index) => {
      const counts = new Float64Array(slot.counters);
      return {
        doorThread: index,
        connections: slot.connections,
        servedInDoor: counts[DOOR_COUNTERS.servedInDoor]!,
        forwarded: counts[DOOR_COUNTERS.forwarded]!,
      };
    });
  }

  private post(slot: Slot, message: ToDoorMessage): void {
    slot.worker.postMessage(message);
  }

  private spawn(index: number, connections: number, counters: SharedArrayBuffer): Slot {
    const workerData: DoorThreadSettings = { ...this.settingsOf(index), counters };
    const worker = new Worker(doorThreadModulePath(), { workerData });
    const doorLog = this.logger.child({ door_thread: index });
    let markReady: () => void = () => {};
    let failStart: (err: Error) => void = () => {};
    const slot: Slot = {
      worker,
      ready: new Promise<void>((resolve, reject) => {
        markReady = resolve;
        failStart = reject;
      }),
      live: false,
      exited: false,
      open: new Map(),
      connections,
      drained: undefined,
      counters,
    };
    // A thread that fails before it is ready fails start(); later, replacement handles it.
    slot.ready.catch(() => {});
    worker.on('message', (message: FromDoorMessage) => {
      switch (message.type) {
        case 'ready': {
          slot.live = true;
          markReady();
          const catalogOf = this.hooks.catalog;
          if (catalogOf !== undefined && !this.stopping) this.post(slot, { type: 'catalog', catalog: catalogOf(this.count) });
          return;
        }
        case 'device-fault':
          this.hooks.onDeviceFault?.(message.report);
          return;
        case 'closed':
          slot.open.get(message.id)?.();
          slot.open.delete(message.id);
          return;
        case 'log':
          writeDoorLine(doorLog, message.line);
          return;
        case 'drained':
          slot.drained?.();
          return;
      }
    });
    worker.on('error', (err) => doorLog.error({ err }, 'door thread failed'));
    worker.on('exit', (code) => {
      const wasLive = slot.live;
      slot.live = false;
      slot.exited = true;
      // Its sockets closed with it: their slots under the caps are free.
      const reset = slot.open.size;
      for (const release of slot.open.values()) release();
      slot.open.clear();
      slot.drained?.();
      // Requests it had inside a version's gate never leave: an unload must not wait for them.
      this.hooks.onExit?.(index);
      failStart(new Error(`door thread ${index} exited (code ${code}) before it was ready`));
      if (this.stopping) return;
      this.exits += 1;
      // One that never got ready would fail the same way again: no respawn loop; the others take its turns.
      if (!wasLive) {
        if (this.started) {
          doorLog.error({ code }, 'door thread exited before it was ready: not replaced; the other door threads take its connections');
        } else {
          doorLog.error({ code }, 'door thread exited before it was ready: the front-door threads fail to start');
        }
        return;
      }
      doorLog.error({ code, open_connections_reset: reset }, 'door thread exited: its connections are reset; starting a new one');
      const replacement = this.spawn(index, slot.connections, slot.counters);
      this.slots[index] = replacement;
    });
    return slot;
  }
}

/** A door thread's pino line, written by the main thread's logger at its level (`door_thread` is bound). */
function writeDoorLine(log: Logger, line: string): void {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    log.warn({ line: line.slice(0, 512) }, 'door thread wrote a line that is not JSON');
    return;
  }
  const { level, msg, time: _time, pid: _pid, hostname: _hostname, door_thread: _door, ...fields } = record;
  const name = typeof level === 'number' ? log.levels.labels[level] : undefined;
  const write = name === undefined ? log.info.bind(log) : (log[name as 'info'] ?? log.info).bind(log);
  write(fields, typeof msg === 'string' ? msg : '');
}

/** The compiled entry beside this file (dist), or dist's copy when running from the sources. */
function doorThreadModulePath(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = path.join(path.dirname(here), 'door-thread-main.js');
  if (existsSync(sibling)) return sibling;
  const packageRoot = path.resolve(path.dirname(here), '..', '..');
  return path.join(packageRoot, 'dist', 'src', 'server', 'door-thread-main.js');
}
