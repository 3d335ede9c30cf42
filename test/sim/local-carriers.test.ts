// `npm run sim` as the README uses it: the local carriers start, print how to point
// the service at them, and answer on the control port.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** How long `node --import tsx` takes right now to start, run nothing and exit (ms). */
function bareStartMs(): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', '0'], { cwd: root, stdio: 'ignore' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve(performance.now() - t0));
  });
}

// The simulators start in about 1 s on an idle machine, two or three times what a bare
// `node --import tsx` takes there. How long the banner may take is measured against that
// bare start, timed here just before: twenty times it, never less than 15 s (what an idle
// machine always met), and at most 100 s, inside the test's own timeout. On a loaded
// 2-core machine a fixed 15 s was once too short.
it('starts both simulated carriers and the control server', { timeout: 120_000 }, async () => {
  const bareMs = await bareStartMs();
  const bannerLimitMs = Math.min(100_000, Math.max(15_000, 20 * bareMs));
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/sim/local-carriers.ts'], {
    cwd: root,
    // Every port picked free: a fixed one would collide with another run of the suite at
    // the same time (or a developer's `npm run sim`), and the simulators would exit.
    env: { ...process.env, SIM_TWILIO_PORT: '0', SIM_TELNYX_PORT: '0', SIM_CONTROL_PORT: '0', SIM_LLM_PORT: '0', SIM_DEEPGRAM_PORT: '0', SIM_TTS_PORT: '0', SIM_CARTESIA_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err = (err + String(d)).slice(-2000)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner within ${bannerLimitMs.toFixed(0)} ms (20 × a bare start's ${bareMs.toFixed(0)} ms): ${out}${err}`)), bannerLimitMs);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the simulators exited (${code ?? signal}) before the banner: ${out}${err}`));
      });
      child.stdout!.on('data', (d) => {
        out += String(d);
        if (out.includes('Outbound calls are answered')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    expect(out).toMatch(/TWILIO_API_BASE=http:\/\/127\.0\.0\.1:\d+ TELNYX_API_BASE=http:\/\/127\.0\.0\.1:\d+/);
    expect(out).toContain('ACdeadbeefdeadbeefdeadbeefdeadbeef');
    // Carrier B's public key is the same on every run: the README's import command carries it.
    expect(out).toMatch(/public key trizMGnco2iwG2IK3MH\+dCydYtFppMY8C\/uzdKqcfmM= /);
    const control = /control\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;
    const calls = await (await fetch(`${control}/calls`)).json();
    expect(calls).toEqual({ twilio: [], telnyx: [] });
    const chaos = await fetch(`${control}/chaos/telnyx?seed=3&drop=0.25&reset=0.1&slow=0.2&slow_ms=4000`, { method: 'POST' });
    expect(await chaos.json()).toEqual({ chaos: { seed: 3, dropRate: 0.25, resetRate: 0.1, slowRate: 0.2, slowMs: 4000, match: 'dial' } });
    expect(await (await fetch(`${control}/chaos/telnyx`, { method: 'DELETE' })).json()).toEqual({ chaos: null });
    const twilioBase = /carrier A \(twilio\) REST\s+(\S+)/.exec(out)![1];
    const auth = Buffer.from('ACdeadbeefdeadbeefdeadbeefdeadbeef:local-sim-auth-token-0123456789ab').toString('base64');
    const numbers = await fetch(`${twilioBase}/2010-04-01/Accounts/ACdeadbeefdeadbeefdeadbeefdeadbeef/IncomingPhoneNumbers.json?PhoneNumber=%2B14155550100`, {
      headers: { authorization: `Basic ${auth}` },
    });
    expect(((await numbers.json()) as { incoming_phone_numbers: unknown[] }).incoming_phone_numbers).toHaveLength(1);
  } finally {
    child.kill('SIGTERM');
  }
});
