// npm test's static checks, two at a time: the TypeScript build of the
// package (tsconfig.json, emits dist/), the type check of the tests
// (test/tsconfig.json, emits nothing) and madge's import-cycle check
// (`npm run check:cycles`). Each is one single-threaded process and none reads
// what another writes, so on 2 cores two lanes take about as long as the
// longest lane; one after the other they were tsc 27 + 28 CPU-s and madge
// 8.5 CPU-s on a loaded 2-core machine.
//
// Lanes: [build, then cycles] beside [test types], about equal in length.
// Each check's output is kept and printed when it ends, under its name, so
// the output of two checks never interleaves; the exit code is 1 if any check
// failed (a failed build still lets the cycle check run, as separate checks).
//
// Usage: node test/static-checks.mjs   (from anywhere; runs in the package root)
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(path.dirname(createRequire(path.join(root, 'package.json')).resolve('typescript/package.json')), 'bin', 'tsc');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const checks = {
  build: [process.execPath, [tsc, '-p', 'tsconfig.json']],
  'test types': [process.execPath, [tsc, '-p', 'test/tsconfig.json']],
  cycles: [npm, ['run', '--silent', 'check:cycles']],
};
const lanes = [['build', 'cycles'], ['test types']];

/** Runs one check to its end; resolves with whether it passed (its output is printed then). */
function runCheck(name) {
  const [command, args] = checks[name];
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const finish = (ok, why) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const text = output.trimEnd();
      if (!ok || text) process.stdout.write(`${text}${text ? '\n' : ''}`);
      process.stdout.write(`static checks: ${name} ${ok ? 'ok' : `FAILED (${why})`} in ${seconds}s\n`);
      resolve(ok);
    };
    child.on('error', (error) => finish(false, error.message));
    child.on('close', (code, signal) => finish(code === 0, signal ? `signal ${signal}` : `exit code ${code}`));
  });
}

async function runLane(names) {
  const results = [];
  for (const name of names) results.push(await runCheck(name));
  return results;
}

const results = (await Promise.all(lanes.map(runLane))).flat();
process.exit(results.every(Boolean) ? 0 : 1);
