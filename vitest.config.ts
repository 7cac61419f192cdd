import { defineConfig } from 'vitest/config';

// e2e suites start real server processes; keep them in separate forks so a
// crash in one file cannot take down another, and give process start-up room.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
