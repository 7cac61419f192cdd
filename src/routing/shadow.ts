/**
 * Shadow work: a copy of a request scored by the shadow model after the
 * primary answered, whose answer never reaches the client.
 *
 * ShadowQueue holds that work in a bounded queue and runs at most
 * `concurrency` jobs at a time. `offer` never blocks and never runs the job
 * on the caller's stack: it returns false, and counts a drop, when the queue
 * is full, so shadow work is the first thing shed when the server is busy.
 * A job that throws or rejects is counted (and passed to onError), never
 * rethrown. One queue serves every route and outlives routes reloads.
 *
 * Counters are read at scrape time (`counts()`), not pushed per job.
 * Single-threaded (the main thread).
 */

export type ShadowJob = () => Promise<unknown>;

export interface ShadowQueueOptions {
  /** Jobs waiting to start, at most (>= 1). */
  readonly capacity: number;
  /** Jobs running at once, at most (>= 1). */
  readonly concurrency: number;
  /** Called with each job's error; it must not throw. */
  readonly onError?: (error: unknown) => void;
  /** How a pump is deferred off the caller's stack; setImmediate by default (tests may inject). */
  readonly schedule?: (run: () => void) => void;
}

export interface ShadowCounts {
  /** Jobs accepted by offer. */
  readonly accepted: number;
  /** Jobs refused by offer (queue full or closed). */
  readonly dropped: number;
  /** Jobs that resolved. */
  readonly completed: number;
  /** Jobs that threw or rejected. */
  readonly errors: number;
  readonly queued: number;
  readonly running: number;
}

export class ShadowQueue {
  private readonly queue: ShadowJob[] = [];
  private running = 0;
  private accepted = 0;
  private dropped = 0;
  private completed = 0;
  private errors = 0;
  private pumpScheduled = false;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  private readonly schedule: (run: () => void) => void;

  constructor(private readonly options: ShadowQueueOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1 || !Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new RangeError(`ShadowQueue: expected integer capacity and concurrency >= 1, got ${options.capacity} and ${options.concurrency}`);
    }
    this.schedule = options.schedule ?? ((run) => void setImmediate(run));
  }

  /** Queues `job`; false (a counted drop) when the queue is full or closed. */
  offer(job: ShadowJob): boolean {
    if (this.closed || this.queue.length >= this.options.capacity) {
      this.dropped++;
      return false;
    }
    this.queue.push(job);
    this.accepted++;
    if (!this.pumpScheduled) {
      this.pumpScheduled = true;
      this.schedule(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    }
    return true;
  }

  counts(): ShadowCounts {
    return {
      accepted: this.accepted,
      dropped: this.dropped,
      completed: this.completed,
      errors: this.errors,
      queued: this.queue.length,
      running: this.running,
    };
  }

  /** Resolves once nothing is queued or running (for shutdown and tests). */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Refuses new jobs and drops the queued ones (counted as dropped); running jobs finish. */
  close(): void {
    this.closed = true;
    this.dropped += this.queue.length;
    this.queue.length = 0;
    this.settleIdle();
  }

  private pump(): void {
    while (this.running < this.options.concurrency && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.running++;
      let promise: Promise<unknown>;
      try {
        promise = Promise.resolve(job());
      } catch (error) {
        promise = Promise.reject(error);
      }
      promise.then(
        () => this.finish(false),
        (error: unknown) => {
          try {
            this.options.onError?.(error);
          } catch {
            // A throwing listener must not turn into an unhandled rejection.
          }
          this.finish(true);
        },
      );
    }
    this.settleIdle();
  }

  private finish(failed: boolean): void {
    this.running--;
    if (failed) this.errors++;
    else this.completed++;
    this.pump();
  }

  private settleIdle(): void {
    if (this.queue.length > 0 || this.running > 0 || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
