// Builds the hotpath_native addon; run by `npm install` (via the `build`
// script) and `npm run build:native`. Works offline.
//
// HOTPATH_BUILD selects the build:
//   auto  (default) cmake-js into build-cmake/Release, CUDA backend when nvcc
//         is found; if cmake is missing or the build fails, node-gyp
//         (CPU-only) into build/Release.
//   cmake cmake-js only; fail if it fails.
//   cpu   cmake-js with -DHOTPATH_CUDA=OFF, node-gyp fallback as for auto.
//   gyp   node-gyp only.
// HOTPATH_BUILD_VERBOSE=1 streams compiler output; otherwise it is shown only
// for a failed step. Exit code 0 only when an addon was built and loads.
//
// In a source checkout (native/tests/ present; the packed package leaves it
// out) the cmake-js build first uses `npm test`'s settings for that tree:
// warnings as errors, and the CTest executables built beside the addon
// (npm test's ctest:default runs them there), so npm test finds both up to
// date instead of rebuilding with other flags (minutes on 2 cores). If that
// build fails, the addon alone is built again without -Werror: an install
// never fails on a warning a newer compiler adds, and `npm test` then shows
// the warning.
import {
  addonPaths,
  buildCmakeAddon,
  buildGypAddon,
  checkoutCmakeDefines,
  probeAddon,
  removeAddon,
  sourceCheckout,
  tail,
  verbose,
} from './build-common.mjs';

const modes = ['auto', 'cmake', 'cpu', 'gyp'];
const mode = process.env.HOTPATH_BUILD || 'auto';
if (!modes.includes(mode)) {
  console.error(`hotpath: HOTPATH_BUILD must be one of ${modes.join(', ')}, not '${mode}'`);
  process.exit(2);
}

function report(result) {
  if (!verbose && result.output) console.error(tail(result.output));
}

function describe(kind, info) {
  const cuda = info.cudaCompiledIn ? 'CUDA backend compiled in' : 'CPU-only';
  return `hotpath: built ${addonPaths[kind]} (${info.build}, ${cuda}, v${info.version})`;
}

/** Tries one build; returns true when it produced an addon that loads. */
function attempt(kind) {
  const label = kind === 'gyp' ? 'node-gyp (CPU-only)' : `cmake-js (CUDA ${mode === 'cpu' ? 'OFF' : 'AUTO'})`;
  console.log(`hotpath: building native addon with ${label} ...`);
  const started = Date.now();
  const cuda = mode === 'cpu' ? 'OFF' : 'AUTO';
  let result;
  if (kind === 'gyp') {
    result = buildGypAddon({ clean: true });
  } else if (sourceCheckout) {
    result = buildCmakeAddon({ cuda, defines: checkoutCmakeDefines });
    if (!result.ok) {
      report(result);
      console.log('hotpath: the build with warnings as errors failed; building the addon alone without -Werror');
      result = buildCmakeAddon({ cuda, defines: ['HOTPATH_WERROR=OFF', 'HOTPATH_BUILD_TESTS=OFF'] });
    }
  } else {
    result = buildCmakeAddon({ cuda });
  }
  if (!result.ok) {
    report(result);
    console.error(`hotpath: ${label} build failed: ${result.why}`);
    return false;
  }
  const probe = probeAddon(addonPaths[kind]);
  if (!probe.ok) {
    console.error(`hotpath: ${label} build finished but ${probe.why}`);
    return false;
  }
  console.log(`${describe(kind, probe.info)} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return true;
}

const order = mode === 'gyp' ? ['gyp'] : mode === 'cmake' ? ['cmake'] : ['cmake', 'gyp'];
for (const [index, kind] of order.entries()) {
  if (attempt(kind)) process.exit(0);
  if (kind === 'cmake') removeAddon(addonPaths.cmake); // never leave a stale build to be loaded first
  if (index + 1 < order.length) console.log('hotpath: falling back to node-gyp');
}
console.error('hotpath: no native addon was built. Install CMake (>= 3.24) and a C++20 compiler, '
  + 'or fix the error above, then run `npm run build:native` (HOTPATH_BUILD_VERBOSE=1 for full output).');
process.exit(1);
