// The runtime as a child process for test/runtime/second-kind.test.ts: the service's
// call system (the generic supervisor with the real call kind, the durable scheduler)
// on a real SQLite file, with the test's `ticker` kind on the same supervisor
// (second-kind-runtime.ts). SIGKILLed and restarted by the test.
//
//   node --import tsx test/runtime/second-kind-process.ts <dataDir> <offsetMs> <first|restart> [target] [intervalMs] [noteDelayMs]
//
// The clock is Date.now() + offsetMs (a restart may leap it forward: a longer
// downtime); a line `leap <ms>` on stdin moves it further at run time. `first` creates
// the account, a queued call (limit 0: it never dials) and a ticker, and STARTs the
// ticker; `restart` restores whatever is unfinished. Then the scheduler is started, as
// server.ts does. Lines on stdout are JSON: {ready,…} once, {leapt,…} per leap.
// SECOND_KIND_NO_POKE=1 leaves storage unwrapped (see second-kind-runtime.ts).
import pino from 'pino';
import { createTickerRuntime } from './second-kind-runtime.ts';

const [dataDir, offsetArg, mode, targetArg = '40', intervalArg = '50', noteDelayArg = '15'] = process.argv.slice(2);
if (!dataDir || offsetArg === undefined || (mode !== 'first' && mode !== 'restart')) {
  process.stderr.write('usage: second-kind-process.ts <dataDir> <offsetMs> <first|restart> [target] [intervalMs] [noteDelayMs]\n');
  process.exit(2);
}
let offset = Number(offsetArg);
const clock = (): number => Date.now() + offset;
/** The clock when this process began, before anything was restored. */
const booted = clock();
const out = (o: Record<string, unknown>): void => void process.stdout.write(JSON.stringify(o) + '\n');

const rt = createTickerRuntime({
  dataDir,
  clock,
  log: pino({ level: 'warn' }, pino.destination(2)),
  noteDelayMs: Number(noteDelayArg),
});
const { system } = rt;

let restored: unknown = null;
if (mode === 'first') rt.seed({ target: Number(targetArg), intervalMs: Number(intervalArg) });
else restored = await system.restore();
// As server.ts: actors are back before the scheduler is armed.
system.scheduler.start();
out({ ready: true, mode, offset, booted, clock: clock(), restored, live: system.supervisor.list().map((a) => ({ id: a.id, kind: a.kind })) });

let input = '';
process.stdin.on('data', (d) => {
  input += String(d);
  let nl: number;
  while ((nl = input.indexOf('\n')) >= 0) {
    const line = input.slice(0, nl).trim();
    input = input.slice(nl + 1);
    const m = /^leap (\d+)$/.exec(line);
    if (m) {
      offset += Number(m[1]);
      system.scheduler.poke();
      out({ leapt: true, offset, clock: clock() });
    }
  }
});
// The runtime's timers are unref'd: this process lives until the test kills it.
setInterval(() => {}, 1 << 30);
