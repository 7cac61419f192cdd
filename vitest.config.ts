import { configDefaults, defineConfig } from 'vitest/config';

// e2e suites start real server processes; keep them in separate forks so a
// crash in one file cannot take down another, and give process start-up room.
//
// Two groups, one after the other:
// - "suite": most files, three at a time whatever the core count. vitest's
//   default on a 2-core machine is one file at a time (cores - 1), yet most of
//   an e2e file's wall time is spent waiting on a server process it started
//   (loading models, warm-up, timers), so three overlap well on 2 cores.
// - "timing": the e2e files whose assertions compare durations or resource
//   figures against limits (refusal times, RSS after bursts, drain and load
//   deadlines, slow connections, heap rise, queue delays, perf's client and
//   server counts over the same short windows). They run one at a
//   time after the rest, on a quiet machine, as they did before the split.
//
// `npm test` leaves out the packed-install e2e (npm pack + a production
// install + an addon build, minutes on 2 cores); `npm run test:full` sets
// HOTPATH_TEST_FULL=1 and runs it.
const TIMING_FILES = [
  'bounded-decoding',
  'connection-caps',
  'dynamic-batching',
  'graceful-drain',
  'grpc-admission-before-message',
  'http-budgets',
  'leak-patrol',
  'memory-trim',
  'model-time-limits',
  'perf',
  'stream-backpressure',
  'warmup-readiness',
].map((name) => `test/e2e/${name}.test.ts`);

const leftOut = process.env.HOTPATH_TEST_FULL === '1' ? [] : ['test/e2e/production-install.test.ts'];

const shared = { pool: 'forks', testTimeout: 60_000, hookTimeout: 120_000 } as const;

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...TIMING_FILES, ...leftOut],
          maxWorkers: Number(process.env.HOTPATH_TEST_WORKERS) || 3,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'timing',
          include: TIMING_FILES,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
