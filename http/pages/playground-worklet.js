// The playground's audio, on the audio thread (AudioWorkletGlobalScope), in one processor:
//  - capture: the microphone at the context's rate, downsampled to 16 kHz (each output
//    sample the mean of the input samples it covers: a box low-pass, enough for speech)
//    and posted as 20 ms frames of 16-bit PCM (640 bytes);
//  - playback: a queue of the agent's 16 kHz PCM and its marks, resampled to the context's
//    rate by linear interpolation. A mark is posted back when the playhead reaches it (the
//    audio queued before it has played); `clear` empties the queue at once and posts the
//    marks it held. Every ~100 ms it posts how many samples it played and their energy.
const RATE = 16000;
const FRAME = 320; // 20 ms at 16 kHz

class SwitchboardCall extends AudioWorkletProcessor {
  constructor() {
    super();
    // Capture.
    this.inStep = sampleRate / RATE; // context samples per 16 kHz sample
    this.acc = 0;
    this.accN = 0;
    this.accPos = 0;
    this.frame = new Int16Array(FRAME);
    this.filled = 0;
    // Playback: items are Float32Array (16 kHz) or { mark }.
    this.queue = [];
    this.head = 0; // next sample index in queue[0]
    this.outStep = RATE / sampleRate; // 16 kHz samples per context sample
    this.frac = 0;
    this.prev = 0;
    this.cur = 0;
    this.primed = false;
    this.played = 0;
    this.energy = 0;
    this.quanta = 0;
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  onMessage(msg) {
    if (msg.type === 'play') {
      const pcm = new Int16Array(msg.pcm);
      const f = new Float32Array(pcm.length);
      for (let i = 0; i < pcm.length; i++) f[i] = pcm[i] / 32768;
      this.queue.push(f);
    } else if (msg.type === 'mark') {
      this.queue.push({ mark: msg.name });
      this.drainMarks();
    } else if (msg.type === 'clear') {
      for (const item of this.queue) if (!(item instanceof Float32Array)) this.port.postMessage({ type: 'mark', name: item.mark });
      this.queue = [];
      this.head = 0;
      this.primed = false;
      this.prev = this.cur = this.frac = 0;
    }
  }

  /** Marks at the front of the queue have had everything before them played. */
  drainMarks() {
    while (this.queue.length > 0 && !(this.queue[0] instanceof Float32Array)) this.port.postMessage({ type: 'mark', name: this.queue.shift().mark });
  }

  /** The next queued 16 kHz sample, or null when none is queued. */
  next() {
    for (;;) {
      this.drainMarks();
      const chunk = this.queue[0];
      if (!chunk) return null;
      if (this.head < chunk.length) return chunk[this.head++];
      this.queue.shift();
      this.head = 0;
    }
  }

  capture(input) {
    for (let i = 0; i < input.length; i++) {
      this.acc += input[i];
      this.accN++;
      this.accPos += 1;
      if (this.accPos >= this.inStep) {
        this.accPos -= this.inStep;
        const v = Math.max(-1, Math.min(1, this.acc / this.accN));
        this.acc = 0;
        this.accN = 0;
        this.frame[this.filled++] = v < 0 ? v * 32768 : v * 32767;
        if (this.filled === FRAME) {
          const out = this.frame.slice().buffer;
          this.port.postMessage({ type: 'pcm', pcm: out }, [out]);
          this.filled = 0;
        }
      }
    }
  }

  playback(output) {
    for (let i = 0; i < output.length; i++) {
      if (!this.primed) {
        const s = this.next();
        if (s === null) {
          output[i] = 0;
          continue;
        }
        this.prev = this.cur;
        this.cur = s;
        this.primed = true;
      }
      const v = this.prev + (this.cur - this.prev) * this.frac;
      output[i] = v;
      this.played++;
      this.energy += v * v;
      this.frac += this.outStep;
      while (this.frac >= 1) {
        this.frac -= 1;
        const s = this.next();
        if (s === null) {
          // Underrun: hold here until more audio comes.
          this.primed = false;
          this.frac = 0;
          break;
        }
        this.prev = this.cur;
        this.cur = s;
      }
    }
  }

  process(inputs, outputs) {
    const mic = inputs[0] && inputs[0][0];
    if (mic) this.capture(mic);
    const out = outputs[0];
    if (out && out[0]) {
      this.playback(out[0]);
      for (let c = 1; c < out.length; c++) out[c].set(out[0]);
    }
    if (++this.quanta % 37 === 0 && this.played > 0) {
      this.port.postMessage({ type: 'played', samples: this.played, energy: this.energy, rate: sampleRate });
      this.played = 0;
      this.energy = 0;
    }
    return true;
  }
}

registerProcessor('switchboard-call', SwitchboardCall);
