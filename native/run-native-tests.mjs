// Native test runner. `npm test` runs ctest:default and addon:cmake before
// vitest; `npm run test:full` runs ctest:asan and addon:gyp first. ctest:cpu
// runs only when named (or with no step named): the ASan+UBSan tree is
// already CPU-only and the node-gyp addon is the CPU-only sources built
// optimised, so in CI it would be a third build of the same code.
//
// Steps (incremental, -j2):
//   ctest:default  build-cmake          CUDA backend if nvcc is found; the
//                                       cmake-js addon's own tree, which also
//                                       builds the CTest executables, so the
//                                       core library is compiled once for both
//   ctest:cpu      build-tests/cpu      -DHOTPATH_CUDA=OFF
//   ctest:asan     build-tests/asan     CPU-only, ASan+UBSan, Debug (asserts on)
//   addon:cmake    build-cmake/Release  the cmake-js addon vitest loads first
//   addon:gyp      build/Release        the node-gyp addon vitest also tests
// CTest tests labelled "gpu" exit 77 without a device and count as skipped.
// Warnings are errors in every step except addon:gyp (node-gyp's own flags).
//
// Usage: node native/run-native-tests.mjs [step ...]   (default: all steps)
// Every step runs even after a failure; the exit code is 1 if any failed, and
// the failed steps' output is printed after the results table.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';

import {
  addonPaths,
  buildCmakeAddon,
  buildGypAddon,
  checkoutCmakeDefines,
  cmakeJsCommands,
  findCmake,
  jobs,
  probeAddon,
  root,
  tail,
  verbose,
} from './build-common.mjs';

const sanitizerEnv = {
  ASAN_OPTIONS: 'detect_leaks=1:protect_shadow_gap=0',
  UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
};

const ctestSteps = {
  'ctest:default': { dir: 'build-cmake', cmakeJs: true },
  'ctest:cpu': { dir: 'build-tests/cpu', defines: ['-DCMAKE_BUILD_TYPE=Release', '-DHOTPATH_CUDA=OFF'] },
  'ctest:asan': {
    dir: 'build-tests/asan',
    defines: ['-DCMAKE_BUILD_TYPE=Debug', '-DHOTPATH_CUDA=OFF', '-DHOTPATH_SANITIZE=ON'],
    env: sanitizerEnv,
  },
};

const allSteps = [...Object.keys(ctestSteps), 'addon:cmake', 'addon:gyp'];
const requested = process.argv.slice(2);
const unknown = requested.filter((s) => !allSteps.includes(s));
if (unknown.length > 0) {
  console.error(`unknown step(s): ${unknown.join(', ')}; steps are ${allSteps.join(', ')}`);
  process.exit(2);
}
const steps = requested.length > 0 ? allSteps.filter((s) => requested.includes(s)) : allSteps;

const ninja = spawnSync('ninja', ['--version']).status === 0;

/** Summarises ctest output: "4 tests: 3 passed, 1 skipped". */
function ctestSummary(output) {
  const total = /tests passed, (\d+) tests failed out of (\d+)/.exec(output);
  if (!total) return 'no ctest summary';
  const failed = Number(total[1]);
  const count = Number(total[2]);
  const skippedNames = [...output.matchAll(/\d+ - (\S+) \(Skipped\)/g)].map((m) => m[1]);
  const skipped = skippedNames.length;
  const parts = [`${count - failed - skipped} passed`];
  if (skipped) parts.push(`${skipped} skipped (${skippedNames.join(', ')})`);
  if (failed) parts.push(`${failed} FAILED`);
  return `${count} tests: ${parts.join(', ')}`;
}

/** Seconds between progress lines while a build or a test run is going. */
const PROGRESS_EVERY_S = 10;
/** Whether the current step printed a progress line (its result then starts a line of its own). */
let progressPrinted = false;

/**
 * Runs a command like build-common's `run`, but without blocking, so a long
 * build can report progress: every PROGRESS_EVERY_S it prints the latest
 * "[done/total]" counter the tool wrote (ninja's "[12/48]", make's "[ 25%]",
 * ctest's "12/24 Test"), one line each, so a CI log shows a build moving
 * rather than minutes of silence. Output is kept for the failure report.
 * @returns {Promise<{ok: boolean, output: string, why: string}>}
 */
function runWithProgress(step, phase, command, args, { env = {} } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const started = Date.now();
    let output = '';
    let latest = '';
    const take = (chunk) => {
      const text = chunk.toString('utf8');
      output += text;
      if (verbose) process.stdout.write(text);
      const counters = [...text.matchAll(/^\s*(\[\s*\d+\/\d+\]|\[\s*\d+%\]|\d+\/\d+ Test)/gm)];
      if (counters.length > 0) latest = counters[counters.length - 1][1].replace(' Test', '').replace(/\s+/g, '');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const ticker = setInterval(() => {
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stdout.write(`\nnative: ${step} ${phase} ${latest || '(starting)'} ${seconds}s`);
      progressPrinted = true;
    }, PROGRESS_EVERY_S * 1000);
    const finish = (result) => {
      clearInterval(ticker);
      resolve(result);
    };
    child.on('error', (error) => finish({ ok: false, output, why: `${command}: ${error.message}` }));
    child.on('close', (code, signal) => {
      if (code === 0) return finish({ ok: true, output, why: '' });
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      finish({ ok: false, output, why: `${path.basename(command)} ${phase} failed (${how})` });
    });
  });
}

async function ctestStep(step, { dir, defines = [], cmakeJs = false, env = {} }) {
  const buildDir = path.join(root, dir);
  const built = cmakeJs ? await buildWithCmakeJs(step) : await buildWithCmake(step, buildDir, defines);
  if (!built.ok) return built;
  const test = await runWithProgress(step, 'test', 'ctest', ['--test-dir', buildDir, '--output-on-failure', '--parallel', jobs], { env });
  return { ...test, output: built.output + test.output, detail: ctestSummary(test.output) };
}

/** Configures (once) and builds a plain CMake tree with the CTest executables. */
async function buildWithCmake(step, buildDir, defines) {
  let output = '';
  if (!existsSync(path.join(buildDir, 'CMakeCache.txt'))) {
    const generator = ninja ? ['-G', 'Ninja'] : [];
    const configure = await runWithProgress(step, 'configure', 'cmake', ['-S', root, '-B', buildDir, ...generator, '-DHOTPATH_BUILD_TESTS=ON', '-DHOTPATH_WERROR=ON', ...defines]);
    output += configure.output;
    if (!configure.ok) return { ...configure, output, detail: 'configure failed' };
  }
  const build = await runWithProgress(step, 'build', 'cmake', ['--build', buildDir, '--parallel', jobs]);
  output += build.output;
  return build.ok ? { ...build, output } : { ...build, output, detail: 'build failed' };
}

/**
 * Builds the addon's own tree: cmake-js configures it (node headers, its cache
 * settings) with the same defines as the install and addon:cmake, so the
 * three never reconfigure it away from each other.
 */
async function buildWithCmakeJs(step) {
  const commands = cmakeJsCommands({ cuda: 'AUTO', defines: checkoutCmakeDefines });
  if (!commands.ok) return { ok: false, output: '', why: commands.why, detail: 'configure failed' };
  let output = '';
  for (const [phase, args] of [['configure', commands.configure], ['build', commands.build]]) {
    const result = await runWithProgress(step, phase, process.execPath, args);
    output += result.output;
    if (!result.ok) return { ...result, output, detail: `${phase} failed` };
  }
  return { ok: true, output, why: '' };
}

function addonStep(kind) {
  const result = kind === 'cmake' ? buildCmakeAddon({ cuda: 'AUTO', defines: checkoutCmakeDefines }) : buildGypAddon({ clean: false });
  if (!result.ok) return { ...result, detail: 'build failed' };
  const probe = probeAddon(addonPaths[kind]);
  if (!probe.ok) return { ok: false, output: result.output, why: probe.why, detail: 'does not load' };
  const cuda = probe.info.cudaCompiledIn ? 'CUDA compiled in' : 'CPU-only';
  return { ...result, detail: `${addonPaths[kind]} (${cuda})` };
}

if (!findCmake()) {
  console.error('run-native-tests: cmake not found on PATH; the native tests need CMake >= 3.24');
  process.exit(1);
}

const results = [];
const startedAll = Date.now();
for (const step of steps) {
  process.stdout.write(`native: ${step} ...`);
  progressPrinted = false;
  const started = Date.now();
  const result = step.startsWith('ctest:') ? await ctestStep(step, ctestSteps[step]) : addonStep(step.slice('addon:'.length));
  const seconds = (Date.now() - started) / 1000;
  results.push({ step, seconds, ...result });
  const resultLine = ` ${result.ok ? 'ok' : 'FAILED'} (${seconds.toFixed(1)}s)\n`;
  process.stdout.write(progressPrinted ? `\nnative: ${step}${resultLine}` : resultLine);
}

const width = Math.max(...results.map((r) => r.step.length));
console.log('\nnative results');
for (const r of results) {
  console.log(`  ${r.step.padEnd(width)}  ${(r.ok ? 'ok' : 'FAIL').padEnd(4)}  ${r.seconds.toFixed(1).padStart(5)}s  ${r.detail}`);
}
console.log(`  total ${((Date.now() - startedAll) / 1000).toFixed(1)}s`);

const failed = results.filter((r) => !r.ok);
for (const r of failed) {
  console.error(`\n--- ${r.step} failed: ${r.why} ---\n${tail(r.output, 60)}`);
}
process.exit(failed.length > 0 ? 1 : 0);
