// The contract every carrier media codec must meet, run by each codec's test file with
// its own fixtures (copied from carriers.md), as hono runs all its routers through one
// suite: documented inbound events decode to the expected frames, outbound frames
// encode to the documented JSON, audio and marks survive a trip through the carrier,
// and no input from the wire can make decode throw or yield a malformed frame.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { MediaCodec } from './codec.ts';
import type { InboundFrame, OutboundFrame } from './frames.ts';

export interface CodecFixtures {
  /** Carrier messages and the frame each decodes to; must cover every inbound event type. */
  inbound: readonly { name: string; wire: string; frame: InboundFrame }[];
  /** Frames and the exact wire JSON the carrier documents for them; must cover audio, mark and clear. */
  outbound: readonly { frame: OutboundFrame; streamId: string; wire: string }[];
  /** Carrier-specific malformed messages; each must decode to `invalid`. */
  invalid: readonly { name: string; wire: string }[];
  /** The inbound message the carrier would send for an outbound media or mark message we sent. */
  echo(outbound: string, seq: number): string;
}

const INBOUND_TYPES = ['connected', 'start', 'audio', 'dtmf', 'mark', 'stop'] as const;
const OUTBOUND_TYPES = ['audio', 'mark', 'clear'] as const;

/** Payload bytes compared by value: codecs may return a Buffer or a pooled view. */
function comparable(frame: InboundFrame): unknown {
  return frame.type === 'audio' ? { ...frame, payload: Array.from(frame.payload) } : frame;
}

const nonNegInt = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
const isStringMap = (m: unknown) =>
  typeof m === 'object' && m !== null && Object.values(m).every((v) => typeof v === 'string');

/** The frame invariants consumers rely on without re-checking. */
function wellFormed(f: InboundFrame): boolean {
  switch (f.type) {
    case 'connected':
    case 'stop':
      return true;
    case 'start':
      return f.carrierCallId !== '' && f.streamId !== '' && isStringMap(f.customParameters) && f.encoding === 'mulaw' && nonNegInt(f.sampleRate) && f.sampleRate > 0;
    case 'audio':
      return nonNegInt(f.seq) && nonNegInt(f.chunk) && nonNegInt(f.timestampMs) && f.payload instanceof Uint8Array;
    case 'dtmf':
      return /^[0-9*#A-D]$/.test(f.digit);
    case 'mark':
      return typeof f.name === 'string';
    case 'error':
      return nonNegInt(f.code) && typeof f.title === 'string' && typeof f.detail === 'string';
    case 'invalid':
      return typeof f.reason === 'string' && f.reason !== '';
  }
}

/** Every path to a value inside a JSON object, for mutation tests. */
function paths(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null) return [prefix];
  const inner = Object.entries(value).flatMap(([k, v]) => paths(v, [...prefix, k]));
  return prefix.length === 0 ? inner : [prefix, ...inner];
}

/** A copy of `json` with the value at `path` replaced (or removed when `value` is undefined). */
function mutate(json: string, path: string[], value: unknown): string {
  const root = JSON.parse(json) as Record<string, unknown>;
  let node = root;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = path[path.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return JSON.stringify(root);
}

export function codecContract(carrier: string, codec: MediaCodec, fixtures: CodecFixtures): void {
  const audioIn = fixtures.inbound.find((f) => f.frame.type === 'audio');
  const streamId = fixtures.outbound[0]?.streamId ?? 'stream';

  describe(`${carrier} media codec contract`, () => {
    it('has fixtures for every inbound and outbound frame type', () => {
      const inbound = new Set(fixtures.inbound.map((f) => f.frame.type));
      const outbound = new Set(fixtures.outbound.map((f) => f.frame.type));
      for (const t of INBOUND_TYPES) expect(inbound, `inbound ${t}`).toContain(t);
      for (const t of OUTBOUND_TYPES) expect(outbound, `outbound ${t}`).toContain(t);
    });

    it.each(fixtures.inbound)('decodes $name', ({ wire, frame }) => {
      expect(comparable(codec.decode(wire))).toEqual(comparable(frame));
    });

    it.each(fixtures.outbound)('encodes outbound $frame.type to the documented JSON', ({ frame, streamId: id, wire }) => {
      expect(codec.encode(frame, id)).toBe(JSON.stringify(JSON.parse(wire)));
    });

    it.each(fixtures.outbound.filter((f) => f.frame.type !== 'clear'))(
      'round-trips outbound $frame.type through the carrier',
      ({ frame, streamId: id }) => {
        const back = codec.decode(fixtures.echo(codec.encode(frame, id), 7));
        if (frame.type !== 'audio') return void expect(back).toEqual(frame);
        expect(back.type === 'audio' && { seq: back.seq, payload: Array.from(back.payload) }).toEqual({ seq: 7, payload: Array.from(frame.payload) });
      },
    );

    const generic = [
      ['empty text', ''],
      ['truncated JSON', '{"event":"media"'],
      ['not JSON', 'hello'],
      ['JSON null', 'null'],
      ['JSON array', '[{"event":"stop"}]'],
      ['JSON string', '"stop"'],
      ['missing event', '{}'],
      ['non-string event', '{"event":7}'],
      ['unknown event', '{"event":"bogus"}'],
    ];
    if (audioIn) {
      generic.push(['media without payload', mutate(audioIn.wire, ['media', 'payload'], undefined)]);
      generic.push(['media with non-base64 payload', mutate(audioIn.wire, ['media', 'payload'], 'not base64!')]);
      generic.push(['media with numeric payload', mutate(audioIn.wire, ['media', 'payload'], 12)]);
      generic.push(['media without media', mutate(audioIn.wire, ['media'], undefined)]);
    }
    it.each([...generic.map(([name, wire]) => ({ name: name!, wire: wire! })), ...fixtures.invalid])(
      'turns $name into an invalid frame',
      ({ wire }) => {
        const frame = codec.decode(wire);
        expect(frame.type).toBe('invalid');
        expect(wellFormed(frame)).toBe(true);
      },
    );

    it('property: any audio payload survives encode → carrier → decode', () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 1600 }), fc.nat(), (bytes, seq) => {
          const back = codec.decode(fixtures.echo(codec.encode({ type: 'audio', payload: bytes }, streamId), seq));
          expect(back.type).toBe('audio');
          if (back.type === 'audio') expect(Array.from(back.payload)).toEqual(Array.from(bytes));
        }),
      );
    });

    it('property: any mark name survives encode → carrier → decode', () => {
      fc.assert(
        fc.property(fc.oneof(fc.string({ unit: 'grapheme' }), fc.constantFrom('"', '\\', '\u0000\n', '\ud800', 'a\u2028b')), (name) => {
          expect(codec.decode(fixtures.echo(codec.encode({ type: 'mark', name }, streamId), 1))).toEqual({ type: 'mark', name });
        }),
      );
    });

    it('property: arbitrary JSON and mutated fixtures never throw and yield well-formed frames', () => {
      fc.assert(
        fc.property(fc.jsonValue(), (v) => {
          expect(wellFormed(codec.decode(JSON.stringify(v) ?? ''))).toBe(true);
        }),
      );
      const targets = fixtures.inbound.flatMap(({ wire }) => paths(JSON.parse(wire)).map((path) => ({ wire, path })));
      fc.assert(
        fc.property(fc.constantFrom(...targets), fc.option(fc.jsonValue(), { nil: undefined }), ({ wire, path }, value) => {
          expect(wellFormed(codec.decode(mutate(wire, path, value)))).toBe(true);
        }),
        { numRuns: 500 },
      );
    });
  });
}
