// The playout clock for real: a uWS media socket on loopback, the process ticker's
// timer, and the carrier A simulator playing the audio back in real time and returning
// the mark once it played (the unit tests tick by hand: voice/media/playout.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import uWS from 'uWebSockets.js';
import type { MediaOutput } from '../voice/engine/engine.ts';
import { registerMediaSockets, type MediaSockets } from '../http/media-ws.ts';
import { Metrics } from '../metrics.ts';
import { connectTwilioMedia } from './sim/twilio-media-client.ts';
import type { MediaBinding, MediaBindings, MediaProvider } from '../voice/media/bindings.ts';
import { createPlayout, createPlayoutTicker, FRAME_BYTES, type Playout } from '../voice/media/playout.ts';

/** `ms` of audio whose bytes count up (mod 251, so frames differ): any loss or repeat shows. */
function ramp(ms: number): Uint8Array {
  const out = new Uint8Array(ms * 8);
  for (let i = 0; i < out.length; i++) out[i] = i % 251;
  return out;
}

class OneCall implements MediaBindings {
  readonly events: unknown[] = [];
  constructor(private readonly token: string) {}
  claim(provider: MediaProvider, token: string): MediaBinding | null {
    if (provider !== 'twilio' || token !== this.token) return null;
    return { callId: 'call_playout', accountId: 'acct_1', direction: 'inbound', agentId: null, deliver: (e) => this.events.push(e) };
  }
}

describe('on a real media socket', () => {
  const ticker = createPlayoutTicker();
  let listen: uWS.us_listen_socket | null = null;
  let sockets: MediaSockets;
  let port = 0;
  const greeting = ramp(600);
  let corks = 0;
  let playout: Playout | null = null;
  let played: Promise<boolean> | null = null;
  let startedAt = 0;

  beforeAll(async () => {
    const app = uWS.App();
    sockets = registerMediaSockets(app, {
      bindings: new OneCall('tok_playout'),
      clock: Date.now,
      metrics: new Metrics(),
      log: pino({ level: 'silent' }),
      // The engine a conversation would be: its audio goes through a playout on the shared ticker.
      engine: (output) => {
        const counted: MediaOutput = {
          play: (m) => output.play(m),
          mark: (n) => output.mark(n),
          clear: () => output.clear(),
          backedUp: () => output.backedUp?.() ?? false,
          cork: (fn) => {
            corks++;
            output.cork ? output.cork(fn) : fn();
          },
        };
        const p = createPlayout(counted);
        playout = p;
        ticker.add(p);
        startedAt = performance.now();
        p.enqueue(greeting, 0);
        played = p.markEnd('greeting');
        return {
          onAudio() {},
          onDtmf() {},
          onMark: (name) => void p.onMark(name),
          close() {
            ticker.remove(p);
            p.close();
          },
        };
      },
    });
    await new Promise<void>((resolve, reject) =>
      app.listen('127.0.0.1', 0, (s) => {
        if (!s) return reject(new Error('listen failed'));
        listen = s;
        port = uWS.us_socket_local_port(s);
        resolve();
      }),
    );
  });

  afterAll(() => {
    sockets.closeAll();
    if (listen) uWS.us_listen_socket_close(listen);
    ticker.stop();
  });

  it('paces the agent audio to the carrier in real time, corked, and the carrier returns the mark once it played', async () => {
    const client = connectTwilioMedia({
      url: `ws://127.0.0.1:${port}/carrier/twilio/media`,
      accountSid: 'AC00000000000000000000000000000001',
      callSid: 'CA00000000000000000000000000000001',
      customParameters: { token: 'tok_playout' },
    });
    await client.opened;
    const deadline = Date.now() + 3000;
    while (playout === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(playout).not.toBeNull();
    // 300 ms in, the carrier holds about 300 ms plus the lead: not the whole 600 ms at once.
    await new Promise((r) => setTimeout(r, 300 - (performance.now() - startedAt)));
    const midway = client.audio.length;
    expect(midway).toBeGreaterThanOrEqual(12);
    expect(midway).toBeLessThanOrEqual(22);
    await expect(played!).resolves.toBe(true);
    // The mark came back after the audio played: 600 ms from the start at least.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(590);
    expect(client.marks).toEqual(['greeting']);
    expect(client.audio.every((f) => f.length === FRAME_BYTES)).toBe(true);
    expect(Buffer.from(client.receivedAudio()).equals(greeting)).toBe(true);
    expect(client.invalid).toEqual([]);
    expect(corks).toBeGreaterThanOrEqual(20);
    expect(playout!.progress(0)).toBe(600);
    expect(playout!.underruns).toBe(0);
    await client.stop();
    expect(ticker.size).toBe(0);
  });
});
