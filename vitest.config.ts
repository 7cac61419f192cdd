import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
//   warm-up, timers), so three overlap well on 2 cores. The group is two
//   projects that share those three workers: "unit" (test/unit, but for
//   ISOLATED_UNIT) and "suite" (the native and e2e files, and ISOLATED_UNIT).
//   - "unit" runs without isolation (`isolate: false`): a worker process runs
//     one unit file after another and keeps the modules it imported (the
//     sources, grpc-js, onnxruntime-node, the addon) instead of a fresh
//     process importing them again for every file. Measured on the 91 unit
//     files (loaded 2-core machine): 108 CPU-s isolated, 34 CPU-s not, with the
//     same 812 tests passing; the whole CI runs them twice (Node 20 and 24).
//     The price: a unit file must leave nothing behind that another file could
//     see: fake timers are put back (`vi.useRealTimers()` in an afterEach),
//     globals and process.env are not changed, and modules are not mocked
//     (`vi.mock` would leak into the next file of the same worker). A unit
//     file that reads a process-wide figure (RSS) needs a process of its own:
//     it goes in ISOLATED_UNIT and runs in "suite".
//   - "suite" keeps a fresh process per file: the native files load the addon
//     and check its per-environment clean-up in that process, and the e2e files
//     start and stop servers around module-level state.
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

/** The first group's worker count: its two projects must agree on it (vitest refuses otherwise). */
const SUITE_WORKERS = Number(process.env.HOTPATH_TEST_WORKERS) || 3;

/**
 * Unit files that need a fresh process: session-footprint asserts the RSS
 * growth of an allocation, which a process that already grew and freed its
 * heap for earlier files does not show (seen failing in a shuffled shared run).
 */
const ISOLATED_UNIT = ['test/unit/session-footprint.test.ts'];

/** Every other unit file, listed when the config loads, so a new one joins "unit" by itself. */
const SHARED_UNIT = readdirSync(fileURLToPath(new URL('./test/unit', import.meta.url)), { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.test.ts'))
  .map((name) => `test/unit/${name.split(path.sep).join('/')}`)
  .filter((file) => !ISOLATED_UNIT.includes(file))
  .sort();

export default defineConfig({
  test: {
    sequence: { sequencer: StartFirstSequencer },
    projects: [
      {
        test: {
          ...shared,
          name: 'unit',
          include: SHARED_UNIT,
          isolate: false,
          maxWorkers: SUITE_WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...SHARED_UNIT, ...TIMING_E2E, ...leftOut],
          maxWorkers: SUITE_WORKERS,
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
