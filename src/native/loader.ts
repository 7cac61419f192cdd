// Finds and loads hotpath_native.node, the C++ addon built by
// native/build-addon.mjs.
//
// Search order:
//   1. an explicit path: `loadAddon({path})`, else env HOTPATH_NATIVE_ADDON.
//      Explicit means exclusive: if it fails nothing else is tried, so a
//      deployment that pins a build never silently runs another one.
//   2. <package root>/build-cmake/Release/hotpath_native.node  (cmake-js, CUDA-aware)
//   3. <package root>/build/Release/hotpath_native.node        (node-gyp, CPU-only)
// A file is accepted only if it loads, has every export the wrappers need, and
// was built from this package version (a stale build is rejected with advice).
// When nothing loads, one AddonLoadError lists every attempt and its reason.
//
// The package root is found by walking up from this module to the
// package.json named "hotpath", so it works from src/native/*.ts (vitest) and
// from dist/src/native/*.js (compiled).
//
// Each worker thread has its own module instance and therefore its own cached
// addon; the addon keeps per-environment state (native/napi/addon_data.h).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { requiredExports, type NativeBinding } from './binding-types.js';

const addonFile = 'hotpath_native.node';
const packageName = 'hotpath';
export const addonPathEnv = 'HOTPATH_NATIVE_ADDON';

export type AddonSource = 'option' | 'env' | 'cmake' | 'gyp';

export interface LoadedAddon {
  readonly binding: NativeBinding;
  /** Absolute path of the loaded .node file. */
  readonly path: string;
  readonly source: AddonSource;
}

export interface LoadAttempt {
  readonly path: string;
  readonly source: AddonSource;
  /** Why this candidate was rejected. */
  readonly reason: string;
}

export interface LoadOptions {
  /** Load exactly this file (relative paths resolve against the cwd). */
  readonly path?: string;
  /** Package root to search instead of this package's (tests). */
  readonly packageRoot?: string;
  /** Environment to read HOTPATH_NATIVE_ADDON from; defaults to process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export class AddonLoadError extends Error {
  override readonly name = 'AddonLoadError';

  constructor(readonly attempts: readonly LoadAttempt[]) {
    super(describeFailure(attempts));
  }
}

const sourceLabels: Record<AddonSource, string> = {
  option: 'explicit path',
  env: `${addonPathEnv}`,
  cmake: 'cmake-js build',
  gyp: 'node-gyp build',
};

function describeFailure(attempts: readonly LoadAttempt[]): string {
  const lines = attempts.map((a) => `  - ${a.path} (${sourceLabels[a.source]}): ${a.reason}`);
  const explicit = attempts.some((a) => a.source === 'option' || a.source === 'env');
  const advice = explicit
    ? `Point ${addonPathEnv} (or the path option) at a built ${addonFile}, or unset it to search the build directories.`
    : `Run \`npm run build:native\` to build it (HOTPATH_BUILD_VERBOSE=1 shows compiler output), ` +
      `or set ${addonPathEnv} to the path of a built ${addonFile}.`;
  return `cannot load the hotpath native addon. Tried:\n${lines.join('\n')}\n${advice}`;
}

interface PackageInfo {
  readonly root: string;
  readonly version: string;
}

let cachedPackage: PackageInfo | undefined;

/** The hotpath package root and version, found by walking up from this file. */
export function packageInfo(): PackageInfo {
  if (cachedPackage) return cachedPackage;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (existsSync(candidate)) {
      const parsed = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: unknown; version?: unknown };
      if (parsed.name === packageName && typeof parsed.version === 'string') {
        cachedPackage = { root: dir, version: parsed.version };
        return cachedPackage;
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) {
      throw new Error(`cannot find the ${packageName} package.json above ${fileURLToPath(import.meta.url)}`);
    }
    dir = parent;
  }
}

/** The candidates loadAddon would try for these options, in order. */
export function candidatePaths(options: LoadOptions = {}): { path: string; source: AddonSource }[] {
  if (options.path !== undefined) return [{ path: path.resolve(options.path), source: 'option' }];
  const fromEnv = (options.env ?? process.env)[addonPathEnv];
  if (fromEnv) return [{ path: path.resolve(fromEnv), source: 'env' }];
  const root = options.packageRoot ?? packageInfo().root;
  return [
    { path: path.join(root, 'build-cmake', 'Release', addonFile), source: 'cmake' },
    { path: path.join(root, 'build', 'Release', addonFile), source: 'gyp' },
  ];
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}

function tryLoad(file: string, expectedVersion: string): NativeBinding | string {
  if (!existsSync(file)) return 'not found';
  let exports: unknown;
  try {
    // createRequire: .node files cannot be imported as ESM.
    exports = createRequire(import.meta.url)(file);
  } catch (error) {
    return `load failed: ${firstLine(error)}`;
  }
  const record = exports as Record<string, unknown>;
  const missing = requiredExports.filter((name) => typeof record[name] !== 'function');
  if (missing.length > 0) return `not a hotpath_native addon (missing exports: ${missing.join(', ')})`;
  const binding = exports as NativeBinding;
  const version = binding.version();
  if (version !== expectedVersion) {
    return `stale build: addon is version ${version}, package is ${expectedVersion}`;
  }
  return binding;
}

/** Loads the addon (uncached; Node itself caches each file once per thread). */
export function loadAddon(options: LoadOptions = {}): LoadedAddon {
  const expectedVersion = packageInfo().version;
  const attempts: LoadAttempt[] = [];
  for (const candidate of candidatePaths(options)) {
    const loaded = tryLoad(candidate.path, expectedVersion);
    if (typeof loaded !== 'string') return { binding: loaded, ...candidate };
    attempts.push({ ...candidate, reason: loaded });
  }
  throw new AddonLoadError(attempts);
}

let defaultAddon: LoadedAddon | undefined;

/** The addon found by the default search, loaded on first use. */
export function nativeAddon(): LoadedAddon {
  defaultAddon ??= loadAddon();
  return defaultAddon;
}

/** Path of the default addon if it has been loaded, for start-up logs. */
export function loadedAddonPath(): string | undefined {
  return defaultAddon?.path;
}
