import { defineConfig } from 'vitest/config';

// Each test file starts its own real server process(es); forks keep native modules out of worker threads.
export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    include: ['test/**/*.test.ts'],
  },
});
