/**
 * A counting semaphore for async work: at most `permits` holders at once,
 * waiters served in arrival order. Main thread only.
 */
export class Semaphore {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  constructor(permits: number) {
    this.available = Math.max(1, permits);
  }

  /** Runs `work` once a permit is free, and releases it however `work` ends. */
  async with<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.available > 0) {
      this.available -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private release(): void {
    const next = this.waiters.shift();
    // Hand the permit straight to the next waiter, so a newcomer cannot overtake it.
    if (next !== undefined) next();
    else this.available += 1;
  }
}
