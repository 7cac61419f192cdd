// OUT/run.sh (bench/gpu/run.sh) and bench/gpu/pack.sh, the quick part: the
// scripts parse, pack.sh refuses a missing OUT, and run.sh unpacks a pack and
// puts its own Node first on PATH, from another working directory, without
// ever running a `node` that stands first on the caller's PATH (a fake that
// writes a marker and fails). The fake pack's "Node" is a wrapper around this
// process's node that records each call.
//
// The full pack (Node 24 from the registry, a production install, xz of
// ~200 MB) and a full OUT/run.sh (addon build, check.sh, the server) take
// minutes on two cores, so they stay out of `npm test`: bench/gpu/README.md,
// "The carry pack", says how to run them.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.join(import.meta.dirname, '..', '..');
const script = (name: string) => path.join(root, 'bench', 'gpu', name);
const hasXz = spawnSync('xz', ['--version']).status === 0;
const temp = mkdtempSync(path.join(os.tmpdir(), 'hotpath-run-script-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

function executable(file: string, text: string): void {
  writeFileSync(file, text);
  chmodSync(file, 0o755);
}

/** A pack whose node.tar.xz holds a wrapper around this node that logs every call. */
function fakePack(out: string, calls: string): void {
  const stage = path.join(temp, 'stage');
  mkdirSync(path.join(stage, 'node', 'bin'), { recursive: true });
  mkdirSync(path.join(stage, 'app'), { recursive: true });
  mkdirSync(path.join(stage, 'node_modules'), { recursive: true });
  executable(path.join(stage, 'node', 'bin', 'node'), `#!/bin/sh\necho "$*" >> '${calls}'\nexec '${process.execPath}' "$@"\n`);
  writeFileSync(path.join(stage, 'app', 'COMMIT'), 'test\n');
  writeFileSync(path.join(stage, 'node_modules', '.keep'), '');
  mkdirSync(out, { recursive: true });
  const tar = (archive: string, dir: string) => {
    const made = spawnSync('sh', ['-c', `tar -cf - -C '${stage}' ${dir} | xz -0 > '${path.join(out, archive)}'`]);
    expect(made.status, made.stderr.toString()).toBe(0);
  };
  tar('node.tar.xz', 'node');
  tar('app.tar.xz', 'app');
  tar('node_modules.tar.xz', 'node_modules');
  writeFileSync(path.join(out, 'PACK.json'), '{"pack":"test"}\n');
}

describe('bench/gpu scripts', () => {
  it('parse', () => {
    for (const name of ['pack.sh', 'run.sh', 'check.sh']) {
      const parsed = spawnSync('bash', ['-n', script(name)], { encoding: 'utf8' });
      expect(parsed.status, `${name}: ${parsed.stderr}`).toBe(0);
    }
  });

  it('pack.sh needs OUT', () => {
    const run = spawnSync('bash', [script('pack.sh')], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/usage: bash bench\/gpu\/pack\.sh OUT/);
  });

  it.skipIf(!hasXz)('run.sh runs its packed Node, never the node first on PATH, from any directory', () => {
    const out = path.join(temp, 'OUT');
    const calls = path.join(temp, 'packed-node-calls.txt');
    const marker = path.join(temp, 'fake-node-was-called');
    fakePack(out, calls);
    executable(path.join(out, 'run.sh'), readFileSync(script('run.sh'), 'utf8'));
    const fakeBin = path.join(temp, 'fake-bin');
    mkdirSync(fakeBin, { recursive: true });
    executable(path.join(fakeBin, 'node'), `#!/bin/sh\ntouch '${marker}'\nexit 1\n`);
    const elsewhere = path.join(temp, 'elsewhere');
    mkdirSync(elsewhere, { recursive: true });
    const run = spawnSync('bash', [path.join(out, 'run.sh')], {
      cwd: elsewhere,
      encoding: 'utf8',
      env: { ...process.env, PATH: `${fakeBin}:${process.env['PATH'] ?? ''}`, HOTPATH_RUN_STOP_AFTER: 'node', OUT: '' },
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain(`Node ${process.version} (${path.join(out, 'work', 'node', 'bin', 'node')})`);
    expect(run.stdout).toContain(`node on PATH: ${path.join(out, 'work', 'shims', 'node')}`);
    expect(readFileSync(calls, 'utf8')).toBe('--version\n');
    expect(existsSync(marker)).toBe(false);
  });
});
