/**
 * `preserve_ordering`: answers leave in the order their requests were
 * accepted. Each accepted request has a dense arrival number (0, 1, 2, … —
 * the batcher's sequence); a request whose answer is ready waits here until
 * every earlier one has been released, then goes. Answers of requests that
 * were dropped (timeout, deadline, shutdown) take their place in the order too.
 *
 * Main thread only.
 */
export class ResponseOrder {
  private next = 0;
  private readonly ready = new Map<number, () => void>();

  /** Resolves when every request accepted before `sequence` has been released. */
  turn(sequence: number): Promise<void> {
    const turn = new Promise<void>((resolve) => this.ready.set(sequence, resolve));
    // Deferred, so the caller's own continuation is attached before anyone is
    // released: continuations then run in sequence order too.
    queueMicrotask(() => this.advance());
    return turn;
  }

  /** How many answers are held, waiting for an earlier one. */
  get waiting(): number {
    return this.ready.size;
  }

  private advance(): void {
    for (let release = this.ready.get(this.next); release !== undefined; release = this.ready.get(this.next)) {
      this.ready.delete(this.next);
      this.next += 1;
      release();
    }
  }
}
