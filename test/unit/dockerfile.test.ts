/**
 * The Dockerfile's invariants, checked without Docker (the CI machines have
 * no daemon): the build installs from the lock with `npm ci` and never lets
 * onnxruntime-node download; the sample model is generated in the build, not
 * taken from the build context; the runtime image keeps only this platform's
 * onnxruntime binaries (the build stage's own shell lines run here against a
 * stand-in tree); the HEALTHCHECK names no port.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const DOCKERIGNORE = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');

/** Instructions with their continuation lines joined, comments dropped. */
const instructions = DOCKERFILE.split('\n')
  .filter((line) => !/^\s*#/.test(line))
  .join('\n')
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.replace(/\s+/g, ' ').trim())
  .filter((line) => line.length > 0);

/** The stage each instruction belongs to, by the name after FROM ... AS. */
function stage(name: string): string[] {
  const start = instructions.findIndex((line) => new RegExp(`^FROM \\S+ AS ${name}$`).test(line));
  expect(start, `stage ${name}`).toBeGreaterThanOrEqual(0);
  const end = instructions.findIndex((line, i) => i > start && line.startsWith('FROM '));
  return instructions.slice(start + 1, end < 0 ? undefined : end);
}

const build = stage('build');
const runtime = stage('runtime');
const install = build.filter((line) => line.startsWith('RUN ') && /\bnpm\b/.test(line));

const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('Dockerfile', () => {
  it('installs from the lock with npm ci, with onnxruntime-node told to skip its download', () => {
    expect(install).toHaveLength(1);
    expect(install[0]).toMatch(/^RUN ONNXRUNTIME_NODE_INSTALL=skip npm ci /);
    expect(DOCKERFILE).not.toMatch(/npm install\b/);
  });

  it('generates the sample model in the build, never copies it from the context', () => {
    expect(DOCKERIGNORE).toContain('models/ranker_mlp/1/model.onnx');
    expect(install[0]).toContain('&& test -s models/ranker_mlp/1/model.onnx &&');
    expect(runtime).toContain('COPY --from=build /build/models ./models');
  });

  it('keeps only this platform\'s onnxruntime binaries: the build stage\'s own lines, run on a stand-in tree', async () => {
    const strip = install[0]!.slice(install[0]!.indexOf('keep='));
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-dockerfile-'));
    scratch.push(dir);
    const platforms = ['darwin/arm64', 'darwin/x64', 'linux/arm64', 'linux/x64', 'win32/arm64', 'win32/x64'];
    for (const platform of platforms) {
      const bin = path.join(dir, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', platform);
      await mkdir(bin, { recursive: true });
      await writeFile(path.join(bin, 'onnxruntime_binding.node'), '');
    }
    await run('sh', ['-ec', strip], { cwd: dir });
    const kept = platforms.filter((platform) => existsSync(path.join(dir, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', platform)));
    expect(kept).toEqual([`linux/${process.arch}`]);
    expect(existsSync(path.join(dir, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'darwin')), 'empty folders go too').toBe(false);
  });

  it('checks readiness on whatever HTTP port the server was given, with the script it copies', () => {
    const healthcheck = runtime.filter((line) => line.startsWith('HEALTHCHECK '));
    expect(healthcheck).toHaveLength(1);
    expect(healthcheck[0]).toMatch(/CMD \["node", "\/opt\/hotpath\/deploy\/docker\/healthcheck\.mjs"\]$/);
    expect(healthcheck[0]).not.toMatch(/\b80\d\d\b/);
    expect(runtime).toContain('COPY --from=build /build/deploy/docker/healthcheck.mjs ./deploy/docker/healthcheck.mjs');
    expect(existsSync(path.join(ROOT, 'deploy', 'docker', 'healthcheck.mjs'))).toBe(true);
  });

  it('builds on Node 24 by default', () => {
    expect(instructions).toContain('ARG NODE_VERSION=24');
  });
});
