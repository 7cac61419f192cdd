/**
 * `hotpath tune`: Model Analyzer's job for one model. Reads the model's
 * current ModelConfig, measures it, then loads each grid candidate
 * (tune-grid.ts) through the repository API with Triton's config override
 * and measures it with perf's engine (measure.ts: the same request, load
 * generator and windows as `hotpath perf`), searching concurrency upward
 * until the p99 budget is passed. Writes the best candidate as config.pbtxt
 * (pbtxt-writer.ts) and reports every candidate (tune-report.ts).
 *
 * Whatever happens after the first candidate load (success, a failed load,
 * a lost server, SIGINT or SIGTERM), the model is loaded once more without
 * an override before the command returns, so the server serves the model's
 * own config.pbtxt again; a second signal exits at once without that.
 *
 * Main thread of its own process; the command owns the control client, the
 * load connections and its signal handlers, and removes them before it
 * returns.
 */
import { writeFileSync } from 'node:fs';
import { UsageError } from '../common/flag-values.js';
import { ModelConfigSchema, type ModelConfig } from '../generated/model_config_pb.js';
import { createControlClient, type ControlClient } from './control-client.js';
import type { LoadGenerator } from './load-loop.js';
import { measureLevel, openLoad, prepareRequest, readInputData, readTlsFiles, type TlsFiles, type WindowSettings } from './measure.js';
import { toPbtxt } from './pbtxt-writer.js';
import { isUsageError } from './perf-command.js';
import type { LevelResult } from './perf-report.js';
import type { InputData } from './request-body.js';
import { parseTuneArgs, TUNE_USAGE, type TuneSettings } from './tune-flags.js';
import { applySettings, bestLevel, gridCandidates, pickBest, searchContinues, settingsOf, unsweepable, type BatchingSettings } from './tune-grid.js';
import { settingsLabel, tunePlot, tuneTable, type CandidateResult } from './tune-report.js';

/** Exit statuses after a signal, as a shell reports a process killed by it. */
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

class Interrupted extends Error {
  constructor(readonly signal: keyof typeof SIGNAL_EXIT) {
    super(`interrupted by ${signal}`);
  }
}

/** Runs `hotpath tune ...`; sets process.exitCode rather than exiting (except on a second signal). */
export async function tuneCommand(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out.write(TUNE_USAGE);
    return;
  }
  let settings: TuneSettings;
  let files: TlsFiles | undefined;
  let data: InputData;
  try {
    settings = parseTuneArgs(argv);
    files = settings.tls === undefined ? undefined : readTlsFiles(settings.tls);
    data = readInputData(settings.inputData);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    process.stderr.write(`hotpath tune: ${err.message}\n(hotpath tune --help lists the options)\n`);
    process.exitCode = 2;
    return;
  }
  const control = createControlClient({ protocol: settings.protocol, url: settings.url, apiKey: settings.apiKey, tls: files });
  const controller = new AbortController();
  const onSignal = (signal: keyof typeof SIGNAL_EXIT) => {
    if (controller.signal.aborted) {
      process.stderr.write(`hotpath tune: ${signal} again: exiting without restoring model '${settings.model}'s config\n`);
      process.exit(SIGNAL_EXIT[signal]);
    }
    process.stderr.write(`hotpath tune: ${signal}: stopping; the model's own config is being loaded back (${signal} again to exit at once)\n`);
    controller.abort(new Interrupted(signal));
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    await tune(control, settings, files, data, controller.signal, out);
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    control.close();
  }
}

async function tune(control: ControlClient, settings: TuneSettings, files: TlsFiles | undefined, data: InputData, signal: AbortSignal, out: NodeJS.WritableStream): Promise<void> {
  const started = Date.now();
  let original: ModelConfig;
  try {
    original = await control.config(settings.model, '');
  } catch (err) {
    process.stderr.write(`hotpath tune: cannot read model '${settings.model}'s config at ${settings.url}: ${message(err)}\n`);
    process.exitCode = 1;
    return;
  }
  const why = unsweepable(original);
  if (why !== undefined) return usage(why);
  const current = settingsOf(original);
  const grid = gridCandidates(settings.grid, current);
  if (grid.length > settings.maxCandidates) {
    return usage(`--max-candidates ${settings.maxCandidates}: the grid has ${grid.length} candidates; narrow the lists or raise the bound`);
  }
  let loop: LoadGenerator;
  try {
    loop = await openLoad(settings, files, await prepareRequest(control, { ...settings, version: '' }, data), settings.connections, 1);
  } catch (err) {
    if (err instanceof UsageError) return usage(err.message);
    process.stderr.write(`hotpath tune: cannot measure model '${settings.model}' at ${settings.url}: ${message(err)}\n`);
    process.exitCode = 1;
    return;
  }
  out.write(
    `hotpath tune: model '${settings.model}' at ${settings.url} over ${settings.protocol}, p99 budget ${settings.budgetUs / 1000} ms, ` +
      `the current config and ${grid.length} candidate(s), concurrency 1..${settings.maxConcurrency}, windows of ${settings.measurementIntervalMs} ms\n`,
  );
  // Stability follows the average latency, as perf's default; the budget is checked on p99.
  const windows: WindowSettings = { ...settings, version: '', distribution: 'constant', percentile: undefined };
  const results: CandidateResult[] = [];
  let reloaded = false;
  let failure: unknown;
  try {
    for (const [index, candidate] of [current, ...grid].entries()) {
      signal.throwIfAborted();
      const t0 = Date.now();
      out.write(`[${index}/${grid.length}] ${index === 0 ? 'current config' : 'candidate'}: ${settingsLabel(candidate)}\n`);
      if (index > 0) {
        reloaded = true;
        const refused = await loadCandidate(control, settings, original, candidate);
        if (refused !== undefined) {
          out.write(`  load failed: ${refused}\n`);
          results.push({ index, settings: candidate, levels: [], best: undefined, failure: refused, seconds: (Date.now() - t0) / 1000 });
          continue;
        }
      }
      const levels: LevelResult[] = [];
      for (let concurrency = 1; ; concurrency = Math.min(concurrency * 2, settings.maxConcurrency)) {
        const load = { kind: 'concurrency', value: concurrency } as const;
        let level = await measureLevel(control, loop, windows, load, signal);
        writeLevel(out, level);
        if (level.errors === 0 && level.p99Us > settings.budgetUs && !level.stable) {
          // An unstable window set's p99 may be one stall on a busy machine: confirm before the search ends on it.
          out.write('    over budget but unstable: measured again\n');
          level = await measureLevel(control, loop, windows, load, signal);
          writeLevel(out, level);
        }
        levels.push(level);
        if (concurrency >= settings.maxConcurrency || !searchContinues(levels, settings.budgetUs)) break;
      }
      results.push({ index, settings: candidate, levels, best: bestLevel(levels, settings.budgetUs), failure: undefined, seconds: (Date.now() - t0) / 1000 });
    }
  } catch (err) {
    failure = signal.aborted ? signal.reason : err;
  } finally {
    loop.close();
  }
  const restored = reloaded ? await restore(control, settings, out) : true;
  const seconds = (Date.now() - started) / 1000;
  const chosen = pickBest(results.map((r) => r.best?.inferencesPerSecond));
  out.write(`\n${tuneTable(results, results[chosen]?.index ?? -1, settings.budgetUs, settings.maxConcurrency)}`);
  out.write(`(best c: the level with the most throughput within the budget; p50/p99 there. ${seconds.toFixed(0)} s in all)\n`);
  if (failure !== undefined) {
    if (failure instanceof Interrupted) {
      process.exitCode = restored ? SIGNAL_EXIT[failure.signal] : 1;
      return;
    }
    process.stderr.write(`hotpath tune: the sweep stopped: ${message(failure)}\n`);
    process.exitCode = 1;
    return;
  }
  const best = results[chosen];
  if (best === undefined || best.best === undefined) {
    out.write(`\nno config met p99 ≤ ${settings.budgetUs / 1000} ms (even at concurrency 1); nothing written\n`);
  } else {
    const config = best.index === 0 ? original : applySettings(original, best.settings);
    const baseline = results[0]?.best?.inferencesPerSecond;
    const gain = baseline === undefined ? 'the current config met no level within the budget' : `${(((best.best.inferencesPerSecond / baseline) - 1) * 100).toFixed(1)}% vs the current config`;
    writeFileSync(settings.outputFile, toPbtxt(ModelConfigSchema, config, [
      `Written by hotpath tune for p99 <= ${settings.budgetUs / 1000} ms against ${settings.url} (${new Date().toISOString()}):`,
      `${best.best.inferencesPerSecond.toFixed(1)} inferences/s at concurrency ${best.best.concurrency}, p99 ${(best.best.p99Us / 1000).toFixed(3)} ms (${gain}).`,
    ]));
    out.write(`\nbest: ${best.index === 0 ? 'the current config' : `candidate ${best.index}`} (${settingsLabel(best.settings)}): ` +
      `${best.best.inferencesPerSecond.toFixed(1)} infer/s at concurrency ${best.best.concurrency}, p99 ${(best.best.p99Us / 1000).toFixed(3)} ms, ${gain}\n` +
      `written to ${settings.outputFile}\n`);
  }
  if (settings.plotFile !== undefined) writeFileSync(settings.plotFile, tunePlot(results, `hotpath tune: ${settings.model}, p99 budget ${settings.budgetUs / 1000} ms`, settings.budgetUs, settings.plotFile));
  if (settings.jsonFile !== undefined) {
    const { apiKey: _secret, shapes, ...rest } = settings;
    writeFileSync(settings.jsonFile, `${JSON.stringify({
      settings: { ...rest, shapes: Object.fromEntries(shapes) },
      seconds,
      chosen: best?.best === undefined ? null : best.index,
      candidates: results,
    }, null, 2)}\n`);
  }
  process.exitCode = restored ? 0 : 1;
}

function writeLevel(out: NodeJS.WritableStream, level: LevelResult): void {
  out.write(`  c=${level.concurrency}: ${level.inferencesPerSecond.toFixed(1)} infer/s, p99 ${(level.p99Us / 1000).toFixed(3)} ms` +
    `${level.errors > 0 ? `, ${level.errors} error(s)` : ''}${level.stable ? '' : ' (unstable)'}\n`);
}

/** Loads the candidate; a refusal (or a server that ignored the override) is returned as text, the sweep goes on. */
async function loadCandidate(control: ControlClient, settings: TuneSettings, original: ModelConfig, candidate: BatchingSettings): Promise<string | undefined> {
  try {
    await control.load(settings.model, applySettings(original, candidate), settings.loadTimeoutMs);
    const loaded = settingsOf(await control.config(settings.model, ''));
    if (loaded.maxBatchSize !== candidate.maxBatchSize || loaded.maxQueueDelayUs !== candidate.maxQueueDelayUs || loaded.instanceCount !== candidate.instanceCount) {
      return `the server did not apply the override (it reports ${settingsLabel(loaded)})`;
    }
    return undefined;
  } catch (err) {
    return message(err);
  }
}

/** Loads the model without an override: the server reads its config.pbtxt again. */
async function restore(control: ControlClient, settings: TuneSettings, out: NodeJS.WritableStream): Promise<boolean> {
  try {
    await control.load(settings.model, undefined, settings.loadTimeoutMs);
    out.write(`restored: model '${settings.model}' loaded again with its own config\n`);
    return true;
  } catch (err) {
    process.stderr.write(`hotpath tune: could not restore model '${settings.model}'s own config (load without override failed: ${message(err)}); load it by hand\n`);
    return false;
  }
}

function usage(text: string): void {
  process.stderr.write(`hotpath tune: ${text}\n`);
  process.exitCode = 2;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
