// Benchmark runner: `npm run bench -- <suite> [--quick] [--json FILE]`
// (compiled to dist/bench/run.js). Runs one registered suite (bench/suites/),
// prints a table, and writes the suite's JSON to FILE, or by default to
// bench/results/<suite>-<timestamp>.json. Progress goes to stderr.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { packageInfo } from '../src/native/loader.js';
import { suites } from './suites/index.js';

interface Args {
  suite: string;
  quick: boolean;
  json: string | undefined;
}

function usage(): string {
  const names = [...suites.values()].map((s) => `  ${s.name.padEnd(8)} ${s.description}`).join('\n');
  return `usage: npm run bench -- <suite> [--quick] [--json FILE]\nsuites:\n${names}`;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { suite: '', quick: false, json: undefined };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === '--quick') args.quick = true;
    else if (arg === '--json') {
      args.json = argv[i + 1];
      i += 1;
      if (args.json === undefined) throw new Error('--json needs a file name');
    } else if (arg === '--help' || arg === '-h') throw new Error('');
    else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}`);
    else if (args.suite) throw new Error(`one suite at a time (got ${args.suite} and ${arg})`);
    else args.suite = arg;
  }
  if (!args.suite) throw new Error('no suite given');
  if (!suites.has(args.suite)) throw new Error(`unknown suite '${args.suite}'`);
  return args;
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    const message = (error as Error).message;
    console.error(message ? `${message}\n${usage()}` : usage());
    return 2;
  }
  const suite = suites.get(args.suite)!;
  const root = packageInfo().root;
  const started = Date.now();
  const file = args.json ?? path.join(root, 'bench', 'results', `${args.suite}-${new Date(started).toISOString().replace(/[:.]/g, '-')}.json`);
  const report = await suite.run({ quick: args.quick, root, log: (line) => console.error(line), outputFile: path.resolve(file) });
  const json = {
    ...report.json,
    meta: {
      quick: args.quick,
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
