// A browser's side of a web call, from Node (the `ws` client): it opens the call's media
// websocket with the access token, sends 16 kHz 16-bit PCM every 20 ms in real time
// (silence, or a real speech fixture resampled from its 8 kHz μ-law), plays what the
// agent sends in real time (so a `mark` goes back once the audio before it has played,
// and `clear` drops what is queued and returns pending marks at once), and records every
// control message.
import WebSocket from 'ws';
import { decodeMulaw } from '../../voice/audio/mulaw.ts';
import { resample } from '../../voice/audio/resample.ts';
import { loadSpeechFixture } from '../fixtures/speech/speech.ts';
import type { SpeechFixtureSlug } from '../fixtures/speech/speech.ts';

/** 16 kHz 16-bit mono: 32 bytes a millisecond, 640 a 20 ms frame. */
const BYTES_PER_MS = 32;
const FRAME_BYTES = 640;

/** A speech fixture as the browser would capture it: 16 kHz little-endian PCM. */
export function fixturePcm16(slug: SpeechFixtureSlug): Uint8Array {
  const pcm8 = decodeMulaw(loadSpeechFixture(slug));
  const pcm16 = resample({ samples: pcm8, sampleRate: 8000 }, 16000).samples;
  const out = new Uint8Array(pcm16.length * 2);
  for (let i = 0; i < pcm16.length; i++) {
    out[2 * i] = pcm16[i]! & 0xff;
    out[2 * i + 1] = (pcm16[i]! >> 8) & 0xff;
  }
  return out;
}

/** Root mean square of little-endian 16-bit PCM, as a fraction of full scale. */
export function rmsOf(bytes: Uint8Array): number {
  let sum = 0;
  const n = bytes.length >> 1;
  for (let i = 0; i < n; i++) {
    const v = ((bytes[2 * i]! | (bytes[2 * i + 1]! << 8)) << 16) >> 16;
    sum += v * v;
  }
  return n === 0 ? 0 : Math.sqrt(sum / n) / 32768;
}

export type ControlMessage = { type: string } & Record<string, unknown>;

export interface WebCaller {
  /** Control messages received, in order. */
  messages: ControlMessage[];
  /** Binary audio messages received, in order. */
  audio: Uint8Array[];
  heardBytes(): number;
  clears(): number;
  transcripts(): { speaker: string; text: string; final: boolean }[];
  /** Queues PCM to send; resolves once its last frame was sent. */
  say(pcm: Uint8Array): Promise<void>;
  /** Sends `{type:"hangup"}`. */
  hangup(): void;
  /** Resolves with the close code once the socket closed. */
  closed: Promise<number>;
  close(): void;
}

/** Opens the socket; rejects with `Error("unexpected response <status>")` when the upgrade is refused. */
export function openWebCall(url: string): Promise<WebCaller> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.binaryType = 'nodebuffer';
    const messages: ControlMessage[] = [];
    const audio: Uint8Array[] = [];
    let playbackEnd = 0;
    let clears = 0;
    const pending: { name: string; timer: NodeJS.Timeout }[] = [];
    const queue: { pcm: Uint8Array; offset: number; done: () => void }[] = [];
    const silence = new Uint8Array(FRAME_BYTES);
    let ticker: NodeJS.Timeout | null = null;
    let closedResolve!: (code: number) => void;
    const closed = new Promise<number>((r) => (closedResolve = r));
    const returnMark = (name: string) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'mark', name }));
    };

    ws.on('unexpected-response', (_req, res) => reject(new Error(`unexpected response ${res.statusCode}`)));
    ws.on('error', (err) => reject(err));
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const now = performance.now();
      if (isBinary) {
        audio.push(new Uint8Array(data));
        playbackEnd = Math.max(playbackEnd, now) + data.length / BYTES_PER_MS;
        return;
      }
      const msg = JSON.parse(data.toString('utf8')) as ControlMessage;
      messages.push(msg);
      if (msg.type === 'mark') {
        const name = String(msg.name);
        const wait = playbackEnd - now;
        if (wait <= 0 && pending.length === 0) return returnMark(name);
        const entry = {
          name,
          timer: setTimeout(() => {
            pending.splice(pending.indexOf(entry), 1);
            returnMark(name);
          }, Math.max(0, wait)),
        };
        pending.push(entry);
      } else if (msg.type === 'clear') {
        clears++;
        playbackEnd = now;
        for (const entry of pending.splice(0)) {
          clearTimeout(entry.timer);
          returnMark(entry.name);
        }
      }
    });
    ws.on('close', (code) => {
      if (ticker) clearInterval(ticker);
      for (const entry of pending.splice(0)) clearTimeout(entry.timer);
      closedResolve(code);
    });
    ws.on('open', () => {
      // The microphone: one 20 ms frame every 20 ms, speech when some is queued.
      let next = performance.now();
      ticker = setInterval(() => {
        // Catch up after a late tick, as a capture clock would: the audio is real time.
        while (next <= performance.now() && ws.readyState === WebSocket.OPEN) {
          next += 20;
          const head = queue[0];
          if (!head) {
            ws.send(silence);
            continue;
          }
          const frame = new Uint8Array(FRAME_BYTES);
          frame.set(head.pcm.subarray(head.offset, head.offset + FRAME_BYTES));
          head.offset += FRAME_BYTES;
          ws.send(frame);
          if (head.offset >= head.pcm.length) {
            queue.shift();
            head.done();
          }
        }
      }, 10);
      resolve({
        messages,
        audio,
        heardBytes: () => audio.reduce((n, a) => n + a.length, 0),
        clears: () => clears,
        transcripts: () =>
          messages.filter((m) => m.type === 'transcript').map((m) => ({ speaker: String(m.speaker), text: String(m.text), final: m.final === true })),
        say: (pcm) => new Promise<void>((done) => queue.push({ pcm, offset: 0, done })),
        hangup: () => ws.send(JSON.stringify({ type: 'hangup' })),
        closed,
        close: () => ws.close(),
      });
    });
  });
}
