// Media benchmark: how many carrier-A media streams one server process echoes with
// p99 < 5 ms. The server (media-server.ts) runs the real service with the echo engine
// and bench-only bindings, so this measures the media path without call setup. This
// process is the carrier: N websockets, one 160-byte μ-law frame per stream every
// 20 ms from one shared timer, each frame tagged with its chunk number in its first
// payload bytes so its echo can be timed. N ramps until p99 passes 5 ms or frames are
// lost; server CPU comes from /proc/<pid>/stat (utime + stime) around each step. Each
// step is repeated against a bare uWS echo socket on the same server (no codec, no
// session) as the floor this machine allows, and reports the machine's CPU steal.
// BENCH_SERVER_ARGS passes node flags to the server (e.g. `--cpu-prof --trace-gc`).
// Then the probe of issue 11: 2,000 websockets that never send a token, against the
// default limits (closed 5 s after the upgrade, at most 500 waiting, the rest refused
// with 503), timed until the last is closed, while the streams above stay open.
import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { serverExecArgv } from './server-flags.ts';

export interface MediaBenchOptions {
  /** Seconds of streaming per step. */
  seconds: number;
  /** Stream counts to try, in order. */
  steps: number[];
  /** A step passes when its echo p99 is under this and it lost no frame. */
  p99LimitMs: number;
  /** Silent sockets to open after the ramp (0: none). */
  unclaimedProbe: number;
}

interface Measure {
  sent: number;
  p50: number;
  p99: number;
  max: number;
  lost: number;
  serverCpu: number;
  clientCpu: number;
  /** Share of the machine's CPU time spent busy (every process, kernel included), %. */
  busy: number;
  /** Share of the machine's CPU time the hypervisor gave to someone else, %. */
  steal: number;
}

const FRAME_MS = 20;
/** The shared timer ticks this often; streams are spread over FRAME_MS / TICK_MS phases, as real calls are. */
const TICK_MS = 1;
const PHASES = FRAME_MS / TICK_MS;
const RING = 1024; // send times kept per stream, by chunk: 20 s of frames
const DRAIN_MS = 500;
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64_VALUE[B64.charCodeAt(i)] = i;
const PAYLOAD_KEY = Buffer.from('"payload":"');

/** The 157 payload bytes after the 3-byte tag, as base64: 3 divides the split, so tag + REST is the base64 of all 160. */
const REST = Buffer.alloc(157, 0xff).toString('base64');

function clockTicksPerSecond(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** utime + stime of a process, in clock ticks (fields 14 and 15 of /proc/<pid>/stat). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** [busy, steal, total] ticks of the whole machine, from the first line of /proc/stat. */
function machineTicks(): [number, number, number] {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  const steal = f[7] ?? 0;
  return [total - idle - steal, steal, total];
}

const quantile = (sorted: Float64Array, q: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN);

class Stream {
  readonly sentAt = new Float64Array(RING);
  chunk = 0;
  private readonly head: string;

  constructor(
    readonly ws: WebSocket,
    sid: string,
    private readonly onEcho: (latencyMs: number) => void,
  ) {
    this.head = `","streamSid":"${sid}","media":{"track":"inbound","chunk":"`;
    ws.on('message', (data: Buffer) => this.received(data));
  }

  sendFrame(): void {
    const c = ++this.chunk;
    const tag = B64[(c >> 18) & 63]! + B64[(c >> 12) & 63]! + B64[(c >> 6) & 63]! + B64[c & 63]!;
    this.sentAt[c & (RING - 1)] = performance.now();
    this.ws.send(`{"event":"media","sequenceNumber":"${c + 1}${this.head}${c}","timestamp":"${c * FRAME_MS}","payload":"${tag}${REST}"}}`);
  }

  /** Reads the tag from the echo without parsing it: the first 4 base64 characters of the payload. */
  private received(data: Buffer): void {
    const at = data.indexOf(PAYLOAD_KEY, 16);
    if (at < 0 || data.length < at + PAYLOAD_KEY.length + 4) return;
    const o = at + PAYLOAD_KEY.length;
    const c = (B64_VALUE[data[o]!]! << 18) | (B64_VALUE[data[o + 1]!]! << 12) | (B64_VALUE[data[o + 2]!]! << 6) | B64_VALUE[data[o + 3]!]!;
    this.onEcho(performance.now() - this.sentAt[c & (RING - 1)]!);
  }
}

/** A zero masking key is legal and lets `ws` skip masking every frame: the client's CPU goes to the load, not to XOR. */
const zeroMask = (mask: Buffer): void => {
  mask.fill(0);
};

async function openStream(url: string, index: number, onEcho: (ms: number) => void): Promise<Stream> {
  const ws = new WebSocket(url, { perMessageDeflate: false, generateMask: zeroMask });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const sid = `MZ${String(index).padStart(32, '0')}`;
  const stream = new Stream(ws, sid, onEcho);
  ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
  ws.send(
    JSON.stringify({
      event: 'start',
      sequenceNumber: '1',
      streamSid: sid,
      start: {
        accountSid: 'AC00000000000000000000000000000000',
        streamSid: sid,
        callSid: `CA${String(index).padStart(32, '0')}`,
        tracks: ['inbound'],
        customParameters: { token: `bench-${index}` },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    }),
  );
  return stream;
}

/** Streams `seconds` of audio on every stream from one timer; resolves with the frames sent once the last is sent. */
function stream(streams: Stream[], seconds: number): Promise<number> {
  const framesPerStream = (seconds * 1000) / FRAME_MS;
  const groups: Stream[][] = Array.from({ length: PHASES }, () => []);
  streams.forEach((s, i) => groups[i % PHASES]!.push(s));
  const groupSent = new Array<number>(PHASES).fill(0);
  const t0 = performance.now();
  let sent = 0;
  return new Promise((resolve) => {
    const tick = (): void => {
      const elapsed = performance.now() - t0;
      let done = true;
      for (let g = 0; g < PHASES; g++) {
        // Frames due by now for phase g, counted from t0 so timer lateness never drifts the rate.
        const due = Math.min(framesPerStream, Math.floor((elapsed - g * TICK_MS) / FRAME_MS) + 1);
        const group = groups[g]!;
        while (groupSent[g]! < due) {
          for (let i = 0; i < group.length; i++) group[i]!.sendFrame();
          sent += group.length;
          groupSent[g]!++;
        }
        if (groupSent[g]! < framesPerStream) done = false;
      }
      if (done) resolve(sent);
      else setTimeout(tick, Math.max(0, TICK_MS - ((performance.now() - t0) % TICK_MS)));
    };
    tick();
  });
}

/** A pool of streams to one URL, grown on demand, with the latencies of the current measurement. */
class Pool {
  readonly streams: Stream[] = [];
  private latencies = new Float64Array(0);
  private received = 0;
  private readonly onEcho = (ms: number): void => {
    if (this.received < this.latencies.length) this.latencies[this.received] = ms;
    this.received++;
  };

  constructor(
    private readonly url: string,
    private readonly serverPid: number,
    private readonly hz: number,
  ) {}

  async grow(n: number): Promise<void> {
    while (this.streams.length < n) {
      const batch: Promise<Stream>[] = [];
      for (let i = this.streams.length; i < Math.min(n, this.streams.length + 50); i++) batch.push(openStream(this.url, i, this.onEcho));
      this.streams.push(...(await Promise.all(batch)));
    }
    await new Promise((r) => setTimeout(r, 200)); // let the start messages settle
  }

  async measure(seconds: number): Promise<Measure> {
    this.latencies = new Float64Array((this.streams.length * seconds * 1000) / FRAME_MS);
    this.received = 0;
    const cpu0 = cpuTicks(this.serverPid);
    const [busy0, steal0, total0] = machineTicks();
    const client0 = process.cpuUsage();
    const t0 = performance.now();
    const sent = await stream(this.streams, seconds);
    const wall = (performance.now() - t0) / 1000;
    const cpu1 = cpuTicks(this.serverPid);
    const [busy1, steal1, total1] = machineTicks();
    const client = process.cpuUsage(client0);
    await new Promise((r) => setTimeout(r, DRAIN_MS));
    const sorted = this.latencies.subarray(0, Math.min(this.received, this.latencies.length)).sort();
    return {
      sent,
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      max: sorted.length ? sorted[sorted.length - 1]! : NaN,
      lost: sent - this.received,
      serverCpu: ((cpu1 - cpu0) / this.hz / wall) * 100,
      clientCpu: ((client.user + client.system) / 1e6 / wall) * 100,
      busy: total1 > total0 ? ((busy1 - busy0) / (total1 - total0)) * 100 : 0,
      steal: total1 > total0 ? ((steal1 - steal0) / (total1 - total0)) * 100 : 0,
    };
  }

  close(): void {
    for (const s of this.streams) s.ws.terminate();
  }
}

interface ProbeResult {
  admitted: number;
  /** Upgrades answered with an HTTP status instead, by status. */
  refused: Map<number, number>;
  /** Admitted sockets closed by the server, by close code. */
  closes: Map<number, number>;
  /** Admitted sockets open at once, at most (seen from this side). */
  peakOpen: number;
  /** Longest time from an admitted socket's open to its close, ms. */
  maxLifeMs: number;
  /** From the first upgrade until every probe socket was refused or closed, ms. */
  totalMs: number;
}

/**
 * Opens `n` media sockets that never send anything, 200 handshakes at a time, and waits
 * for the server to get rid of every one: refused at the upgrade or closed after it.
 */
async function probeUnclaimed(url: string, n: number, giveUpMs: number): Promise<ProbeResult> {
  const refused = new Map<number, number>();
  const closes = new Map<number, number>();
  let open = 0;
  let peakOpen = 0;
  let admitted = 0;
  let maxLifeMs = 0;
  const sockets: WebSocket[] = [];
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      sockets.push(ws);
      let openedAt = 0;
      ws.once('unexpected-response', (req, res) => {
        refused.set(res.statusCode ?? 0, (refused.get(res.statusCode ?? 0) ?? 0) + 1);
        req.destroy();
        resolve();
      });
      ws.once('open', () => {
        openedAt = performance.now();
        admitted++;
        peakOpen = Math.max(peakOpen, ++open);
      });
      ws.once('close', (code) => {
        if (openedAt > 0) {
          open--;
          maxLifeMs = Math.max(maxLifeMs, performance.now() - openedAt);
          closes.set(code, (closes.get(code) ?? 0) + 1);
        }
        resolve();
      });
      ws.once('error', () => resolve());
    });
  const t0 = performance.now();
  const all: Promise<void>[] = [];
  for (let i = 0; i < n; i += 200) {
    const batch = Array.from({ length: Math.min(200, n - i) }, one);
    all.push(...batch);
    await Promise.race([Promise.all(batch), new Promise((r) => setTimeout(r, 100))]);
  }
  let giveUp: NodeJS.Timeout | undefined;
  const settled = await Promise.race([Promise.all(all).then(() => true), new Promise<false>((r) => (giveUp = setTimeout(() => r(false), giveUpMs)))]);
  clearTimeout(giveUp);
  const totalMs = settled ? performance.now() - t0 : Infinity;
  for (const ws of sockets) ws.terminate();
  return { admitted, refused, closes, peakOpen, maxLifeMs, totalMs };
}

const tally = (m: Map<number, number>): string => [...m].map(([k, v]) => `${v} × ${k}`).join(', ') || 'none';

const COLUMNS: [string, number][] = [
  ['streams', 8],
  ['p50 ms', 7],
  ['p99 ms', 7],
  ['max ms', 7],
  ['lost', 5],
  ['srv CPU%', 9],
  ['CPU%/call', 10],
  ['client CPU%', 12],
  ['machine busy%', 14],
  ['steal%', 7],
  ['| bare p50', 11],
  ['bare p99', 9],
  ['bare CPU%', 10],
];

export async function runMediaBench(o: MediaBenchOptions): Promise<void> {
  const child = fork(fileURLToPath(new URL('./media-server.ts', import.meta.url)), [], {
    execArgv: serverExecArgv(),
    env: { ...process.env, LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'warn' },
    stdio: ['ignore', process.env['BENCH_SERVER_ARGS'] ? 'inherit' : 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  const hz = clockTicksPerSecond();
  const media = new Pool(`ws://127.0.0.1:${port}/carrier/twilio/media`, child.pid!, hz);
  const bare = new Pool(`ws://127.0.0.1:${port}/bench/echo`, child.pid!, hz);
  const results: { n: number; m: Measure }[] = [];
  try {
    if (o.steps.length > 0) await ramp();
    if (o.unclaimedProbe > 0) {
      const n = o.unclaimedProbe;
      // Calls that must not notice: the ramp's streams, or 50 claimed ones without a ramp.
      if (media.streams.length === 0) await media.grow(50);
      const streams = media.streams.length;
      const p = await probeUnclaimed(`ws://127.0.0.1:${port}/carrier/twilio/media`, n, 60_000);
      const still = media.streams.filter((s) => s.ws.readyState === WebSocket.OPEN).length;
      console.log(
        `\nUnclaimed probe (${n} silent carrier-A sockets, default limits: closed 5 s after the upgrade, 500 waiting at most): ` +
          `${p.admitted} admitted, refused: ${tally(p.refused)}; closed by the server: ${tally(p.closes)}; peak open ${p.peakOpen}; ` +
          `longest open→close ${(p.maxLifeMs / 1000).toFixed(2)} s; all ${n} refused or closed ${Number.isFinite(p.totalMs) ? `${(p.totalMs / 1000).toFixed(2)} s` : 'NOT within 60 s'} after the first upgrade` +
          (streams > 0 ? `; claimed streams still open: ${still} of ${streams}` : ''),
      );
    }
  } finally {
    media.close();
    bare.close();
    child.send('stop');
    await new Promise((r) => child.once('exit', r));
  }

  async function ramp(): Promise<void> {
    // Warm-up: JIT and heap growth on both sides, both paths.
    await media.grow(50);
    await bare.grow(50);
    await media.measure(3);
    await bare.measure(1);

    console.log(`\nMedia (carrier A streams, echo engine, ${o.seconds}s per step, ${FRAME_MS} ms frames of 160 bytes each way; bare = uWS echo without codec or session; machine busy% is of all ${cpus().length} cores)`);
    console.log(COLUMNS.map(([h, w]) => h.padStart(w)).join(' '));
    for (const n of o.steps) {
      await media.grow(n);
      const m = await media.measure(o.seconds);
      await bare.grow(n);
      const b = await bare.measure(o.seconds);
      results.push({ n, m });
      const cells = [
        String(n),
        m.p50.toFixed(2),
        m.p99.toFixed(2),
        m.max.toFixed(1),
        String(m.lost),
        m.serverCpu.toFixed(0),
        (m.serverCpu / n).toFixed(3),
        m.clientCpu.toFixed(0),
        m.busy.toFixed(0),
        m.steal.toFixed(0),
        `| ${b.p50.toFixed(2)}`,
        b.p99.toFixed(2),
        b.serverCpu.toFixed(0),
      ];
      console.log(cells.map((c, i) => c.padStart(COLUMNS[i]![1])).join(' '));
      if (m.p99 >= o.p99LimitMs || m.lost > 0) break;
    }
    const best = results.filter((r) => r.m.p99 < o.p99LimitMs && r.m.lost === 0).at(-1);
    if (best) {
      const perCall = best.m.serverCpu / best.n;
      console.log(
        `\nlargest N with p99 < ${o.p99LimitMs} ms and no loss: ${best.n} streams; server CPU ${best.m.serverCpu.toFixed(0)}% of a core, ` +
          `${perCall.toFixed(3)}% of a core per call (≈ ${Math.floor(100 / perCall)} calls per core at that rate; goal 500)`,
      );
    } else {
      console.log(`\nno step met p99 < ${o.p99LimitMs} ms without loss`);
    }
  }
}
