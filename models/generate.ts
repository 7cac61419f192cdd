// Generates the sample model repository (models/<name>/config.pbtxt and
// models/<name>/1/model.onnx). See models/lib/sample-models.ts for what each model is.
//
//   node dist/models/generate.js                 regenerate every file
//   node dist/models/generate.js --missing-only  write only files that are absent
//   node dist/models/generate.js --out DIR       write into DIR instead of models/
//   node dist/models/generate.js --only a,b      restrict to some models
//
// `npm install` runs the --missing-only form: ranker_mlp's model.onnx (~6 MB) is not
// committed and gets created there, while committed files are left untouched.

import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeSampleRepository } from './lib/sample-models.js';

// Compiled to dist/models/generate.js; the repository root is two levels up.
const DEFAULT_OUT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'models');

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'missing-only': { type: 'boolean', default: false },
      out: { type: 'string', default: DEFAULT_OUT },
      only: { type: 'string' },
    },
  });
  const outDir = resolve(values.out);
  const started = performance.now();
  const written = await writeSampleRepository(outDir, {
    missingOnly: values['missing-only'],
    ...(values.only !== undefined ? { only: values.only.split(',').map((s) => s.trim()) } : {}),
  });
  for (const f of written) {
    console.log(`${f.action.padEnd(7)} ${relative(process.cwd(), f.path)} (${f.bytes} bytes)`);
  }
  const count = written.filter((f) => f.action === 'written').length;
  console.log(`sample models: ${count} file(s) written to ${outDir} in ${Math.round(performance.now() - started)} ms`);
}

main().catch((err: unknown) => {
  console.error('model generation failed:', err);
  process.exitCode = 1;
});
