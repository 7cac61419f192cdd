/**
 * Poll mode (`--model-control-mode=poll`): rescans the repository every
 * `--repository-poll-secs` and brings the server in line with it, as Triton
 * does: a new model directory is loaded, a changed one reloaded (the versions
 * serving stay if the reload fails), a removed one unloaded.
 *
 * "Changed" means the model directory's fingerprint changed: every file and
 * directory under it with its size and modification time. The fingerprint is
 * taken before the load, so a model still being copied when it loads is
 * loaded again once the copy settles.
 *
 * Scans never overlap: the next one is scheduled when the previous one (and
 * the loads it started) finished, on an unref'ed timer so polling never keeps
 * the process alive. Main thread only.
 */
import { echoField } from '../common/echo.js';
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ModelRoots } from './model-roots.js';

export interface RepositoryPollerOptions {
  readonly roots: ModelRoots;
  readonly intervalMs: number;
  readonly logger: Logger;
  /** Loads or reloads a model (never refused by the control mode: the poller is the mode). */
  readonly load: (name: string) => Promise<void>;
  readonly unload: (name: string) => Promise<void>;
}

export class RepositoryPoller {
  /** Each model the poller has acted on, with its fingerprint at the time. */
  private readonly seen = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: RepositoryPollerOptions) {}

  /** Records the models about to load at start-up, so the first scan does not load them again. */
  async remember(names: readonly string[]): Promise<void> {
    for (const name of names) {
      const print = await this.fingerprint(name);
      if (print !== undefined) this.seen.set(name, print);
    }
  }

  /** Starts the scans; the first one runs one interval from now. */
  start(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.poll().finally(() => {
        this.running = undefined;
        this.start();
      });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops scanning; resolves once a scan in progress (and its loads) finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One scan: loads new and changed models, unloads removed ones. Never throws. */
  async poll(): Promise<void> {
    let onDisk: string[];
    try {
      onDisk = await this.options.roots.scan();
    } catch (err) {
      this.options.logger.warn({ error: errorMessage(err) }, 'repository poll: cannot read the repository; trying again next poll');
      return;
    }
    const present = new Set(onDisk);
    const work: Promise<void>[] = [];
    for (const name of [...this.seen.keys()]) {
      if (present.has(name)) continue;
      this.seen.delete(name);
      this.options.logger.info({ model: echoField(name) }, 'repository poll: model removed from the repository; unloading');
      work.push(this.options.unload(name).catch(() => undefined));
    }
    for (const name of onDisk) {
      const print = await this.fingerprint(name);
      if (print === undefined || this.seen.get(name) === print) continue;
      const reload = this.seen.has(name);
      this.seen.set(name, print);
      this.options.logger.info({ model: echoField(name) }, reload ? 'repository poll: model changed; reloading' : 'repository poll: new model; loading');
      // Failures are recorded on the model (and logged) by the load itself.
      work.push(this.options.load(name).catch(() => undefined));
    }
    await Promise.all(work);
  }

  /** Sizes and modification times of everything under the model directory; undefined if it vanished. */
  private async fingerprint(name: string): Promise<string | undefined> {
    const parts: string[] = [];
    const walk = async (dir: string, relative: string): Promise<void> => {
      const entries: Dirent[] = await readdir(dir, { withFileTypes: true });
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        const full = path.join(dir, entry.name);
        const rel = path.join(relative, entry.name);
        const info = await stat(full, { bigint: true });
        parts.push(`${rel}:${info.size}:${info.mtimeNs}`);
        if (info.isDirectory()) await walk(full, rel);
      }
    };
    try {
      // Every root's directory of that name: a second copy appearing is a change too (the model then fails, naming both).
      const dirs = this.options.roots.dirsOf(name);
      if (dirs.length === 0) return undefined;
      for (const dir of dirs) await walk(dir, dirs.length > 1 ? dir : '');
    } catch {
      return undefined;
    }
    return parts.join('\n');
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
