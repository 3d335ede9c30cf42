import { defineConfig } from 'vitest/config';

// Tests start real servers on random loopback ports and real SQLite files in temp
// folders; forks keep native addons (uWS, better-sqlite3) in separate processes.
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'data/**'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
