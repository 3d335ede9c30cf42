import { describe, expect, it } from 'vitest';
import { serverExecArgv, startScriptFlags } from './server-flags.ts';

describe('bench server flags', () => {
  it('are the flags npm start gives the service', () => {
    expect(startScriptFlags()).toEqual(['--single-threaded-gc', '--import', 'tsx']);
    expect(startScriptFlags(JSON.stringify({ scripts: { start: 'node --import tsx --max-semi-space-size=32 server.ts --port 1' } }))).toEqual(['--import', 'tsx', '--max-semi-space-size=32']);
    // A module given to --import is a flag's value, not the script.
    expect(startScriptFlags(JSON.stringify({ scripts: { start: 'node --import ./register.ts server.ts' } }))).toEqual(['--import', './register.ts']);
    expect(() => startScriptFlags(JSON.stringify({ scripts: { start: 'tsx server.ts' } }))).toThrow(/does not run node/);
  });

  it('then BENCH_SERVER_ARGS', () => {
    const before = process.env['BENCH_SERVER_ARGS'];
    process.env['BENCH_SERVER_ARGS'] = ' --cpu-prof  --trace-gc ';
    try {
      expect(serverExecArgv()).toEqual([...startScriptFlags(), '--cpu-prof', '--trace-gc']);
    } finally {
      if (before === undefined) delete process.env['BENCH_SERVER_ARGS'];
      else process.env['BENCH_SERVER_ARGS'] = before;
    }
  });
});
