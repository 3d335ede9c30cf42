// `npm run sim` as the README uses it: the local carriers start, print how to point
// the service at them, and answer on the control port.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

it('starts both simulated carriers and the control server', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/sim/local-carriers.ts'], {
    cwd: root,
    env: { ...process.env, SIM_TWILIO_PORT: '0', SIM_TELNYX_PORT: '0', SIM_CONTROL_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner: ${out}`)), 15_000);
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
