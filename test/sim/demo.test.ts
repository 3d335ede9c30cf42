// `npm run demo` as a newcomer runs it (test/sim/demo.ts, a child process on free ports
// and a fresh data directory): the simulated conversation's transcript, its analysis and
// the signed call.completed are printed, labelled as a simulation, the signature checks
// out with the account's secret, the service stays up until SIGINT; and a port that is
// taken stops it before anything starts, with a message naming the port.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FREE_PORTS = {
  DEMO_PORT: '0',
  DEMO_WEBHOOK_PORT: '0',
  SIM_TWILIO_PORT: '0',
  SIM_TELNYX_PORT: '0',
  SIM_CONTROL_PORT: '0',
  SIM_LLM_PORT: '0',
  SIM_DEEPGRAM_PORT: '0',
  SIM_TTS_PORT: '0',
  SIM_CARTESIA_PORT: '0',
};

const dataDir = mkdtempSync(join(tmpdir(), 'demo-test-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

function runDemo(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/sim/demo.ts'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => (out.stdout += String(d)));
  child.stderr!.on('data', (d) => (out.stderr += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out, exited };
}

it('holds a simulated call, prints its transcript, analysis and verified call.completed, then serves until SIGINT', { timeout: 150_000 }, async () => {
  const demo = runDemo({ ...FREE_PORTS, DEMO_DATA_DIR: dataDir });
  // About 30 s on an idle machine (the call itself is some 20 s of real-time audio);
  // generous for a loaded one.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no end of the demo within 120 s:\n${demo.out.stdout}\n${demo.out.stderr}`)), 120_000);
    void demo.exited.then((code) => reject(new Error(`the demo exited (${code}) early:\n${demo.out.stdout}\n${demo.out.stderr}`)));
    demo.child.stdout!.on('data', () => {
      if (demo.out.stdout.includes('Ctrl-C stops it.')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const out = demo.out.stdout;
  expect(out).toContain(`(data in ${dataDir})`);
  expect(existsSync(join(dataDir, 'switchboard.db'))).toBe(true);
  expect(out).toMatch(/SIMULATION: simulated carrier, callee, speech recognition, voice and model/);
  // The transcript: the greeting, the callee's two recorded sentences, the model's answers.
  expect(out).toContain(
    [
      'Transcript:',
      "  Agent: Hi, this is Luigi's returning your call. How can I help?",
      '  Caller: Hi, I would like to book a table for two tomorrow evening.',
      '  Agent: Of course. A table for two, tomorrow evening: it is booked. Anything else?',
      '  Caller: Thank you, goodbye.',
      '  Agent: Goodbye, have a nice day!',
    ].join('\n'),
  );
  expect(out).toMatch(/completed, agent_hangup, \d+ s/);
  expect(out).toContain('  analysis_status: "done"');
  expect(out).toContain('  sentiment: "happy"');
  expect(out).toContain('  successful: true');
  expect(out).toContain('  extracted: {"party_size":2,"when":"tomorrow evening"}');

  // The webhook as printed: headers and body, signed with the account's secret.
  const url = /still running at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
  const key = /^ {2}key {2}(key_\S+:sk_\S+)$/m.exec(out)![1]!;
  const header = (name: string) => new RegExp(`^  ${name}: (\\S+)$`, 'm').exec(out)![1]!;
  const headers = { 'webhook-id': header('webhook-id'), 'webhook-timestamp': header('webhook-timestamp'), 'webhook-signature': header('webhook-signature') };
  expect(headers['webhook-id']).toMatch(/^whd_/);
  expect(out).toContain("signature: verifies with the account's webhook secret whsec_");
  const printed = /^ {2}body: (\{[\s\S]*?\n {2}\})$/m.exec(out)![1]!;
  const payload = JSON.parse(printed) as Record<string, unknown>;
  expect(payload).toMatchObject({ event: 'call.completed', direction: 'outbound', ended_reason: 'agent_hangup', sentiment: 'happy', successful: true });
  const { secret } = (await (await fetch(`${url}/v1/webhooks/secret`, { headers: { authorization: `Bearer ${key}` } })).json()) as { secret: string };
  // What was printed is what was signed: the compact JSON of the printed body verifies.
  expect(() => new Webhook(secret).verify(JSON.stringify(payload), headers)).not.toThrow();
  expect(() => new Webhook(secret).verify(JSON.stringify({ ...payload, successful: false }), headers)).toThrow();

  // Still serving, with the browser pages it printed.
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  for (const page of ['/playground', '/dashboard']) {
    const exists = (await fetch(url + page)).status === 200;
    expect(out.includes(`  ${url}${page}\n`), page).toBe(exists);
  }
  const calls = (await (await fetch(`${url}/v1/calls`, { headers: { authorization: `Bearer ${key}` } })).json()) as { calls: unknown[] };
  expect(calls.calls).toHaveLength(1);

  demo.child.kill('SIGINT');
  const code = await Promise.race([demo.exited, new Promise((r) => setTimeout(() => r('still running 20 s after SIGINT'), 20_000))]);
  expect(code).toBe(0);
  await expect(fetch(`${url}/healthz`)).rejects.toThrow();
});

it('exits 1 before starting anything when a port it needs is taken, naming the port and its variable', { timeout: 60_000 }, async () => {
  const taken: Server = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  try {
    for (const variable of ['DEMO_PORT', 'SIM_LLM_PORT']) {
      const demo = runDemo({ ...FREE_PORTS, DEMO_DATA_DIR: dataDir, [variable]: String(port) });
      const code = await Promise.race([demo.exited, new Promise((r) => setTimeout(() => r('still running after 45 s'), 45_000))]);
      expect(code, demo.out.stdout + demo.out.stderr).toBe(1);
      expect(demo.out.stderr).toContain(`port ${port} (`);
      expect(demo.out.stderr).toContain(`${variable}) is already in use`);
      // Nothing started: the first line of a started demo was never printed.
      expect(demo.out.stdout).not.toContain('Switchboard demo:');
    }
  } finally {
    taken.close();
  }
});
