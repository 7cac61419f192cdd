/**
 * The load generator spread over N child processes (`--load-processes N`),
 * each running its own LoadLoop (load-worker.ts) with its share of the
 * connections and of the concurrency, so one generator core is not the
 * limit. Windows start and end in every process at the same instants (the
 * parent's, on the shared monotonic clock, whenever the message arrives) and
 * are merged: latencies concatenated, errors summed, and the
 * CPU of the busiest process, which is the one that would be client-bound.
 *
 * Owned by the command on its main thread; the children are killed if the
 * parent exits without closing them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoadLoopOptions, LoadGenerator, RequestDistribution, WindowRecord } from './load-loop.js';
import type { FromLoadWorker, ToLoadWorker } from './load-worker.js';

class Worker {
  private waiting: ((message: FromLoadWorker) => void)[] = [];
  private failure: string | undefined;

  constructor(readonly child: ChildProcess) {
    child.on('message', (message: FromLoadWorker) => {
      if (message.type === 'error') this.failure = message.message;
      this.waiting.shift()?.(message);
    });
    child.on('exit', (code, signal) => {
      this.failure ??= `load process exited (${signal ?? `code ${code}`})`;
      for (const waiter of this.waiting.splice(0)) waiter({ type: 'error', message: this.failure });
    });
  }

  send(message: ToLoadWorker): void {
    if (this.child.connected) this.child.send(message);
  }

  /** Sends `message` and resolves with the next answer; rejects on an error answer or exit. */
  async ask(message: ToLoadWorker): Promise<FromLoadWorker> {
    const answer = new Promise<FromLoadWorker>((resolve) => this.waiting.push(resolve));
    if (this.failure !== undefined) throw new Error(this.failure);
    this.send(message);
    const received = await answer;
    if (received.type === 'error') throw new Error(received.message);
    return received;
  }
}

export class LoadProcesses implements LoadGenerator {
  private constructor(private readonly workers: readonly Worker[]) {}

  /** Forks `processes` load processes and opens their connections (`connections` shared out, at least one each). */
  static async open(options: LoadLoopOptions, processes: number): Promise<LoadProcesses> {
    const script = fileURLToPath(new URL('./load-worker.js', import.meta.url));
    const workers = Array.from({ length: processes }, () => new Worker(fork(script, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })));
    const generator = new LoadProcesses(workers);
    process.once('exit', () => generator.close());
    try {
      await Promise.all(workers.map((worker, i) => worker.ask({ type: 'open', options: { ...options, connections: share(options.connections, processes, i) } })));
    } catch (err) {
      generator.close();
      throw err;
    }
    return generator;
  }

  setConcurrency(concurrency: number): void {
    this.workers.forEach((worker, i) => worker.send({ type: 'concurrency', value: share(concurrency, this.workers.length, i) }));
  }

  /** Each process sends 1/N of the rate on its own schedule: together the same rate (and, for Poisson, the same arrival process). */
  setRate(perSecond: number, distribution: RequestDistribution): void {
    for (const worker of this.workers) worker.send({ type: 'rate', perSecond: perSecond / this.workers.length, distribution });
  }

  startWindow(atNs: bigint = process.hrtime.bigint()): void {
    for (const worker of this.workers) worker.send({ type: 'start', atNs });
  }

  async takeWindow(atNs: bigint = process.hrtime.bigint()): Promise<WindowRecord> {
    const records = (await Promise.all(this.workers.map((worker) => worker.ask({ type: 'take', atNs })))).map((answer) => (answer as { record: WindowRecord }).record);
    const samples = new Map<string, number>();
    for (const record of records) for (const [text, count] of record.errorSamples) samples.set(text, (samples.get(text) ?? 0) + count);
    const lengths = records.reduce((sum, r) => sum + r.latenciesUs.length, 0);
    const latenciesUs = new Float64Array(lengths);
    let offset = 0;
    for (const record of records) {
      latenciesUs.set(record.latenciesUs, offset);
      offset += record.latenciesUs.length;
    }
    return {
      latenciesUs,
      errors: records.reduce((sum, r) => sum + r.errors, 0),
      errorSamples: samples,
      elapsedMs: Math.max(...records.map((r) => r.elapsedMs)),
      clientCpu: Math.max(...records.map((r) => r.clientCpu)),
    };
  }

  async drain(timeoutMs: number): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.ask({ type: 'drain', timeoutMs })));
  }

  close(): void {
    for (const worker of this.workers) {
      worker.send({ type: 'close' });
      if (worker.child.exitCode === null && worker.child.signalCode === null) {
        // Told to close; a process that does not go within a second is killed.
        setTimeout(() => worker.child.kill('SIGKILL'), 1000).unref();
      }
    }
  }
}

/** Process `i`'s part of `total` over `parts`: as even as possible, the first ones taking the remainder. */
export function share(total: number, parts: number, i: number): number {
  return Math.floor(total / parts) + (i < total % parts ? 1 : 0);
}
