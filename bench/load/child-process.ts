// Child processes of the serve benchmark (load generators and the raw
// onnxruntime run). Each child is forked with an IPC channel, exits by itself
// when its work is done or when the channel closes, and the suite kills any
// still alive (and runs registered clean-ups, e.g. temp repositories) when it
// finishes, fails, or is interrupted.
import { fork, type ChildProcess } from 'node:child_process';

import type { FromChild, ToChild } from './messages.js';

const live = new Set<ChildProcess>();
const cleanups = new Set<() => void>();
let hooked = false;

/** Kills every child still alive (SIGKILL: they hold no state worth saving), then runs the clean-ups. */
export function killAllChildren(): void {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  live.clear();
  for (const cleanup of cleanups) {
    try {
      cleanup();
    } catch {
      // best effort: the process is going away
    }
  }
  cleanups.clear();
}

/** Runs `cleanup` with killAllChildren (also on exit or a signal) unless the returned function is called first. */
export function atExit(cleanup: () => void): () => void {
  hookExit();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', killAllChildren);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAllChildren();
      process.exit(130);
    });
  }
}

/** Registers a process started elsewhere (the server) for the kill-on-exit sweep. */
export function track(child: ChildProcess): void {
  hookExit();
  live.add(child);
  child.once('exit', () => live.delete(child));
}

export class Child {
  private readonly process: ChildProcess;
  private readonly inbox: FromChild[] = [];
  private waiter: ((message: FromChild) => void) | undefined;
  private stderr = '';
  readonly exited: Promise<number | null>;

  constructor(modulePath: string, label: string) {
    this.process = fork(modulePath, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
    track(this.process);
    this.process.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.process.on('message', (message: FromChild) => this.deliver(message));
    this.exited = new Promise((resolve) => {
      this.process.once('exit', (code, signal) => {
        this.deliver({ type: 'error', message: `${label} exited (${signal ?? code}) before answering\n${this.stderr}` });
        resolve(code);
      });
    });
  }

  /** The child's process id (for reading its CPU time from /proc). */
  get pid(): number {
    return this.process.pid!;
  }

  send(message: ToChild): void {
    this.process.send(message);
  }

  /** The next message of `type`; an `error` message, an early exit or `timeoutMs` rejects. */
  async next(type: 'ready' | 'done', timeoutMs: number): Promise<FromChild> {
    const message = await new Promise<FromChild>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no '${type}' from child within ${timeoutMs} ms`)), timeoutMs);
      const take = (m: FromChild) => {
        clearTimeout(timer);
        resolve(m);
      };
      const queued = this.inbox.shift();
      if (queued !== undefined) take(queued);
      else this.waiter = take;
    });
    if (message.type === 'error') throw new Error(message.message);
    if (message.type !== type) throw new Error(`expected '${type}' from child, got '${message.type}'`);
    return message;
  }

  kill(): void {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
  }

  private deliver(message: FromChild): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter !== undefined) waiter(message);
    else this.inbox.push(message);
  }
}

/** In a child: the parent's messages, and a way to answer. Exits when the parent goes away. */
export function parentChannel(): { send(message: FromChild): void; onMessage(handler: (message: ToChild) => void): void } {
  if (process.send === undefined) throw new Error('this module runs as a child process of the serve benchmark');
  process.once('disconnect', () => process.exit(0));
  return {
    send: (message) => process.send!(message),
    onMessage: (handler) => process.on('message', handler as (message: unknown) => void),
  };
}
