// The addon loader (src/native/loader.ts) and the typed wrappers, against each
// addon build that exists (cmake-js and node-gyp): explicit loading, default
// search order, the env override, actionable failures, and the values that
// deviceInfo()/version()/buildInfo() report.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { addonEnvInfo, addonVersion, buildInfo } from '../../src/native/build-info.js';
import { deviceInfo } from '../../src/native/device.js';
import {
  AddonLoadError,
  addonPathEnv,
  candidatePaths,
  loadAddon,
  loadedAddonPath,
  nativeAddon,
  packageInfo,
} from '../../src/native/loader.js';
import { addonBuilds, noGpu, repoRoot } from './addon-builds.js';

const packageVersion = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string })
  .version;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'hotpath-loader-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

it('finds at least one addon build (run `npm run build:native` if this fails)', () => {
  expect(addonBuilds.filter((b) => b.present).map((b) => b.kind)).not.toEqual([]);
});

describe.each(addonBuilds)('$kind build', (build) => {
  it.skipIf(!build.present)('loads from an explicit path', () => {
    const addon = loadAddon({ path: build.path });
    expect(addon.path).toBe(build.path);
    expect(addon.source).toBe('option');
  });

  it.skipIf(!build.present)('reports the package version and its build system', () => {
    const addon = loadAddon({ path: build.path });
    expect(addonVersion(addon)).toBe(packageVersion);
    const info = buildInfo(addon);
    expect(info).toEqual({
      version: packageVersion,
      cudaCompiledIn: info.cudaCompiledIn,
      build: build.kind,
      napiVersion: 8,
    });
    expect(typeof info.cudaCompiledIn).toBe('boolean');
    // binding.gyp never builds the CUDA backend.
    if (build.kind === 'gyp') expect(info.cudaCompiledIn).toBe(false);
  });

  it.skipIf(!build.present)('reports a consistent device', () => {
    const addon = loadAddon({ path: build.path });
    const device = deviceInfo(0, addon);
    expect(Object.keys(device).sort()).toEqual(['backend', 'freeBytes', 'name', 'ordinal', 'totalBytes', 'uuid']);
    // A CUDA device has an NVML-style UUID; the host backend has none.
    if (device.backend === 'cuda') expect(device.uuid).toMatch(/^GPU-[0-9a-f]{8}-/);
    else expect(device).toMatchObject({ ordinal: -1, uuid: '' });
    expect(Number.isSafeInteger(device.totalBytes)).toBe(true);
    expect(Number.isSafeInteger(device.freeBytes)).toBe(true);
    expect(device.totalBytes).toBeGreaterThan(0);
    expect(device.freeBytes).toBeGreaterThan(0);
    expect(device.freeBytes).toBeLessThanOrEqual(device.totalBytes);
    if (noGpu) expect(device.backend).toBe('host');
    if (device.backend === 'host') {
      // Both read MemTotal from /proc/meminfo.
      expect(device.totalBytes).toBe(os.totalmem());
      if (buildInfo(addon).cudaCompiledIn) {
        expect(device.name).toMatch(/^host memory \(no CUDA device: cudaGetDeviceCount: cuda\w+ \(.+\)\)$/);
      } else {
        expect(device.name).toBe('host memory (built without CUDA)');
      }
    }
  });

  it.skipIf(!build.present)('counts this environment', () => {
    const env = addonEnvInfo(loadAddon({ path: build.path }));
    expect(env.id).toBeGreaterThanOrEqual(1);
    expect(env.live).toBeGreaterThanOrEqual(1);
    expect(env.created).toBeGreaterThanOrEqual(env.id);
  });
});

describe('default search', () => {
  it('tries the cmake-js build before the node-gyp build, under the package root', () => {
    expect(packageInfo()).toEqual({ root: repoRoot, version: packageVersion });
    expect(candidatePaths({ env: {} })).toEqual([
      { path: path.join(repoRoot, 'build-cmake', 'Release', 'hotpath_native.node'), source: 'cmake' },
      { path: path.join(repoRoot, 'build', 'Release', 'hotpath_native.node'), source: 'gyp' },
    ]);
  });

  it('loads the first present build and remembers its path', () => {
    const first = addonBuilds.find((b) => b.present);
    if (!first) throw new Error('no addon build present');
    expect(loadedAddonPath()).toBeUndefined();
    const addon = nativeAddon();
    expect(addon.path).toBe(first.path);
    expect(addon.source).toBe(first.kind);
    expect(loadedAddonPath()).toBe(first.path);
    expect(nativeAddon()).toBe(addon);
    expect(deviceInfo().totalBytes).toBeGreaterThan(0);
  });

  it(`honours ${addonPathEnv}, exclusively`, () => {
    const last = [...addonBuilds].reverse().find((b) => b.present);
    if (!last) throw new Error('no addon build present');
    expect(loadAddon({ env: { [addonPathEnv]: last.path } }).source).toBe('env');
    const missing = path.join(scratch, 'missing.node');
    expect(() => loadAddon({ env: { [addonPathEnv]: missing } })).toThrowError(
      new RegExp(`${missing}.*${addonPathEnv}\\): not found\\nPoint ${addonPathEnv}`),
    );
  });
});

describe('load failures', () => {
  it('names the bogus path, the reason and the fix', () => {
    const bogus = path.join(scratch, 'nope', 'hotpath_native.node');
    let caught: unknown;
    try {
      loadAddon({ path: bogus });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AddonLoadError);
    const error = caught as AddonLoadError;
    expect(error.attempts).toEqual([{ path: bogus, source: 'option', reason: 'not found' }]);
    expect(error.message).toBe(
      `cannot load the hotpath native addon. Tried:\n  - ${bogus} (explicit path): not found\n` +
        `Point ${addonPathEnv} (or the path option) at a built hotpath_native.node, ` +
        'or unset it to search the build directories.',
    );
  });

  it('reports the dlopen error for a file that is not a shared object', () => {
    const fake = path.join(scratch, 'fake.node');
    writeFileSync(fake, 'not an ELF file');
    expect(() => loadAddon({ path: fake })).toThrowError(/fake\.node \(explicit path\): load failed: .*(invalid ELF header|file too short)/);
  });

  it('rejects a module that is not the hotpath addon', () => {
    const other = path.join(scratch, 'other.js');
    writeFileSync(other, 'module.exports = { version: () => "0.0.0" };');
    expect(() => loadAddon({ path: other })).toThrowError(
      /not a hotpath_native addon \(missing exports: buildInfo, envInfo, deviceInfo, gpuUtilization\)/,
    );
  });

  it('rejects a build from another package version', () => {
    const stale = path.join(scratch, 'stale.js');
    writeFileSync(
      stale,
      'module.exports = { version: () => "0.0.1", buildInfo() {}, envInfo() {}, deviceInfo() {}, gpuUtilization() {} };',
    );
    expect(() => loadAddon({ path: stale })).toThrowError(
      `stale build: addon is version 0.0.1, package is ${packageVersion}`,
    );
  });

  it('lists every default candidate and says to run build:native', () => {
    const empty = mkdtempSync(path.join(scratch, 'root-'));
    expect(() => loadAddon({ packageRoot: empty, env: {} })).toThrowError(
      new RegExp(
        `build-cmake/Release/hotpath_native.node \\(cmake-js build\\): not found\\n` +
          `  - ${empty}/build/Release/hotpath_native.node \\(node-gyp build\\): not found\\n` +
          'Run `npm run build:native`',
      ),
    );
  });
});
