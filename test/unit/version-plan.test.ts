/**
 * A version's request path as its plan composes it (src/inference/version-plan.ts):
 * which steps a configuration puts in front of the run, and what each does,
 * table-driven over the configurations. The run step is a counting stand-in
 * (the real run needs a loaded model; e2e tests cover it); everything the
 * plan composes around it is real: the response cache, statistics, and the
 * archive and drift taps' calling conventions.
 */
import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import {
  InferParameterSchema,
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
} from '../../src/generated/grpc_service_pb.js';
import { DataType, ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import { archiveEntry, composePlan, type VersionCall, type VersionStep } from '../../src/inference/version-plan.js';
import { markRouteAnswer } from '../../src/inference/routing/route-answers.js';
import { ResponseCache } from '../../src/datachecks/cache/response-cache.js';
import { InferenceStatistics } from '../../src/repository/inference-statistics.js';
import { signatureFromConfig } from '../../src/tensor/model-signature.js';
import { invalidArgument } from '../../src/common/serving-error.js';
import { OPEN_CALLER } from '../../src/security/caller.js';
import type { ArchiveEntry } from '../../src/datachecks/archive/payload-archive.js';

function versionWith(options: { cached?: boolean; parameters?: Record<string, string> }) {
  const config = create(ModelConfigSchema, {
    name: 'ctr',
    maxBatchSize: 8,
    input: [{ name: 'features', dataType: DataType.TYPE_FP32, dims: [4n] }],
    output: [{ name: 'score', dataType: DataType.TYPE_FP32, dims: [1n] }],
    responseCache: options.cached === true ? { enable: true } : undefined,
    parameters: Object.fromEntries(Object.entries(options.parameters ?? {}).map(([key, value]) => [key, { stringValue: value }])),
  });
  return { modelName: 'ctr', versionLabel: '1', tenant: 'default', config, signature: signatureFromConfig(config), statistics: new InferenceStatistics() };
}

/** A run that answers the request's id with a fresh response, or fails when asked to. */
function countingRun(fail = false): { step: VersionStep; runs: () => number } {
  let runs = 0;
  return {
    runs: () => runs,
    step: async (call) => {
      runs += 1;
      if (fail) throw invalidArgument('input \'features\': expected shape [-1,4], got [1,5]');
      return create(ModelInferResponseSchema, { modelName: 'ctr', modelVersion: '1', id: call.request.id, rawOutputContents: [new Uint8Array([1, 2, 3, 4])] });
    },
  };
}

const request = (id: string, fault?: string): ModelInferRequest =>
  create(ModelInferRequestSchema, {
    id,
    modelName: 'ctr',
    inputs: [{ name: 'features', datatype: 'FP32', shape: [1n, 4n] }],
    rawInputContents: [new Uint8Array(16)],
    parameters: fault === undefined ? {} : { hotpath_fault: create(InferParameterSchema, { parameterChoice: { case: 'stringParam', value: fault } }) },
  });

const call = (r: ModelInferRequest): VersionCall => ({
  request: r,
  context: { requestId: r.id, traceId: undefined, caller: OPEN_CALLER },
  method: 'ModelInfer',
  elapsedNs: () => 1000,
});

const cache = () => new ResponseCache<Uint8Array>({ sizeBytes: 1 << 20 });

describe('the cache step', () => {
  const cases: { name: string; cached: boolean; cacheOn: boolean; parameters: Record<string, string>; fault: string | undefined; runs: number }[] = [
    { name: 'opted in, cache on', cached: true, cacheOn: true, parameters: {}, fault: undefined, runs: 1 },
    { name: 'opted in, no cache (--cache-config absent)', cached: true, cacheOn: false, parameters: {}, fault: undefined, runs: 2 },
    { name: 'not opted in', cached: false, cacheOn: true, parameters: {}, fault: undefined, runs: 2 },
    { name: 'a fault parameter in the config', cached: true, cacheOn: true, parameters: { hotpath_fault_delay_ms: '1' }, fault: undefined, runs: 2 },
    { name: 'a fault parameter in the request', cached: true, cacheOn: true, parameters: {}, fault: 'delay:1', runs: 2 },
  ];
  it.each(cases)('$name: two identical requests run $runs time(s)', async ({ cached, cacheOn, parameters, fault, runs }) => {
    const run = countingRun();
    const plan = composePlan(versionWith({ cached, parameters }), run.step, { responseCache: cacheOn ? cache() : undefined });
    const first = await plan.serve(call(request('a', fault)));
    const second = await plan.serve(call(request('b', fault)));
    expect(run.runs()).toBe(runs);
    expect([first.id, second.id]).toEqual(['a', 'b']);
    expect(second.rawOutputContents).toEqual(first.rawOutputContents);
  });

  it('keeps its own copy: changing or route-marking an answer never reaches the next hit', async () => {
    const run = countingRun();
    const plan = composePlan(versionWith({ cached: true }), run.step, { responseCache: cache() });
    const miss = await plan.serve(call(request('a')));
    miss.modelName = 'changed';
    miss.rawOutputContents[0]![0] = 99;
    const routed = markRouteAnswer(await plan.serve(call(request('b'))), 'scorer', 'stable', false);
    expect([routed.modelName, routed.parameters['hotpath_arm']?.parameterChoice.value]).toEqual(['scorer', 'stable']);
    const hit = await plan.serve(call(request('c')));
    expect(hit.modelName).toBe('ctr');
    expect(hit.parameters).toEqual({});
    expect(Array.from(hit.rawOutputContents[0]!)).toEqual([1, 2, 3, 4]);
    expect(run.runs()).toBe(1);
  });

  it('a shadow copy always runs', async () => {
    const run = countingRun();
    const plan = composePlan(versionWith({ cached: true }), run.step, { responseCache: cache() });
    await plan.serve(call(request('a')));
    await plan.shadow(call(request('b')));
    expect(run.runs()).toBe(2);
  });
});

describe('the drift and archive taps', () => {
  it('are absent when not configured for the version: the run is the whole path', () => {
    const run = countingRun();
    const plan = composePlan(versionWith({}), run.step, {
      drift: { tapFor: () => undefined },
      archive: { record: () => expect.unreachable('archived at rate 0'), rateFor: () => 0 },
    });
    expect(plan.serve).toBe(run.step);
  });

  it('drift sees successes only; the archive sees every outcome with its status', async () => {
    const drifted: ModelInferResponse[] = [];
    const archived: ArchiveEntry[] = [];
    const settings = {
      drift: { tapFor: () => (_request: ModelInferRequest, response: ModelInferResponse) => void drifted.push(response) },
      archive: { record: (entry: ArchiveEntry) => void archived.push(entry), rateFor: () => 1 },
    };
    const ok = composePlan(versionWith({}), countingRun().step, settings);
    await ok.serve(call(request('good')));
    const failing = composePlan(versionWith({}), countingRun(true).step, settings);
    await expect(failing.serve(call(request('bad')))).rejects.toThrow(/input 'features': expected shape/);
    expect(drifted.map((r) => r.id)).toEqual(['good']);
    expect(archived.map((e) => [e.requestId, e.statusCode, e.statusMessage ?? ''])).toEqual([
      ['good', 0, ''],
      ['bad', 3, "input 'features': expected shape [-1,4], got [1,5]"],
    ]);
    expect(archived[0]).toMatchObject({ model: 'ctr', version: '1', latencyNs: 1000 });
  });

  it('the shadow path has neither', async () => {
    let taps = 0;
    const plan = composePlan(versionWith({}), countingRun().step, {
      drift: { tapFor: () => () => void (taps += 1) },
      archive: { record: () => void (taps += 1), rateFor: () => 1 },
    });
    await plan.shadow(call(request('s')));
    expect(taps).toBe(0);
  });
});

describe('archiveEntry', () => {
  it('names the resolved version, or the request\'s model and version when none was resolved (a refusal before the plan)', () => {
    const r = create(ModelInferRequestSchema, { id: 'x', modelName: 'nope', modelVersion: '7' });
    expect(archiveEntry(call(r), undefined, 5, undefined, "model 'nope' is not found")).toMatchObject({
      model: 'nope', version: '7', statusCode: 5, statusMessage: "model 'nope' is not found", requestId: 'x', latencyNs: 1000, modelParameters: undefined,
    });
    const version = versionWith({ parameters: { hotpath_archive_sample_rate: '0.5' } });
    expect(archiveEntry(call(r), version, 0)).toMatchObject({ model: 'ctr', version: '1', statusCode: 0, modelParameters: version.config.parameters });
  });
});
