/**
 * `hotpath tune`'s decisions, apart from any I/O: the grid of candidate
 * batching settings (max_batch_size × preferred_batch_size ×
 * max_queue_delay_microseconds × instance_group count, after the original
 * config itself), each candidate applied to a copy of the model's original
 * ModelConfig, the concurrency search per candidate, and the pick.
 *
 * Concurrency search: a closed loop at 1, 2, 4, ... requests in flight, up
 * to --max-concurrency. It stops at the first level whose p99 is over the
 * budget (the command measures an unstable such level a second time and
 * keeps that measurement) or that saw errors, or whose throughput is less than
 * PLATEAU_GAIN above the best so far (more in flight past that point only
 * queues). A candidate's score is its highest throughput at a level with
 * p99 ≤ budget and no errors; the pick is the candidate with the highest
 * score, the original config winning ties (it is measured first).
 *
 * Pure; safe in any thread.
 */
import { clone, create } from '@bufbuild/protobuf';
import { UsageError } from '../common/flag-values.js';
import { ModelConfigSchema, ModelDynamicBatchingSchema, ModelInstanceGroupSchema, type ModelConfig } from '../generated/model_config_pb.js';
import type { LevelResult } from './perf-report.js';

/** One value of --preferred-batch-sizes: none (no preferred size), the candidate's max_batch_size, or a number. */
export type PreferredChoice = 'none' | 'max' | number;

export interface TuneGrid {
  readonly maxBatchSizes: readonly number[];
  readonly preferred: readonly PreferredChoice[];
  readonly queueDelaysUs: readonly number[];
  readonly instanceCounts: readonly number[];
}

/** The batching settings of one candidate. */
export interface BatchingSettings {
  readonly maxBatchSize: number;
  readonly preferredBatchSizes: readonly number[];
  readonly maxQueueDelayUs: number;
  readonly instanceCount: number;
}

/** A level at least this much (fractionally) above the best so far keeps the search going. */
export const PLATEAU_GAIN = 0.05;

/** The original config's own batching settings (a config without dynamic batching has no delay or preferred sizes). */
export function settingsOf(config: ModelConfig): BatchingSettings {
  const dynamic = config.schedulingChoice.case === 'dynamicBatching' ? config.schedulingChoice.value : undefined;
  return {
    maxBatchSize: config.maxBatchSize,
    preferredBatchSizes: dynamic?.preferredBatchSize ?? [],
    maxQueueDelayUs: Number(dynamic?.maxQueueDelayMicroseconds ?? 0n),
    instanceCount: config.instanceGroup.length === 0 ? 1 : config.instanceGroup.reduce((sum, group) => sum + Math.max(1, group.count), 0),
  };
}

/** Why tune cannot sweep this model's batching, or undefined when it can. */
export function unsweepable(config: ModelConfig): string | undefined {
  if (config.maxBatchSize <= 0) return `model '${config.name}' does not batch (max_batch_size 0): there is no batching to tune`;
  const scheduling = config.schedulingChoice.case;
  if (scheduling === 'sequenceBatching' || scheduling === 'ensembleScheduling') {
    return `model '${config.name}' uses ${scheduling === 'sequenceBatching' ? 'sequence_batching' : 'ensemble_scheduling'}; tune sweeps dynamic_batching only`;
  }
  return undefined;
}

/** The grid's candidates in order, without duplicates and without preferred sizes above max_batch_size. */
export function gridCandidates(grid: TuneGrid, original: BatchingSettings): BatchingSettings[] {
  const seen = new Set<string>([key(original)]);
  const out: BatchingSettings[] = [];
  for (const maxBatchSize of grid.maxBatchSizes) {
    for (const choice of grid.preferred) {
      const preferredBatchSizes = choice === 'none' ? [] : [choice === 'max' ? maxBatchSize : choice];
      if (preferredBatchSizes.some((size) => size > maxBatchSize)) continue;
      for (const maxQueueDelayUs of grid.queueDelaysUs) {
        for (const instanceCount of grid.instanceCounts) {
          const candidate = { maxBatchSize, preferredBatchSizes, maxQueueDelayUs, instanceCount };
          if (seen.has(key(candidate))) continue;
          seen.add(key(candidate));
          out.push(candidate);
        }
      }
    }
  }
  return out;
}

function key(settings: BatchingSettings): string {
  return `${settings.maxBatchSize}/${settings.preferredBatchSizes.join(',')}/${settings.maxQueueDelayUs}/${settings.instanceCount}`;
}

/**
 * The original config with the candidate's settings: max_batch_size,
 * dynamic_batching's preferred sizes and queue delay (its other fields
 * kept), and the instance count (on the first instance group, the others
 * removed; one group of that count when the config had none).
 */
export function applySettings(original: ModelConfig, settings: BatchingSettings): ModelConfig {
  const config = clone(ModelConfigSchema, original);
  config.maxBatchSize = settings.maxBatchSize;
  const batching = config.schedulingChoice.case === 'dynamicBatching' ? config.schedulingChoice.value : create(ModelDynamicBatchingSchema);
  batching.preferredBatchSize = [...settings.preferredBatchSizes];
  batching.maxQueueDelayMicroseconds = BigInt(settings.maxQueueDelayUs);
  config.schedulingChoice = { case: 'dynamicBatching', value: batching };
  const group = config.instanceGroup[0] ?? create(ModelInstanceGroupSchema);
  group.count = settings.instanceCount;
  config.instanceGroup = [group];
  return config;
}

/** Whether another, higher level is worth measuring after `levels` (in order) for this budget. */
export function searchContinues(levels: readonly LevelResult[], budgetUs: number): boolean {
  const last = levels[levels.length - 1];
  if (last === undefined) return true;
  if (last.errors > 0 || last.p99Us > budgetUs) return false;
  const before = levels.slice(0, -1).filter((level) => fits(level, budgetUs));
  const bestBefore = Math.max(0, ...before.map((level) => level.inferencesPerSecond));
  return before.length === 0 || last.inferencesPerSecond >= bestBefore * (1 + PLATEAU_GAIN);
}

/** A level that meets the budget: p99 within it and no errors. */
export function fits(level: LevelResult, budgetUs: number): boolean {
  return level.errors === 0 && level.p99Us <= budgetUs;
}

/** The candidate's best level within the budget, or undefined when none meets it. */
export function bestLevel(levels: readonly LevelResult[], budgetUs: number): LevelResult | undefined {
  let best: LevelResult | undefined;
  for (const level of levels) if (fits(level, budgetUs) && (best === undefined || level.inferencesPerSecond > best.inferencesPerSecond)) best = level;
  return best;
}

/** Index of the candidate with the highest score (the earliest on ties); -1 when none met the budget. */
export function pickBest(scores: readonly (number | undefined)[]): number {
  let best = -1;
  scores.forEach((score, i) => {
    if (score !== undefined && (best < 0 || score > scores[best]!)) best = i;
  });
  return best;
}

/** A flag's comma-separated integer list (each in [min, max]); the error names the flag. */
export function integerList(flag: string, raw: string, min: number, max: number): number[] {
  const values = raw.split(',').map((part) => part.trim());
  return values.map((part) => {
    if (!/^\d+$/.test(part) || Number(part) < min || Number(part) > max) {
      throw new UsageError(`${flag}: expected a comma-separated list of integers from ${min} to ${max}, got '${raw}'`);
    }
    return Number(part);
  });
}

/** --preferred-batch-sizes: none, max, or integers, comma-separated. */
export function preferredList(raw: string): PreferredChoice[] {
  return raw.split(',').map((part) => {
    const text = part.trim();
    if (text === 'none' || text === 'max') return text;
    if (!/^\d+$/.test(text) || Number(text) < 1) {
      throw new UsageError(`--preferred-batch-sizes: expected a comma-separated list of none, max or positive integers, got '${raw}'`);
    }
    return Number(text);
  });
}
