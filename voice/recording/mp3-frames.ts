// Checks that bytes are an MP3 file and nothing else, as they arrive: an optional ID3v2
// tag, then MPEG audio Layer III frames back to back, each header valid (sync, version,
// layer, bitrate, sample rate) and each frame exactly as long as its header says, every
// frame at the first one's sample rate, and at the end an optional ID3v1 tag. A file that
// merely starts like an MP3 (an `ID3` prefix in front of a web page) fails at its first
// frame, after a few bytes, so a download can stop there. The frames also give the
// file's real length in seconds.

/** Why the bytes are not an MP3 file of the expected kind. */
export class NotMp3Error extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotMp3Error';
  }
}

/** Layer III bitrates in kbit/s by index; index 0 (free format) and 15 are refused. */
const BITRATES_V1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const BITRATES_V2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
/** Sample rates by version bits (0: MPEG 2.5, 2: MPEG 2, 3: MPEG 1) and index. */
const SAMPLE_RATES: Record<number, number[]> = { 0: [11025, 12000, 8000], 2: [22050, 24000, 16000], 3: [44100, 48000, 32000] };
/** A valid file has at least this many frames (a lone header-shaped accident is not audio). */
const MIN_FRAMES = 2;

interface FrameHeader {
  length: number;
  sampleRate: number;
  samples: number;
}

/** The frame whose 4-byte header starts at `b[i]`, or a reason it is not one. */
function frameAt(b: Uint8Array, i: number): FrameHeader | string {
  if (b[i] !== 0xff || (b[i + 1]! & 0xe0) !== 0xe0) return 'no MPEG frame sync';
  const version = (b[i + 1]! >> 3) & 0b11;
  const layer = (b[i + 1]! >> 1) & 0b11;
  const bitrateIndex = b[i + 2]! >> 4;
  const rateIndex = (b[i + 2]! >> 2) & 0b11;
  const padding = (b[i + 2]! >> 1) & 1;
  if (version === 1) return 'a reserved MPEG version';
  if (layer !== 0b01) return 'not Layer III';
  if (bitrateIndex === 0 || bitrateIndex === 15) return 'a free-format or invalid bitrate';
  if (rateIndex === 3) return 'a reserved sample rate';
  const sampleRate = SAMPLE_RATES[version]![rateIndex]!;
  const kbps = (version === 3 ? BITRATES_V1 : BITRATES_V2)[bitrateIndex]!;
  // Layer III: 1152 samples a frame for MPEG 1, 576 for MPEG 2 and 2.5.
  const samples = version === 3 ? 1152 : 576;
  const length = Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + padding;
  return { length, sampleRate, samples };
}

export interface Mp3Summary {
  frames: number;
  sampleRate: number;
  /** The audio's length from its frames. */
  seconds: number;
}

/**
 * Walks an MP3 chunk by chunk. `push` throws NotMp3Error as soon as the bytes stop being
 * an MP3; `finish` throws when the file ended before it was one, and otherwise sums it up.
 */
export class Mp3FrameWalker {
  /** Bytes received but not yet judged (at most one frame's worth). */
  private pending: Uint8Array = new Uint8Array(0);
  /** Bytes still to skip: the rest of the ID3v2 tag or of the current frame. */
  private skip = 0;
  private started = false;
  private frames = 0;
  private samples = 0;
  private sampleRate = 0;
  /** An ID3v1 tag (`TAG`, 128 bytes) was found where a frame should be: only it may remain. */
  private trailer = 0;

  push(chunk: Uint8Array): void {
    let b = chunk;
    if (this.skip > 0) {
      const n = Math.min(this.skip, b.length);
      this.skip -= n;
      b = b.subarray(n);
      if (b.length === 0) return;
    }
    if (this.pending.length > 0) {
      const joined = new Uint8Array(this.pending.length + b.length);
      joined.set(this.pending);
      joined.set(b, this.pending.length);
      b = joined;
    }
    let i = 0;
    for (;;) {
      if (this.trailer > 0) {
        this.trailer += b.length - i;
        if (this.trailer > 128) throw new NotMp3Error('bytes follow the ID3v1 tag');
        i = b.length;
        break;
      }
      if (!this.started) {
        if (b.length - i < 10) break;
        this.started = true;
        if (b[i] === 0x49 && b[i + 1] === 0x44 && b[i + 2] === 0x33) {
          // ID3v2: a 10-byte header whose size is four 7-bit bytes, plus a footer when flagged.
          const size = ((b[i + 6]! & 0x7f) << 21) | ((b[i + 7]! & 0x7f) << 14) | ((b[i + 8]! & 0x7f) << 7) | (b[i + 9]! & 0x7f);
          if ((b[i + 6]! | b[i + 7]! | b[i + 8]! | b[i + 9]!) & 0x80) throw new NotMp3Error('the ID3v2 tag size is malformed');
          const total = 10 + size + (b[i + 5]! & 0x10 ? 10 : 0);
          const here = Math.min(total, b.length - i);
          i += here;
          this.skip = total - here;
          if (this.skip > 0) break;
          continue;
        }
      }
      if (b.length - i < 4) break;
      if (this.frames >= MIN_FRAMES && b[i] === 0x54 && b[i + 1] === 0x41 && b[i + 2] === 0x47) {
        this.trailer = b.length - i;
        if (this.trailer > 128) throw new NotMp3Error('bytes follow the ID3v1 tag');
        i = b.length;
        break;
      }
      const frame = frameAt(b, i);
      if (typeof frame === 'string') throw new NotMp3Error(`byte ${this.frames === 0 ? 'at the start of the audio' : `after frame ${this.frames}`}: ${frame}`);
      if (this.sampleRate === 0) this.sampleRate = frame.sampleRate;
      else if (frame.sampleRate !== this.sampleRate) throw new NotMp3Error('the sample rate changes between frames');
      this.frames++;
      this.samples += frame.samples;
      const here = Math.min(frame.length, b.length - i);
      i += here;
      this.skip = frame.length - here;
      if (this.skip > 0) break;
    }
    this.pending = b.slice(i);
  }

  finish(): Mp3Summary {
    if (this.skip > 0 && this.frames <= MIN_FRAMES) throw new NotMp3Error('the file ends inside its first frames');
    if (this.trailer > 0 && this.trailer !== 128) throw new NotMp3Error('the file ends inside its ID3v1 tag');
    // A few stray bytes after the last whole frame (an encoder's cut) are tolerated; a header-sized remainder is not judged.
    if (this.frames < MIN_FRAMES) throw new NotMp3Error(this.started ? 'the file holds no MPEG audio frames' : 'the file is empty');
    return { frames: this.frames, sampleRate: this.sampleRate, seconds: this.samples / this.sampleRate };
  }
}
