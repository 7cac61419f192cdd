/**
 * buildDoorCatalog (src/inference/door-catalog.ts): which READY versions the
 * front-door threads serve themselves, the reason each other one is
 * forwarded, what an entry carries, and which version a version-less request
 * gets. The versions are plain objects with the fields the builder reads
 * (a loaded ModelVersion needs worker pools); the batcher is a
 * VersionBatcher-shaped object, since batcherOf() recognises the class.
 */
import { create, fromBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { ModelConfigSchema } from '../../src/generated/model_config_pb.js';
import { buildDoorCatalog, type DoorCatalogSources } from '../../src/inference/door-catalog.js';
import { VersionBatcher } from '../../src/batching/version-batcher.js';
import { SharedGate } from '../../src/common/shared-gate.js';
import type { ModelVersion } from '../../src/repository/model-version.js';

interface FakeOptions {
  readonly model: string;
  readonly version?: number;
  readonly state?: string;
  readonly tenant?: string;
  readonly batcher?: boolean;
  readonly workerTarget?: boolean;
  readonly native?: { readonly active: boolean };
  readonly parameters?: Record<string, string>;
  readonly preserveOrdering?: boolean;
}

/** A READY onnxruntime version with a natively fed batcher unless told otherwise. */
function fakeVersion(options: FakeOptions): ModelVersion {
  const id = Math.floor(Math.random() * 1e9);
  const batcher = Object.assign(Object.create(VersionBatcher.prototype) as object, {
    share: () => ({ id, options: {}, outputNames: ['OUTPUT0'] }),
  });
  let gate: SharedGate | undefined;
  const label = String(options.version ?? 1);
  return {
    modelName: options.model,
    versionLabel: label,
    state: options.state ?? 'READY',
    tenant: options.tenant ?? 'default',
    config: create(ModelConfigSchema, {
      name: options.model,
      maxBatchSize: 8,
      parameters: Object.fromEntries(Object.entries(options.parameters ?? {}).map(([key, value]) => [key, { stringValue: value }])),
      ...(options.preserveOrdering ? { schedulingChoice: { case: 'dynamicBatching', value: { preserveOrdering: true } } } : {}),
    }),
    batcher: options.batcher === false ? undefined : batcher,
    workerTarget: options.workerTarget === false ? undefined : {},
    native: options.native === undefined ? undefined : { ...options.native, indexBounds: [{ input: 'ids', axisLength: 10 }] },
    doorGate: (doors: number) => (gate ??= SharedGate.create(doors)),
  } as unknown as ModelVersion;
}

function sources(versions: ModelVersion[], overrides: Partial<DoorCatalogSources> = {}): DoorCatalogSources {
  return {
    versions: () => versions,
    latest: (model) =>
      versions.filter((v) => v.modelName === model && v.state === 'READY').sort((a, b) => Number(b.versionLabel) - Number(a.versionLabel))[0],
    runOnly: () => true,
    routeNames: () => [],
    faultInjection: false,
    doors: 2,
    keepGate: () => {},
    shareStatistics: () => ({ buffer: new SharedArrayBuffer(8), shards: 3, batchSlots: 8, stride: 1 }),
    shareMetrics: () => undefined,
    ...overrides,
  };
}

describe('buildDoorCatalog', () => {
  it('lists a READY version on a natively fed batcher, with what a door thread needs', () => {
    const version = fakeVersion({ model: 'ctr' });
    const kept: SharedGate[] = [];
    const catalog = buildDoorCatalog(sources([version], { keepGate: (gate) => kept.push(gate) }), 7);
    expect(catalog.generation).toBe(7);
    expect(catalog.forwarded).toEqual([]);
    expect(catalog.versions).toHaveLength(1);
    const entry = catalog.versions[0]!;
    expect(entry).toMatchObject({ model: 'ctr', version: '1', tenant: 'default', native: undefined, metrics: undefined });
    expect(fromBinary(ModelConfigSchema, entry.config).name).toBe('ctr');
    // The version's own gate, sized for the door threads.
    expect(entry.gate).toBe(version.doorGate(2)!.buffer);
    expect(new SharedGate(entry.gate).doors).toBe(2);
    // The owner keeps the listed gate (to forget a dead door in it, even once the version leaves the lists).
    expect(kept).toEqual([version.doorGate(2)]);
    expect(catalog.latest).toEqual({ ctr: '1' });
  });

  it('names the reason of every version it does not list', () => {
    const versions = [
      fakeVersion({ model: 'bytes', batcher: false }),
      fakeVersion({ model: 'no_target', workerTarget: false }),
      fakeVersion({ model: 'on_cpu', native: { active: false } }),
      fakeVersion({ model: 'cached' }),
      fakeVersion({ model: 'routed' }),
      fakeVersion({ model: 'faulty', parameters: { hotpath_fault_delay_ms: '5' } }),
      fakeVersion({ model: 'ordered', preserveOrdering: true }),
      fakeVersion({ model: 'loading', state: 'LOADING' }),
    ];
    const catalog = buildDoorCatalog(
      sources(versions, {
        runOnly: (version) => version.modelName !== 'cached',
        routeNames: () => ['routed'],
        faultInjection: true,
      }),
      1,
    );
    expect(catalog.versions).toEqual([]);
    expect(catalog.latest).toEqual({});
    expect(Object.fromEntries(catalog.forwarded.map((entry) => [entry.model, entry.reason]))).toEqual({
      bytes: 'it has no batcher (BYTES tensors, or no native worker target)',
      no_target: 'its batches run through the main thread (no native worker target)',
      on_cpu: 'it runs on onnxruntime on CPU after a device fault: its batches run through the main thread',
      cached: 'its path has a response cache, drift or archive step',
      routed: 'a route has its name',
      faulty: 'its config asks for test-only faults (hotpath_fault_* parameters)',
      ordered: 'it preserves ordering (dynamic_batching.preserve_ordering)',
    });
  });

  it('lists a native-executor version while it runs there, with its embedding-id bounds; fault injection alone forwards nothing', () => {
    const catalog = buildDoorCatalog(sources([fakeVersion({ model: 'deep', native: { active: true } })], { faultInjection: true }), 1);
    expect(catalog.versions.map((entry) => entry.native)).toEqual([{ indexBounds: [{ input: 'ids', axisLength: 10 }] }]);
  });

  it('gives a version-less request the newest version only when that one is listed', () => {
    const older = fakeVersion({ model: 'm', version: 1 });
    const newer = fakeVersion({ model: 'm', version: 2, workerTarget: false });
    const catalog = buildDoorCatalog(sources([older, newer]), 1);
    expect(catalog.versions.map((entry) => entry.version)).toEqual(['1']);
    // Version 2 is the one a version-less request gets, and the main thread serves it.
    expect(catalog.latest).toEqual({});
    const both = buildDoorCatalog(sources([older, fakeVersion({ model: 'm', version: 2 })]), 2);
    expect(both.latest).toEqual({ m: '2' });
  });
});
