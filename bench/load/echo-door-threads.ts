// The echo contender with front-door threads (echo-server-process.ts with
// `threads` > 1): the same shape as hotpath's `--front-door-threads N`, so the
// two are compared at the same threading. One acceptor on the echo process's
// main thread takes every connection and hands it, round-robin, to one of N
// worker threads (echo-door-thread.ts), each with its own grpc-js echo server
// fed by `createConnectionInjector`.
//
// The acceptor IS hotpath's: src/server/door-acceptor.ts (accept with
// pauseOnConnect, the addon's dup() of the descriptor, this thread's handle
// destroyed, the duplicate posted to a thread), behind a ConnectionGate whose
// caps are out of reach (the echo refuses nothing). What differs is only the
// door thread's side: no admission interceptors, no HTTP/2 preface watch, and
// the answer is canned, which is the point of an echo.
//
// Ownership: the echo process's main thread owns the acceptor and the
// Workers; a descriptor is the acceptor's until posted, then its thread's.
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';

import { ConnectionGate } from '../../src/server/connection-gate.js';
import { DoorAcceptor, type HandOff } from '../../src/server/door-acceptor.js';
import { RefusalLog } from '../../src/observability/refusal-log.js';

const DOOR_THREAD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'echo-door-thread.js');

/** A door thread's workerData. */
export interface EchoDoorData {
  readonly index: number;
  /** The serialized ModelInferResponse every call is answered with. */
  readonly response: Uint8Array;
}

export type ToEchoDoor = { readonly type: 'connection'; readonly fd: number; readonly id: number };
export type FromEchoDoor = { readonly type: 'ready' } | { readonly type: 'closed'; readonly id: number };

interface Door {
  readonly worker: Worker;
  /** Connections handed to it since start. */
  connections: number;
}

export class EchoDoorThreads {
  private next = 0;
  private nextId = 1;
  /** Open connections: id -> frees its slot in the gate. */
  private readonly open = new Map<number, () => void>();
  private readonly acceptor: DoorAcceptor;

  private constructor(private readonly doors: readonly Door[]) {
    // Warnings and errors only, to stderr: the echo's stdout is the bench's.
    const logger = pino({ level: 'warn' }, pino.destination(2));
    const gate = new ConnectionGate({ total: Number.MAX_SAFE_INTEGER, perPeer: Number.MAX_SAFE_INTEGER }, new RefusalLog(logger));
    this.acceptor = new DoorAcceptor(gate, this.handOff, logger);
    for (const door of doors) {
      door.worker.on('message', (message: FromEchoDoor) => {
        if (message.type !== 'closed') return;
        this.open.get(message.id)?.();
        this.open.delete(message.id);
      });
    }
  }

  /** Starts `count` door threads answering with `response`; resolves once each has built its server. */
  static async start(count: number, response: Uint8Array): Promise<EchoDoorThreads> {
    const doors = Array.from({ length: count }, (_, index): Door => {
      const worker = new Worker(DOOR_THREAD, { workerData: { index, response } satisfies EchoDoorData });
      // A door thread that fails ends the echo: the suite sees the process exit and reports it.
      worker.once('error', (err) => {
        console.error(`echo door thread ${index} failed: ${err.stack ?? err.message}`);
        process.exit(1);
      });
      return { worker, connections: 0 };
    });
    await Promise.all(doors.map(async (door) => {
      const [message] = (await once(door.worker, 'message')) as [FromEchoDoor];
      if (message.type !== 'ready') throw new Error(`echo door thread: expected 'ready' first, got '${message.type}'`);
    }));
    return new EchoDoorThreads(doors);
  }

  /** Binds host:0; resolves with the port. */
  listen(host: string): Promise<number> {
    return this.acceptor.listen('grpc', host, 0);
  }

  /** Connections handed to each door thread so far, by index. */
  connections(): number[] {
    return this.doors.map((door) => door.connections);
  }

  private readonly handOff: HandOff = (_door, fd, release) => {
    const door = this.doors[this.next]!;
    this.next = (this.next + 1) % this.doors.length;
    const id = this.nextId;
    this.nextId += 1;
    this.open.set(id, release);
    door.connections += 1;
    door.worker.postMessage({ type: 'connection', fd, id } satisfies ToEchoDoor);
    return true;
  };
}
