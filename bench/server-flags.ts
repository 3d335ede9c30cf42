// The node flags a bench's service process runs with: the ones `npm start` gives the
// service (read from package.json's start script, so the benchmarks measure the service
// as it is deployed), then any from BENCH_SERVER_ARGS (--cpu-prof, --trace-gc…).
import { readFileSync } from 'node:fs';

/** The flags between `node` and the script in package.json's start script. */
export function startScriptFlags(packageJson = readFileSync(new URL('../package.json', import.meta.url), 'utf8')): string[] {
  const start = (JSON.parse(packageJson) as { scripts?: { start?: string } }).scripts?.start ?? '';
  const words = start.trim().split(/\s+/);
  if (words[0] !== 'node') throw new Error(`package.json's start script does not run node: ${start}`);
  const script = words.findIndex((w, i) => i > 0 && w.endsWith('.ts') && words[i - 1] !== '--import');
  return words.slice(1, script < 0 ? undefined : script);
}

export function serverExecArgv(): string[] {
  return [...startScriptFlags(), ...(process.env['BENCH_SERVER_ARGS']?.split(/\s+/).filter(Boolean) ?? [])];
}
