// `npm install`'s postinstall: makes the package runnable where it was
// installed, with nothing but its dependencies (no devDependency), so
// `npm ci --omit=dev` followed by `npx hotpath serve` works.
//
// 1. The native addon (native/build-addon.mjs; cmake-js is a dependency).
//    - HOTPATH_NATIVE_ADDON set: nothing is built. The loader uses only that
//      file, so it must load and be of this version, or the install fails.
//    - A source checkout: always (re)built, incrementally.
//    - An installed package: built unless a loadable addon of this version is
//      already in build-cmake/ or build/ (copied from an image's build stage).
// 2. The TypeScript, only in a source checkout (tsconfig.json and src/*.ts
//    present) with `typescript` installed, and only when dist/ is missing or
//    older than a source. The packed package ships dist/ (`prepack` builds it)
//    and no TypeScript sources, so it never compiles anything here.
// 3. The sample models: `dist/models/generate.js --missing-only` writes the
//    ones that are not shipped (ranker_mlp's ~6 MB model.onnx). Dependencies only.
//
// A production install of a source checkout (`npm ci --omit=dev` with no
// dist/) cannot compile the TypeScript: it says so and how to fix it, without
// failing the install.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { addonPaths, probeAddon, root } from './build-common.mjs';

const requireFromRoot = createRequire(path.join(root, 'package.json'));
const version = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
const sourceCheckout = existsSync(path.join(root, 'tsconfig.json')) && existsSync(path.join(root, 'src', 'cli.ts'));

function step(label, command, args) {
  const started = Date.now();
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`hotpath: ${label} failed (${result.error?.message ?? `exit code ${result.status}`})`);
    process.exit(result.status || 1);
  }
  console.log(`hotpath: ${label} done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
}

/** The path of an already-built addon of this version that loads, or null. */
function usableAddon(candidates) {
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    const probe = probeAddon(path.relative(root, file));
    if (probe.ok && probe.info.version === version) return file;
    console.log(`hotpath: not using ${file}: ${probe.ok ? `built for v${probe.info.version}, not v${version}` : probe.why}`);
  }
  return null;
}

function newestSourceMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMtime(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

function typescriptCompiler() {
  try {
    return path.join(path.dirname(requireFromRoot.resolve('typescript/package.json')), 'bin', 'tsc');
  } catch {
    return null;
  }
}

// 1. Native addon
const pinned = process.env.HOTPATH_NATIVE_ADDON;
const existing = pinned
  ? usableAddon([path.resolve(pinned)])
  : sourceCheckout ? null : usableAddon(Object.values(addonPaths).map((p) => path.join(root, p)));
if (existing) {
  console.log(`hotpath: using the native addon at ${existing} (v${version}); not building one`);
} else if (pinned) {
  console.error(`hotpath: HOTPATH_NATIVE_ADDON=${pinned} is missing or is not a loadable v${version} addon, `
    + 'and the loader would use no other: unset it to build one, or point it at a built hotpath_native.node.');
  process.exit(1);
} else {
  step('native addon build', process.execPath, [path.join(root, 'native', 'build-addon.mjs')]);
}

// 2. TypeScript
const distEntry = path.join(root, 'dist', 'src', 'cli.js');
if (sourceCheckout) {
  const tsc = typescriptCompiler();
  const builtAt = existsSync(distEntry) ? statSync(distEntry).mtimeMs : 0;
  const sourcesAt = Math.max(...['src', 'models', 'bench'].filter((d) => existsSync(path.join(root, d))).map((d) => newestSourceMtime(path.join(root, d))));
  if (tsc === null) {
    if (builtAt === 0) {
      console.warn('hotpath: dist/ is missing and typescript is not installed (a production install of a source checkout). '
        + 'Build it with `npm ci && npm run build:ts` first, or install the packed package (`npm pack`), which ships dist/.');
    }
  } else if (builtAt < sourcesAt) {
    step('TypeScript build', process.execPath, [tsc, '-p', 'tsconfig.json']);
  } else {
    console.log('hotpath: dist/ is up to date');
  }
}

// 3. Sample models
const generator = path.join(root, 'dist', 'models', 'generate.js');
if (existsSync(generator)) step('sample models', process.execPath, [generator, '--missing-only']);
else console.warn('hotpath: dist/models/generate.js is missing: sample models not generated');
