// What route handlers may use. Built once in server.ts; tests build the same thing
// through the real server, never a stand-in.
import type { Config } from '../config.ts';
import type { Storage } from '../storage/index.ts';
import type { Metrics } from './metrics.ts';
import type { CallSystem } from '../actors/system.ts';

export interface AppDeps {
  config: Config;
  storage: Storage;
  metrics: Metrics;
  clock: () => number;
  /** The call supervisor: live call actors, concurrency slots, deadlines. */
  calls: CallSystem;
  /** True once storage is open and every unfinished actor is restored. */
  isReady: () => boolean;
}
