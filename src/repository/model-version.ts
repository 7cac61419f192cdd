/**
 * One loaded version of a model: its completed config, request signature,
 * worker pool, statistics and in-flight accounting.
 *
 * Lifecycle: READY after a successful load → UNLOADING when an unload or a
 * replacing reload starts (no new requests admitted) → UNAVAILABLE once the
 * in-flight requests finished and the pool closed. Main thread only.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
import { signatureFromConfig, type ModelSignature } from '../server/model-signature.js';
import type { ModelPool } from '../workers/model-pool.js';
import type { InferResult, InferTask } from '../workers/worker-protocol.js';
import { InferenceStatistics } from './inference-statistics.js';

export type VersionState = 'READY' | 'UNLOADING' | 'UNAVAILABLE';

export class ModelVersion {
  readonly signature: ModelSignature;
  readonly statistics = new InferenceStatistics();
  private stateValue: VersionState = 'READY';
  private inFlight = 0;
  private drained: (() => void) | undefined;

  constructor(
    readonly modelName: string,
    readonly version: number,
    readonly config: ModelConfig,
    private readonly pool: ModelPool,
  ) {
    this.signature = signatureFromConfig(config);
  }

  get state(): VersionState {
    return this.stateValue;
  }

  get versionLabel(): string {
    return String(this.version);
  }

  /** Requests admitted and not yet answered. */
  get pendingRequests(): number {
    return this.inFlight;
  }

  /** Runs one request's task on this version's pool. Callers check `state` first. */
  async run(task: InferTask, transfer: ArrayBuffer[]): Promise<InferResult> {
    this.inFlight += 1;
    try {
      return await this.pool.infer(task, transfer);
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) this.drained?.();
    }
  }

  /** Stops admitting requests, waits for the admitted ones, then frees the workers. */
  async unload(): Promise<void> {
    if (this.stateValue !== 'READY') return;
    this.stateValue = 'UNLOADING';
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    await this.pool.close();
    this.stateValue = 'UNAVAILABLE';
  }
}
