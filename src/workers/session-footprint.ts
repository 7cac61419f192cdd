/**
 * Measures how much memory creating an onnxruntime session costs, so the model
 * can be charged to its tenant as an accounting-only arena reservation.
 *
 * Method: the process's resident set size (RSS) is read just before and just
 * after `InferenceSession.create`, while holding a process-wide lock that every
 * worker of every pool shares, so no two sessions are created at the same time
 * and their growth is not mixed up. Other activity (requests on other models,
 * GC) still moves RSS a little, and freed-but-cached allocator pages make the
 * delta an underestimate at times; the charge is therefore never less than the
 * model file's size, which the session's weights occupy at the least.
 *
 * Thread-safety: the lock is a SharedArrayBuffer word driven with Atomics; it is
 * created once on the main thread and handed to every worker in workerData.
 */

// Atomics.waitAsync exists on every supported Node (>= 16) but only in TS's
// ES2024 lib, which would also admit APIs Node 20 lacks; declare just this one.
const { waitAsync } = Atomics as unknown as {
  waitAsync(array: Int32Array, index: number, value: number): { value: Promise<string> | string };
};

const UNLOCKED = 0;
const LOCKED = 1;

/** Creates the shared word backing the lock (main thread, once per process). */
export function createSessionCreationLock(): SharedArrayBuffer {
  return new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
}

async function acquire(word: Int32Array): Promise<void> {
  while (Atomics.compareExchange(word, 0, UNLOCKED, LOCKED) !== UNLOCKED) {
    // Wait without blocking this thread's event loop: onnxruntime resolves through it.
    await waitAsync(word, 0, LOCKED).value;
  }
}

function release(word: Int32Array): void {
  Atomics.store(word, 0, UNLOCKED);
  Atomics.notify(word, 0, 1);
}

export interface Measured<T> {
  readonly value: T;
  /** Bytes charged: max(RSS growth across `create`, `floorBytes`). */
  readonly bytes: number;
  readonly rssDeltaBytes: number;
}

/** Runs `create` under the process-wide lock and measures the RSS it adds. */
export async function measureSessionFootprint<T>(
  lock: SharedArrayBuffer,
  floorBytes: number,
  create: () => Promise<T>,
): Promise<Measured<T>> {
  const word = new Int32Array(lock);
  await acquire(word);
  try {
    const before = process.memoryUsage.rss();
    const value = await create();
    const rssDeltaBytes = process.memoryUsage.rss() - before;
    return { value, rssDeltaBytes, bytes: Math.max(rssDeltaBytes, floorBytes) };
  } finally {
    release(word);
  }
}
