// Benchmark runner: `npm run bench -- <suite> [--quick] [--json FILE]`
// (compiled to dist/bench/run.js), plus the options some suites take
// (run-args.ts). Runs one registered suite (bench/suites/), prints a table,
// and writes the suite's JSON to FILE, or by default to
// bench/results/<suite>-<timestamp>.json. Progress goes to stderr.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { packageInfo } from '../src/native/loader.js';
import { parseRunArgs, usage, type RunArgs } from './run-args.js';
import { suites } from './suites/index.js';

async function main(): Promise<number> {
  let args: RunArgs;
  try {
    args = parseRunArgs(process.argv.slice(2), suites);
  } catch (error) {
    const message = (error as Error).message;
    console.error(message ? `${message}\n${usage(suites)}` : usage(suites));
    return 2;
  }
  const suite = suites.get(args.suite)!;
  const root = packageInfo().root;
  const started = Date.now();
  const file = args.json ?? path.join(root, 'bench', 'results', `${args.suite}-${new Date(started).toISOString().replace(/[:.]/g, '-')}.json`);
  const report = await suite.run({
    quick: args.quick, root, log: (line) => console.error(line), outputFile: path.resolve(file),
    ...(args.threads === undefined ? {} : { threads: args.threads }),
    ...(args.rounds === undefined ? {} : { rounds: args.rounds }),
  });
  const json = {
    ...report.json,
    meta: {
      quick: args.quick,
      ...(args.threads === undefined ? {} : { threads: args.threads }),
      ...(args.rounds === undefined ? {} : { rounds: args.rounds }),
      date: new Date(started).toISOString(),
      seconds: (Date.now() - started) / 1000,
      host: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    },
  };
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  const width = Math.max(...report.table.map(([label]) => label.length));
  console.log(`\n${args.suite} benchmark${args.quick ? ' (quick)' : ''}`);
  for (const [label, value] of report.table) console.log(`  ${label.padEnd(width)}  ${value}`);
  console.log(`\n${JSON.stringify(report.json)}\nwritten to ${path.relative(process.cwd(), path.resolve(file))}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
