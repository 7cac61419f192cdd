/**
 * The time limit of one model load: reading the config, starting the workers,
 * warm-up and golden checks of every selected version must finish within
 * `--model-load-timeout` seconds, or the model's own config parameter
 * `model_load_timeout_secs` (0 = no limit).
 *
 * When the limit passes, the load fails at once with a reason that says which
 * stage it was in, its load slot is freed, and what the attempt holds is given
 * up through the hooks registered with `onAbandon`: the versions' arena
 * charges are released and their workers are told to stop, without waiting
 * for them. A worker stuck inside onnxruntime's native code cannot be stopped
 * at all (its terminate() never settles), so nothing may wait for it; the
 * process ends around it at shutdown (cli.ts, src/native/process-exit.ts).
 *
 * The load's own promise chain keeps running in the background; it checks
 * `abandoned` after each await and stops, so a warm-up that finishes late
 * never turns an abandoned version READY.
 *
 * Main thread only.
 */
import { ServingError } from '../common/serving-error.js';

/** The config parameter that overrides `--model-load-timeout` for one model. */
export const LOAD_TIMEOUT_PARAMETER = 'model_load_timeout_secs';

/** A load that passed its limit; the answer is DEADLINE_EXCEEDED. */
export class LoadTimeoutError extends ServingError {
  constructor(message: string) {
    super('deadline', message);
  }
}

export class LoadDeadline {
  private readonly started = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private limitMs: number;
  private source: string;
  private abandonedValue = false;
  /** Set when the limit passes. */
  private reason = '';
  private readonly hooks: ((reason: string) => void)[] = [];
  private expire: ((err: LoadTimeoutError) => void) | undefined;
  /** Rejects once the limit passes; never settles otherwise. */
  private readonly expired: Promise<never>;

  /**
   * @param limitMs the server's limit (`--model-load-timeout`), 0 = none, until the config says otherwise
   * @param stage   what the load is doing now, for the reason ('warming up version 1')
   */
  constructor(limitMs: number, private readonly stage: () => string) {
    this.limitMs = limitMs;
    this.source = '--model-load-timeout';
    this.expired = new Promise<never>((_, reject) => (this.expire = reject));
    // Nobody may be listening yet when it fires (the race attaches first, but be safe).
    this.expired.catch(() => undefined);
    this.arm();
  }

  /** The model's own limit (config parameter), counted from the start of the load. */
  setModelLimit(limitMs: number): void {
    this.limitMs = limitMs;
    this.source = `config parameter ${LOAD_TIMEOUT_PARAMETER}`;
    this.arm();
  }

  /** Whether the limit passed: the load's background chain stops at its next step. */
  get abandoned(): boolean {
    return this.abandonedValue;
  }

  /** Registers what to give up when the limit passes, with the reason (runs at once if it already has). */
  onAbandon(hook: (reason: string) => void): void {
    if (this.abandonedValue) hook(this.reason);
    else this.hooks.push(hook);
  }

  /** Throws the timeout when the limit has passed: the background chain's checkpoint after each await. */
  throwIfAbandoned(): void {
    if (this.abandonedValue) throw new LoadTimeoutError(this.reason);
  }

  /** `work`, or a LoadTimeoutError as soon as the limit passes, whichever comes first. */
  race<T>(work: Promise<T>): Promise<T> {
    // The background chain's later failure (it is abandoned) must not go unhandled.
    work.catch(() => undefined);
    return Promise.race([work, this.expired]);
  }

  /** The load finished (either way): the timer stops. */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    this.clear();
    if (this.limitMs <= 0 || this.abandonedValue) return;
    const left = Math.max(0, this.started + this.limitMs - performance.now());
    this.timer = setTimeout(() => this.fire(), left);
    // A load in progress keeps the process alive anyway; the timer must not on its own.
    this.timer.unref();
  }

  private fire(): void {
    if (this.abandonedValue) return;
    const stage = this.stage();
    const seconds = Number((this.limitMs / 1000).toFixed(3));
    this.reason = `load timed out after ${seconds} s (${this.source})${stage === '' ? '' : ` while ${stage}`}`;
    this.abandonedValue = true;
    for (const hook of this.hooks.splice(0)) {
      try {
        hook(this.reason);
      } catch {
        // One resource failing to let go must not keep the others.
      }
    }
    this.expire?.(new LoadTimeoutError(this.reason));
  }
}
