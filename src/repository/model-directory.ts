/**
 * The repository on disk, `DIR/<model>/config.pbtxt` and
 * `DIR/<model>/<version>/model.onnx`, and the settings a model's config gives
 * its load (tenant, instances, threads, declared footprint). Reads the file
 * system, keeps no state.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { echo, echoField } from '../common/echo.js';
import type { ModelConfig } from '../generated/model_config_pb.js';
import { DEFAULT_TENANT, parseByteSize } from '../tenancy/tenant-config.js';
import { ModelConfigError, parseModelConfigText } from './model-config.js';
import { LOAD_TIMEOUT_PARAMETER } from './load-deadline.js';

export const MODEL_FILENAME = 'model.onnx';
export const CONFIG_FILENAME = 'config.pbtxt';

/**
 * Model directory names in the repository, sorted. A directory is a model
 * when it holds a config.pbtxt or a numeric version directory; anything else
 * (such as the sample repository's generator code) is not a model.
 */
export async function scanRepository(repository: string): Promise<string[]> {
  const entries = await readdir(repository, { withFileTypes: true });
  const names: string[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    if (await isModelDirectory(path.join(repository, entry.name))) names.push(entry.name);
  }
  return names.sort();
}

/**
 * Why `name` cannot name a model directory (undefined when it can): a name a
 * client or a flag gives must stay inside the repository.
 */
export function modelNameProblem(name: string): string | undefined {
  if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name)) {
    return "expected a model directory name (not empty, '.' or '..', and without '/', '\\' or NUL)";
  }
  return undefined;
}

/** A load of a name the repository has no directory for; the repository's path is the server's business. */
export function missingModelMessage(name: string): string {
  return `model ${echo(name)} is not found in repository: it has no directory of that name`;
}

/**
 * `message` as a client may see it: the repository's own path (a server
 * path) is left out, so `/srv/models/ctr/config.pbtxt:3: ...` reads
 * `ctr/config.pbtxt:3: ...`. Logs keep the full message for operators.
 */
export function withoutRepositoryPath(message: string, repository: string): string {
  const root = repository.endsWith(path.sep) ? repository.slice(0, -1) : repository;
  if (root === '') return message;
  return message.split(`${root}${path.sep}`).join('').split(root).join('the model repository');
}

async function isModelDirectory(dir: string): Promise<boolean> {
  if (existsSync(path.join(dir, CONFIG_FILENAME))) return true;
  const entries = await readdir(dir, { withFileTypes: true });
  return entries.some((e) => e.isDirectory() && /^\d+$/.test(e.name));
}

/**
 * The size of a version's model file. An empty file (a failed copy, a
 * placeholder) fails the load here, naming the file: onnxruntime would only
 * say "ModelProto does not have a graph".
 */
export async function modelFileBytes(modelPath: string): Promise<number> {
  const bytes = (await stat(modelPath)).size;
  if (bytes === 0) throw new ModelConfigError(modelPath, undefined, 'the model file is empty (0 bytes); expected an ONNX model');
  return bytes;
}

/** The model's parsed config.pbtxt; undefined when it has none (completed from the ONNX model). */
export async function readModelConfig(name: string, modelDir: string, log: Logger): Promise<ModelConfig | undefined> {
  const file = path.join(modelDir, CONFIG_FILENAME);
  if (!existsSync(file)) {
    log.info({ model: echoField(name) }, 'no config.pbtxt: completing the config from the ONNX model');
    return undefined;
  }
  const { config, warnings } = parseModelConfigText(await readFile(file, 'utf8'), file);
  for (const warning of warnings) log.warn({ model: echoField(name) }, warning);
  return config;
}

/** Version numbers on disk: numeric directories holding the model file. */
export async function availableVersions(modelDir: string, config: ModelConfig | undefined): Promise<number[]> {
  const filename = config?.defaultModelFilename || MODEL_FILENAME;
  const entries = await readdir(modelDir, { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory() && /^\d+$/.test(e.name) && existsSync(path.join(modelDir, e.name, filename)))
    .map((e) => Number(e.name));
}

/** The tenant a model's memory is charged to: config parameter `tenant`, else `default`. */
export function modelTenant(config: ModelConfig | undefined): string {
  return config?.parameters['tenant']?.stringValue || DEFAULT_TENANT;
}

/**
 * A footprint the config declares (parameter `memory_footprint_bytes`, e.g.
 * "512MiB"), charged instead of the measurement: for models whose sessions
 * allocate lazily, and for deterministic tests.
 */
export function declaredFootprint(config: ModelConfig | undefined, file: string): number | undefined {
  const value = config?.parameters['memory_footprint_bytes']?.stringValue;
  if (value === undefined) return undefined;
  try {
    return parseByteSize(value, 'parameter memory_footprint_bytes');
  } catch (err) {
    throw new ModelConfigError(file, undefined, err instanceof Error ? err.message : String(err));
  }
}

/**
 * The model's own load time limit in ms (config parameter
 * `model_load_timeout_secs`, seconds, 0 = none); undefined when it sets none
 * (`--model-load-timeout` applies).
 */
export function modelLoadTimeoutMs(config: ModelConfig | undefined, file: string): number | undefined {
  const value = config?.parameters[LOAD_TIMEOUT_PARAMETER]?.stringValue;
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > 86_400) {
    throw new ModelConfigError(
      file, undefined,
      `parameter '${LOAD_TIMEOUT_PARAMETER}': expected seconds in 0..86400 (0 = no limit), got ${echo(value)}`,
    );
  }
  return Math.round(seconds * 1000);
}

/** Triton sums the counts of every instance group; a missing group means one instance. */
export function instanceCount(config: ModelConfig | undefined): number {
  const groups = config?.instanceGroup ?? [];
  if (groups.length === 0) return 1;
  return groups.reduce((sum, group) => sum + Math.max(1, group.count || 1), 0);
}

/** Triton's onnxruntime backend reads `intra_op_thread_count` from the config parameters. */
export function intraOpThreads(config: ModelConfig | undefined, fallback: number): number {
  const value = config?.parameters['intra_op_thread_count']?.stringValue;
  const parsed = value === undefined ? NaN : Number(value);
  return Number.isInteger(parsed) && parsed > 0 ? parsed : fallback;
}
