// Temporary model repositories for the serve benchmark: one per contender,
// holding one model whose config.pbtxt is a variant of the checked-in one.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * `config` without its top-level `dynamic_batching { ... }` block (batching
 * off), everything else untouched. Braces inside strings or comments are not
 * expected in a generated config; a missing block returns the text as is.
 */
export function withoutDynamicBatching(config: string): string {
  const match = /^[ \t]*dynamic_batching\s*\{/m.exec(config);
  if (match === null) return config;
  let depth = 0;
  for (let i = match.index + match[0].length - 1; i < config.length; i += 1) {
    if (config[i] === '{') depth += 1;
    else if (config[i] === '}') {
      depth -= 1;
      if (depth === 0) {
        const end = config[i + 1] === '\n' ? i + 2 : i + 1;
        return config.slice(0, match.index) + config.slice(end);
      }
    }
  }
  throw new Error('withoutDynamicBatching: unbalanced braces after dynamic_batching');
}

export function hasDynamicBatching(config: string): boolean {
  return /^[ \t]*dynamic_batching\s*\{/m.test(config);
}

/** Sum of `count` over instance_group entries (Triton's default is 1 per group). */
export function instanceCount(config: string): number {
  const group = /instance_group\s*\[([\s\S]*?)\]/.exec(config);
  if (group === null) return 1;
  const entries = (group[1] ?? '').split('}').filter((entry) => entry.includes('{'));
  if (entries.length === 0) return 1;
  return entries.reduce((sum, entry) => sum + Number(/count\s*:\s*(\d+)/.exec(entry)?.[1] ?? 1), 0);
}

export interface TempRepository {
  readonly dir: string;
  readonly modelPath: string;
  remove(): void;
}

/**
 * Copies `<source>/<model>/1/model.onnx` next to `config` in a fresh temp
 * directory, under the name `as` (default `model`; `config` must carry that name).
 */
export function writeTempRepository(source: string, model: string, config: string, as = model): TempRepository {
  const dir = mkdtempSync(path.join(os.tmpdir(), `hotpath-bench-${as}-`));
  const versionDir = path.join(dir, as, '1');
  mkdirSync(versionDir, { recursive: true });
  writeFileSync(path.join(dir, as, 'config.pbtxt'), config);
  const modelPath = path.join(versionDir, 'model.onnx');
  copyFileSync(path.join(source, model, '1', 'model.onnx'), modelPath);
  return { dir, modelPath, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The checked-in config and model path; model.onnx must exist (see README: npm install generates it). */
export function readModel(source: string, model: string): { config: string; modelPath: string } {
  const modelPath = path.join(source, model, '1', 'model.onnx');
  if (!existsSync(modelPath)) throw new Error(`${modelPath} is missing: run node dist/models/generate.js --missing-only`);
  return { config: readFileSync(path.join(source, model, 'config.pbtxt'), 'utf8'), modelPath };
}

/**
 * `max_queue_delay_microseconds` of the dynamic_batching block: null when the
 * config has no dynamic_batching, 0 when the block leaves it out (Triton's default).
 */
export function maxQueueDelayUs(config: string): number | null {
  if (!hasDynamicBatching(config)) return null;
  const match = /max_queue_delay_microseconds\s*:\s*(\d+)/.exec(config);
  return match === null ? 0 : Number(match[1]);
}

/** `config` with its top-level `name:` set to `name` (a copy of a model under another name). */
export function renameModel(config: string, name: string): string {
  const renamed = config.replace(/^name\s*:\s*"[^"]*"/m, `name: "${name}"`);
  if (renamed === config && !config.includes(`name: "${name}"`)) throw new Error('renameModel: the config has no top-level name');
  return renamed;
}
