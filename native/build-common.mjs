// Shared helpers for native/build-addon.mjs and native/run-native-tests.mjs:
// locating cmake, cmake-js and node-gyp offline, running them with quiet
// output (shown in full only on failure, or always with HOTPATH_BUILD_VERBOSE=1),
// and checking that a built addon loads.
//
// Plain ESM for Node 20, no dependencies beyond the package's own. Everything
// here is synchronous: these scripts run one build step at a time.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const requireFromRoot = createRequire(path.join(root, 'package.json'));

/** Where each build system leaves the addon, relative to the package root. */
export const addonPaths = {
  cmake: 'build-cmake/Release/hotpath_native.node',
  gyp: 'build/Release/hotpath_native.node',
};

export const verbose = process.env.HOTPATH_BUILD_VERBOSE === '1';
export const jobs = String(Math.max(1, Number(process.env.HOTPATH_BUILD_JOBS) || 2));

/**
 * Runs a command in the package root. Output is captured and returned; with
 * HOTPATH_BUILD_VERBOSE=1 it streams instead.
 * @returns {{ok: boolean, output: string, why: string}}
 */
export function run(command, args, { env = {}, cwd = root } = {}) {
  const result = spawnSync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    stdio: verbose ? 'inherit' : 'pipe',
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.error) return { ok: false, output, why: `${command}: ${result.error.message}` };
  if (result.status !== 0) {
    const how = result.signal ? `signal ${result.signal}` : `exit code ${result.status}`;
    // "node .../cmake-js build ..." reads best as "cmake-js build".
    const shown = command === process.execPath ? `${path.basename(args[0] ?? '')} ${args[1] ?? ''}` : path.basename(command);
    return { ok: false, output, why: `${shown} failed (${how})` };
  }
  return { ok: true, output, why: '' };
}

/** The last `lines` lines of a command's output, for failure reports. */
export function tail(output, lines = 40) {
  const all = output.trimEnd().split('\n');
  return all.slice(-lines).join('\n');
}

/** `cmake` if it runs, else null. */
export function findCmake() {
  const probe = spawnSync('cmake', ['--version'], { encoding: 'utf8' });
  return probe.status === 0 ? 'cmake' : null;
}

/** Local Node headers (<prefix>/include/node) for node-gyp, so it never downloads them. */
export function nodeDir() {
  if (process.env.npm_config_nodedir) return process.env.npm_config_nodedir;
  const prefix = path.resolve(path.dirname(process.execPath), '..');
  return existsSync(path.join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined;
}

/**
 * Finds node-gyp: npm's own setting inside npm scripts, then the copy bundled
 * with the npm next to this node, then the global npm root.
 * @returns {{script: string | null, tried: string[]}}
 */
export function findNodeGyp() {
  const tried = [];
  const candidates = [
    process.env.npm_config_node_gyp,
    process.env.npm_execpath &&
      path.join(path.dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    tried.push(candidate);
    if (existsSync(candidate)) return { script: candidate, tried };
  }
  const npmRoot = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' });
  if (npmRoot.status === 0) {
    const candidate = path.join(npmRoot.stdout.trim(), 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    tried.push(candidate);
    if (existsSync(candidate)) return { script: candidate, tried };
  }
  return { script: null, tried };
}

/**
 * Configures and builds the addon with cmake-js into build-cmake/Release.
 * Configure always runs (it is quick on a warm cache) so a change of `cuda`
 * between runs takes effect.
 * @param {{cuda: 'AUTO' | 'OFF', defines?: string[]}} options  defines: extra
 *   cache settings ("NAME=VALUE"); they persist in build-cmake's cache.
 */
export function buildCmakeAddon({ cuda, defines = [] }) {
  const commands = cmakeJsCommands({ cuda, defines });
  if (!commands.ok) return { ok: false, output: '', why: commands.why };
  const configure = run(process.execPath, commands.configure);
  if (!configure.ok) return configure;
  const build = run(process.execPath, commands.build);
  return build.ok ? { ...build, output: configure.output + build.output } : build;
}

/**
 * The cmake-js configure and build argument lists (to run with process.execPath)
 * for build-cmake/Release, or why they cannot run.
 * @param {{cuda: 'AUTO' | 'OFF', defines?: string[]}} options
 * @returns {{ok: true, configure: string[], build: string[]} | {ok: false, why: string}}
 */
export function cmakeJsCommands({ cuda, defines = [] }) {
  if (!findCmake()) return { ok: false, why: 'cmake not found on PATH' };
  let cmakeJs;
  try {
    cmakeJs = path.join(path.dirname(requireFromRoot.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
  } catch (error) {
    return { ok: false, why: `cmake-js not installed: ${error.message}` };
  }
  const common = ['--out', 'build-cmake', '--config', 'Release', `--CDHOTPATH_CUDA=${cuda}`, ...defines.map((d) => `--CD${d}`)];
  return { ok: true, configure: [cmakeJs, 'configure', ...common], build: [cmakeJs, 'build', ...common, '--parallel', jobs] };
}

/**
 * Whether this is a source checkout (native/tests present; the packed package
 * leaves it out). There the cmake-js tree is also npm test's default CTest
 * tree, so the core library is compiled once for both.
 */
export const sourceCheckout = existsSync(path.join(root, 'native', 'tests'));

/**
 * The cache settings of the cmake-js tree in a source checkout: warnings are
 * errors (npm test's flags) and the CTest executables are built beside the
 * addon. Every build of that tree passes them, so none reconfigures it
 * away from another's settings.
 */
export const checkoutCmakeDefines = ['HOTPATH_WERROR=ON', 'HOTPATH_BUILD_TESTS=ON'];

/**
 * Builds the CPU-only addon with node-gyp into build/Release.
 * @param {{clean: boolean}} options  clean: `rebuild` instead of an incremental build
 */
export function buildGypAddon({ clean }) {
  const { script, tried } = findNodeGyp();
  if (!script) return { ok: false, output: '', why: `node-gyp not found (tried ${tried.join(', ')})` };
  const dir = nodeDir();
  const flags = dir ? [`--nodedir=${dir}`] : [];
  if (clean) return run(process.execPath, [script, 'rebuild', '-j', jobs, ...flags]);
  const configure = run(process.execPath, [script, 'configure', ...flags]);
  if (!configure.ok) return configure;
  return run(process.execPath, [script, 'build', '-j', jobs, ...flags]);
}

/**
 * Loads a built addon in this process and returns its buildInfo(), or the
 * load error.
 * @returns {{ok: true, info: {version: string, cudaCompiledIn: boolean, build: string}} | {ok: false, why: string}}
 */
export function probeAddon(relativePath) {
  const file = path.join(root, relativePath);
  try {
    const addon = requireFromRoot(file);
    return { ok: true, info: addon.buildInfo() };
  } catch (error) {
    return { ok: false, why: `${relativePath} does not load: ${error.message}` };
  }
}

/** Removes a stale addon so the loader cannot pick it over a fresh one. */
export function removeAddon(relativePath) {
  rmSync(path.join(root, relativePath), { force: true });
}
