// The conversation bench runs hundreds of calls against one Deepgram simulator, whose
// `say()` queue is one for all sockets; its `transcribe` option lets each socket answer
// for itself (by the socket and the utterance's index on it) when nothing is queued,
// while a queued text still comes first. Checked over the real websocket protocol.
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startDeepgramSim, type DeepgramSim } from '../test/sim/deepgram-sim.ts';
import { mulawTone } from '../test/sim/far-end-playback.ts';

const sims: DeepgramSim[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.close()));
});

/** Opens a socket tagged `caller`, speaks `utterances` bursts of tone each followed by silence, returns the finals' transcripts. */
async function speak(sim: DeepgramSim, caller: string, utterances: number): Promise<string[]> {
  const ws = new WebSocket(`${sim.url}/v1/listen?encoding=mulaw&sample_rate=8000&endpointing=100&caller=${caller}`, { headers: { authorization: 'Token k' } });
  const finals: string[] = [];
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { type: string; is_final?: boolean; channel?: { alternatives: { transcript: string }[] } };
    if (m.type === 'Results' && m.is_final) finals.push(m.channel!.alternatives[0]!.transcript);
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const silence = new Uint8Array(8 * 300).fill(0xff);
  for (let i = 0; i < utterances; i++) {
    ws.send(mulawTone(440, 400));
    ws.send(silence);
  }
  const deadline = Date.now() + 5000;
  while (finals.length < utterances && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  ws.close();
  return finals;
}

describe('the Deepgram simulator with many callers', () => {
  it('lets each socket say its own words when nothing is queued, a queued text first', async () => {
    const sim = await startDeepgramSim({ transcribe: (conn, i) => `${conn.query.get('caller')} line ${i}` });
    sims.push(sim);
    const [a, b] = await Promise.all([speak(sim, 'alice', 3), speak(sim, 'bob', 2)]);
    expect(a).toEqual(['alice line 0', 'alice line 1', 'alice line 2']);
    expect(b).toEqual(['bob line 0', 'bob line 1']);
    sim.say('Queued words win.');
    expect(await speak(sim, 'carol', 2)).toEqual(['Queued words win.', 'carol line 1']);
  });

  it('says nothing for an utterance without the option, as before', async () => {
    const sim = await startDeepgramSim();
    sims.push(sim);
    expect(await speak(sim, 'dave', 1)).toEqual(['']);
  });
});
