/**
 * Whether the CUDA device is still usable by this process.
 *
 * A sticky CUDA error (an illegal address, a lost device) leaves the CUDA
 * context unusable for the rest of the process, and hotpath never calls
 * cudaDeviceReset (it would pull memory from under every other user of the
 * context). So the first sticky error marks the device lost for good: every
 * model on the native executor moves to onnxruntime on CPU (each
 * VersionExecutor listens here), and `/healthz` and readiness report
 * `degraded` so an orchestrator can replace the pod. Requests keep being
 * answered on CPU meanwhile.
 *
 * Main thread only. One per server.
 */
export type DeviceLostListener = (reason: string) => void;

export class DeviceHealth {
  private lostReason: string | undefined;
  private readonly listeners = new Set<DeviceLostListener>();

  /** Why the device was lost; undefined while it works. */
  get lost(): string | undefined {
    return this.lostReason;
  }

  /** Marks the device lost (first call wins) and tells every listener once. */
  markLost(reason: string): void {
    if (this.lostReason !== undefined) return;
    this.lostReason = reason;
    for (const listener of [...this.listeners]) listener(reason);
  }

  /** Calls `listener` when the device is lost; returns an unsubscribe. */
  onLost(listener: DeviceLostListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
