/**
 * The leak patrol's branch for versions on the native executor: it reads the
 * bytes the executor holds in its ledger, takes the first sample as the
 * baseline, and marks the version degraded (it cannot swap an executor like
 * a pool) once they grow past the leak threshold. The versions here are
 * stand-ins carrying only what the patrol reads: the patrol is under test.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { LeakPatrol } from '../../src/patrol/leak-patrol.js';
import type { ModelVersion } from '../../src/repository/model-version.js';

const MiB = 1024 * 1024;

function nativeVersion(bytes: () => number) {
  const degraded: string[] = [];
  const version = {
    modelName: 'ctr_native',
    versionLabel: '1',
    tenant: 'ads',
    state: 'READY',
    isRestarting: false,
    get degraded() {
      return degraded.length > 0;
    },
    native: { active: true },
    memory: { executorBytes: bytes },
    markDegraded: (reason: string) => degraded.push(reason),
    workerStats: () => Promise.reject(new Error('a native version has no workers to ask')),
  };
  return { version: version as unknown as ModelVersion, degraded };
}

function patrolOf(versions: readonly ModelVersion[]): LeakPatrol {
  return new LeakPatrol({
    intervalMs: 1000,
    leakThresholdBytes: 8 * MiB,
    growthBytesPerSecond: MiB,
    window: 3,
    maxRestarts: 3,
    versions: () => versions,
    tenantAllocatedBytes: () => 0,
    deviceMemory: () => undefined,
    onRestart: () => {
      throw new Error('a native version is never restarted');
    },
    logger: pino({ level: 'silent' }),
  });
}

describe('leak patrol on native executor versions', () => {
  it('marks the version degraded once its executor bytes grow past the threshold over the first sample', async () => {
    let bytes = 20 * MiB;
    const { version, degraded } = nativeVersion(() => bytes);
    const patrol = patrolOf([version]);
    await patrol.sampleAll(); // baseline
    bytes += 4 * MiB; // under the 8 MiB threshold
    await patrol.sampleAll();
    expect(degraded).toEqual([]);
    bytes += 5 * MiB; // 9 MiB over the baseline
    await patrol.sampleAll();
    expect(degraded).toEqual([`degraded: the native executor's ledger bytes grew from ${20 * MiB} to ${29 * MiB}`]);
  });

  it('leaves a steady executor alone', async () => {
    const { version, degraded } = nativeVersion(() => 20 * MiB);
    const patrol = patrolOf([version]);
    for (let i = 0; i < 5; i++) await patrol.sampleAll();
    expect(degraded).toEqual([]);
  });
});
