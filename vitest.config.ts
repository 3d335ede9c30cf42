import { defineConfig } from 'vitest/config';

// Tests start real servers on random loopback ports and real SQLite files in temp
// folders; forks keep native addons (uWS, better-sqlite3) in separate processes.
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'data/**'],
    pool: 'forks',
    // The end-to-end files spend most of their time waiting on real calls in real time
    // (20 ms media frames, the carriers' and providers' simulated latencies), not on the
    // CPU: three files at once on two cores keep the suite inside CI's budget.
    maxWorkers: 3,
    minWorkers: 1,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
