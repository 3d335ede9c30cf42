// A carrier's recording of a call, as the simulators make one: the audio the service
// played on the call's media streams (μ-law, in order), on a timeline as long as the
// recording ran, encoded as MP3 (mono, 8 kHz) by the same pure-JS encoder the service
// uses for its own recordings. Real carriers record both sides; the simulators record
// what they received, which is what a test can check against.
import { decodeMulaw } from '../../voice/audio/mulaw.ts';
import { encodeMp3 } from '../../voice/recording/mp3.ts';

/**
 * How long after the call's end the simulated carrier says the file is ready: real ones
 * take seconds, so the service must wait for it before call.completed.
 */
export const SIM_RECORDING_READY_MS = 1500;

export const simRecordingReady = (): Promise<void> => new Promise((r) => setTimeout(r, SIM_RECORDING_READY_MS).unref());

export async function simRecordingMp3(played: Uint8Array[], seconds: number): Promise<Uint8Array> {
  const pcm = new Int16Array(Math.max(1, Math.round(seconds * 8000)));
  let at = 0;
  for (const part of played) {
    const samples = decodeMulaw(part);
    const n = Math.min(samples.length, pcm.length - at);
    if (n <= 0) break;
    pcm.set(samples.subarray(0, n), at);
    at += n;
  }
  return encodeMp3(pcm);
}

/** Hex of `n` random-ish bytes for carrier ids (RE…, recording ids). */
export function simHex(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(Math.random() * 256).toString(16).padStart(2, '0');
  return s;
}
