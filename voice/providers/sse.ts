// Server-sent events (the WHATWG event-stream format) as the model's streamed reply
// speaks it: `data:` lines gathered into one event per blank line, comments (`:`)
// and the other fields (`event`, `id`, `retry`) ignored. TCP cuts the stream
// anywhere, so a line, and even a CR LF pair, may arrive in two pieces: the parser
// keeps the unfinished line and dispatches only complete events. It takes text;
// the caller decodes bytes with a streaming TextDecoder, which likewise keeps a
// UTF-8 sequence split across chunks until it is whole.

export interface SseParser {
  /** Feeds decoded text (any chunking); calls `onData` for every event completed by it. */
  push(text: string): void;
  /** True when an unfinished line or event is still held (the stream stopped mid-event). */
  pending(): boolean;
}

/** `onData` receives each event's data: its `data:` lines joined with `\n`. */
export function createSseParser(onData: (data: string) => void): SseParser {
  let buffer = '';
  // Data lines of the event being read; null when the event has none yet.
  let data: string | null = null;
  // A chunk ended with CR: if the next one starts with LF, that LF ends nothing new.
  let skipLf = false;

  const line = (text: string): void => {
    if (text === '') {
      if (data !== null) {
        const event = data;
        data = null;
        onData(event);
      }
      return;
    }
    if (text.charCodeAt(0) === 0x3a) return; // ':' comment, e.g. a keep-alive
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    if (field !== 'data') return;
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    data = data === null ? value : `${data}\n${value}`;
  };

  return {
    push(text) {
      let start = 0;
      if (skipLf && text.charCodeAt(0) === 0x0a) start = 1;
      skipLf = false;
      const n = text.length;
      for (let i = start; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c !== 0x0a && c !== 0x0d) continue;
        const piece = text.slice(start, i);
        line(buffer === '' ? piece : buffer + piece);
        buffer = '';
        if (c === 0x0d) {
          if (i + 1 < n) {
            if (text.charCodeAt(i + 1) === 0x0a) i++;
          } else {
            skipLf = true;
          }
        }
        start = i + 1;
      }
      if (start < n) buffer += text.slice(start);
    },
    pending() {
      return buffer !== '' || data !== null;
    },
  };
}
