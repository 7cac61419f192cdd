/**
 * Keeps the current routes (a RouteTable, or any value built from the file's
 * text) and replaces it when a trigger fires: SIGHUP, or a change in the
 * file's directory. A reload reads the file and builds a new value; when that
 * succeeds the reference is swapped in one assignment, so a request sees the
 * old table or the new one, never a mix, and requests in flight finish on the
 * table that chose for them. When it fails (unreadable file, invalid YAML,
 * an incompatible model) the previous value stays and the result says why.
 *
 * A file whose text is unchanged is not rebuilt: a rolled-back arm stays
 * rolled back until the file changes, and the editors' and Kubernetes'
 * several events per save cost one read each.
 *
 * Reloads never overlap: a trigger during a reload runs one more reload after
 * it. Triggers are injected (signalTrigger, directoryWatchTrigger below), so
 * the reloader tests with a temp file and a hand-fired trigger.
 */
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** Subscribes `fire` to some event source; returns the unsubscribe. */
export type ReloadTrigger = (fire: (why: string) => void) => () => void;

export type ReloadResult =
  | { readonly status: 'swapped'; readonly why: string }
  | { readonly status: 'unchanged'; readonly why: string }
  /** The previous routes stay; `error` says why (a RoutesFileError names every problem). */
  | { readonly status: 'refused'; readonly why: string; readonly error: Error };

export interface RoutesReloaderOptions<T> {
  readonly file: string;
  /** Builds the routes from the file's text; throws to refuse it. */
  readonly build: (text: string, file: string) => T;
  readonly triggers?: readonly ReloadTrigger[];
  /** Every reload's result, for the log: it must not throw. */
  readonly onResult?: (result: ReloadResult, current: T) => void;
  /** Called after a swap with the new and the previous value (e.g. to log a diff). */
  readonly onSwap?: (next: T, previous: T) => void;
}

export class RoutesReloader<T> {
  private value: T;
  private text: string;
  private readonly unsubscribes: (() => void)[] = [];
  private running: Promise<ReloadResult> | undefined;
  private again: string | undefined;

  /**
   * Loads the file once, synchronously: throws when it is unreadable or the
   * build refuses it (at startup an invalid routes file is fatal).
   */
  constructor(private readonly options: RoutesReloaderOptions<T>) {
    this.text = readFileSync(options.file, 'utf8');
    this.value = options.build(this.text, options.file);
  }

  /** The routes now. */
  current(): T {
    return this.value;
  }

  /** Subscribes the triggers. */
  start(): void {
    for (const trigger of this.options.triggers ?? []) {
      this.unsubscribes.push(trigger((why) => void this.reload(why)));
    }
  }

  /** Unsubscribes the triggers; a reload in progress still finishes. */
  stop(): void {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
  }

  /**
   * Reloads now (triggers call this). Overlapping calls coalesce: one more
   * reload runs after the current one, and its result is what they get.
   */
  reload(why = 'requested'): Promise<ReloadResult> {
    if (this.running !== undefined) {
      this.again = why;
      return this.running.then(() => this.running ?? this.reload(why));
    }
    this.running = this.reloadOnce(why).finally(() => {
      this.running = undefined;
      const next = this.again;
      this.again = undefined;
      if (next !== undefined) void this.reload(next);
    });
    return this.running;
  }

  private async reloadOnce(why: string): Promise<ReloadResult> {
    let result: ReloadResult;
    try {
      const text = await readFile(this.options.file, 'utf8');
      if (text === this.text) {
        result = { status: 'unchanged', why };
      } else {
        const next = this.options.build(text, this.options.file);
        const previous = this.value;
        this.value = next;
        this.text = text;
        result = { status: 'swapped', why };
        this.options.onSwap?.(next, previous);
      }
    } catch (error) {
      result = { status: 'refused', why, error: error instanceof Error ? error : new Error(String(error)) };
    }
    this.options.onResult?.(result, this.value);
    return result;
  }
}

/** Fires on a process signal (SIGHUP by default). */
export function signalTrigger(signal: NodeJS.Signals = 'SIGHUP', proc: NodeJS.EventEmitter = process): ReloadTrigger {
  return (fire) => {
    const listener = (): void => fire(signal);
    proc.on(signal, listener);
    return () => void proc.off(signal, listener);
  };
}

/**
 * Fires `debounceMs` after the last change in the file's directory. The
 * directory is watched, not the file, because editors save by renaming a new
 * file over the old one and Kubernetes swaps a ConfigMap's `..data` symlink:
 * a watch on the file itself would follow the old inode and go quiet. Every
 * event counts (names are unreliable across platforms); the reloader's text
 * comparison makes an unrelated event cost one read. The watcher does not
 * keep the process alive. A watch that cannot start or fails later is passed
 * to `onWatchError` (SIGHUP still works).
 */
export function directoryWatchTrigger(
  file: string,
  debounceMs = 200,
  onWatchError: (error: Error) => void = () => {},
): ReloadTrigger {
  return (fire) => {
    let timer: NodeJS.Timeout | undefined;
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(path.dirname(path.resolve(file)), { persistent: false }, () => {
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(() => {
          timer = undefined;
          fire('file changed');
        }, debounceMs);
        timer.unref();
      });
      // A watcher error (the directory removed) must not crash the server; SIGHUP still works.
      watcher.on('error', (error) => {
        watcher?.close();
        onWatchError(error);
      });
    } catch (error) {
      watcher = undefined;
      onWatchError(error as Error);
    }
    return () => {
      if (timer !== undefined) clearTimeout(timer);
      watcher?.close();
    };
  };
}
