import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

// e2e suites start real server processes; keep them in separate forks so a
// crash in one file cannot take down another, and give process start-up room.
//
// Two sets:
// - `npm test`: the unit, native and layering tests, and the e2e files that
//   cover the protocol, the doors, models and the request path quickly.
// - `npm run test:full` (HOTPATH_TEST_FULL=1; CI runs it) adds SLOW_E2E: the
//   files that hold servers under floods, bursts, slow clients or time limits
//   for tens of seconds, the packed production install, and the longer
//   operational suites (faults, control, drift, archive, TLS, routes, perf).
//
// And two groups, one after the other:
// - "suite": three files at a time whatever the core count. vitest's default
//   on a 2-core machine is one (cores - 1), yet most of an e2e file's wall
//   time is spent waiting on a server process it started (model loads,
//   warm-up, timers), so three overlap well on 2 cores.
// - "timing": the e2e files whose assertions compare durations or resource
//   figures against limits (refusal times, RSS after bursts, drain and load
//   deadlines, slow connections, heap rise, queue delays, hotpath perf's and
//   hotpath tune's client vs server counts over short windows). They run one
//   at a time after the rest, as on a quiet machine.
const e2e = (names: readonly string[]) => names.map((name) => `test/e2e/${name}.test.ts`);

/** Timing files quick enough for `npm test`. */
const QUICK_TIMING_E2E = e2e(['dynamic-batching', 'graceful-drain', 'warmup-readiness']);

/** Timing files that run only in test:full. */
const SLOW_TIMING_E2E = e2e([
  'bounded-decoding',
  'connection-caps',
  'grpc-admission-before-message',
  'grpc-body-idle',
  'http-budgets',
  'leak-patrol',
  'memory-trim',
  'model-time-limits',
  'perf',
  'stream-backpressure',
  'tune',
]);

const TIMING_E2E = [...QUICK_TIMING_E2E, ...SLOW_TIMING_E2E];

const SLOW_E2E = [
  ...SLOW_TIMING_E2E,
  ...e2e([
    'archive-replay',
    'docker-healthcheck',
    'drift',
    // Two door threads, four-plus connections, a model unload and reload, and a drain: about 20 s here.
    'front-door-threads',
    'model-control',
    'model-faults',
    'production-install',
    'registry-hygiene',
    'routes',
    'tenant-limits',
    'tls',
    'triton-command-line',
  ]),
];

const leftOut = process.env.HOTPATH_TEST_FULL === '1' ? [] : SLOW_E2E;

/**
 * Files started before any other in their group: the packed production install
 * builds the addon from scratch (minutes of compiling) while it mostly waits,
 * so it must overlap the other files rather than run alone at the end. vitest
 * orders longest-first from its results cache, but a clean clone (CI) has no
 * cache and would start it wherever the file order puts it.
 */
const START_FIRST = new Set(e2e(['production-install']));

class StartFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (spec: TestSpecification) => START_FIRST.has(path.relative(spec.project.config.root, spec.moduleId));
    // Stable within each group (groupOrder stays the primary key: the timing files still run last).
    return [...sorted].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      return group !== 0 ? group : Number(first(b)) - Number(first(a));
    });
  }
}

const shared = { pool: 'forks', testTimeout: 60_000, hookTimeout: 120_000 } as const;

export default defineConfig({
  test: {
    sequence: { sequencer: StartFirstSequencer },
    projects: [
      {
        test: {
          ...shared,
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...TIMING_E2E, ...leftOut],
          maxWorkers: Number(process.env.HOTPATH_TEST_WORKERS) || 3,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'timing',
          include: TIMING_E2E,
          exclude: leftOut,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
