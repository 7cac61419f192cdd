import { EventEmitter } from 'node:events';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { requestView } from '../../src/routing/arm-choice.js';
import { buildRouteTable, type RouteTable } from '../../src/routing/route-table.js';
import { RoutesFileError } from '../../src/routing/routes-file.js';
import {
  directoryWatchTrigger,
  RoutesReloader,
  signalTrigger,
  type ReloadResult,
  type ReloadTrigger,
} from '../../src/routing/routes-reloader.js';

const V1 = 'routes:\n  scorer: { arms: { stable: { model: ctr_mlp, version: 1, weight: 1 } } }\n';
const V2 = 'routes:\n  scorer: { arms: { stable: { model: ctr_mlp, version: 2, weight: 1 } } }\n';
const INVALID = 'routes:\n  scorer: { arms: { stable: { model: ctr_mlp, version: 3, weight: -1 } } }\n';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'hotpath-reload-'));
  file = path.join(dir, 'routes.yaml');
  writeFileSync(file, V1);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A trigger the test fires by hand. */
function manualTrigger(): { trigger: ReloadTrigger; fire: (why: string) => void; subscribed: () => number } {
  const listeners = new Set<(why: string) => void>();
  return {
    trigger: (fire) => {
      listeners.add(fire);
      return () => listeners.delete(fire);
    },
    fire: (why) => listeners.forEach((l) => l(why)),
    subscribed: () => listeners.size,
  };
}

function reloader(extra: { triggers?: ReloadTrigger[] } = {}) {
  const results: ReloadResult[] = [];
  const swaps: [RouteTable, RouteTable][] = [];
  const r = new RoutesReloader<RouteTable>({
    file,
    build: (text, source) => buildRouteTable(text, source, undefined),
    onResult: (result) => results.push(result),
    onSwap: (next, previous) => swaps.push([next, previous]),
    ...extra,
  });
  const version = (): number | undefined => {
    const d = r.current().get('scorer')!.choose(requestView({}));
    return d.kind === 'primary' ? d.version : undefined;
  };
  return { r, results, swaps, version };
}

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('RoutesReloader', () => {
  it('loads the file at construction, and throws on an invalid one', () => {
    expect(reloader().version()).toBe(1);
    writeFileSync(file, INVALID);
    expect(() => reloader()).toThrow(RoutesFileError);
  });

  it('swaps in a valid change', async () => {
    const { r, results, swaps, version } = reloader();
    const before = r.current();
    writeFileSync(file, V2);
    expect(await r.reload('SIGHUP')).toEqual({ status: 'swapped', why: 'SIGHUP' });
    expect(version()).toBe(2);
    expect(results).toEqual([{ status: 'swapped', why: 'SIGHUP' }]);
    expect(swaps).toEqual([[r.current(), before]]);
  });

  it('keeps the previous routes on an invalid file and says why', async () => {
    const { r, version } = reloader();
    const before = r.current();
    writeFileSync(file, INVALID);
    const result = await r.reload('file changed');
    expect(result.status).toBe('refused');
    expect(result.status === 'refused' && result.error.message).toMatch(
      /^routes file .*routes\.yaml: route 'scorer': arms\.stable\.weight: expected a number >= 0, got -1$/,
    );
    expect(r.current()).toBe(before);
    expect(version()).toBe(1);
    // A later valid file still loads.
    writeFileSync(file, V2);
    expect((await r.reload()).status).toBe('swapped');
    expect(version()).toBe(2);
  });

  it('keeps the previous routes when the file is gone', async () => {
    const { r } = reloader();
    const before = r.current();
    rmSync(file);
    const result = await r.reload();
    expect(result.status === 'refused' && result.error.message).toMatch(/ENOENT/);
    expect(r.current()).toBe(before);
  });

  it('does not rebuild an unchanged file, so rollback state survives SIGHUP', async () => {
    const { r } = reloader();
    const before = r.current();
    expect(await r.reload()).toEqual({ status: 'unchanged', why: 'requested' });
    expect(r.current()).toBe(before);
  });

  it('runs overlapping reloads one after another, ending on the latest file', async () => {
    let builds = 0;
    const r = new RoutesReloader<string>({
      file,
      build: (text) => {
        builds++;
        return text;
      },
    });
    writeFileSync(file, V2);
    const first = r.reload('a');
    const second = r.reload('b');
    const third = r.reload('c');
    writeFileSync(file, V1 + '# edited\n');
    await Promise.all([first, second, third]);
    await until(() => r.current() === V1 + '# edited\n');
    expect(builds).toBeLessThanOrEqual(3); // initial + at most two reloads: b and c coalesced
  });

  it('reloads when a trigger fires, and unsubscribes on stop', async () => {
    const manual = manualTrigger();
    const { r, version, results } = reloader({ triggers: [manual.trigger] });
    r.start();
    expect(manual.subscribed()).toBe(1);
    writeFileSync(file, V2);
    manual.fire('SIGHUP');
    await until(() => results.length === 1);
    expect(version()).toBe(2);
    r.stop();
    expect(manual.subscribed()).toBe(0);
  });

  it('signalTrigger fires on the signal and detaches', () => {
    const proc = new EventEmitter();
    const fired: string[] = [];
    const unsubscribe = signalTrigger('SIGHUP', proc)((why) => fired.push(why));
    proc.emit('SIGHUP');
    unsubscribe();
    proc.emit('SIGHUP');
    expect(fired).toEqual(['SIGHUP']);
    expect(proc.listenerCount('SIGHUP')).toBe(0);
  });

  it('directoryWatchTrigger sees an atomic rename over the file', async () => {
    const { r, version, results } = reloader({ triggers: [directoryWatchTrigger(file, 50)] });
    r.start();
    try {
      const staged = path.join(dir, '.routes.yaml.tmp');
      writeFileSync(staged, V2);
      renameSync(staged, file);
      await until(() => results.some((x) => x.status === 'swapped'));
      expect(version()).toBe(2);
      writeFileSync(file, INVALID);
      await until(() => results.some((x) => x.status === 'refused'));
      expect(version()).toBe(2);
    } finally {
      r.stop();
    }
  });

  it('directoryWatchTrigger reports a directory it cannot watch', () => {
    const errors: Error[] = [];
    const unsubscribe = directoryWatchTrigger(path.join(dir, 'missing', 'routes.yaml'), 50, (e) => errors.push(e))(() => {});
    unsubscribe();
    expect(errors[0]?.message).toMatch(/ENOENT/);
  });
});
