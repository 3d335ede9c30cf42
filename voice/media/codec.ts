// The one interface every carrier media codec implements, and the field readers they
// share. Readers never throw: each returns a sentinel (-1, null, undefined) that the
// codec turns into an `invalid` frame naming the field, because wire input comes
// from outside and one bad message must not take down a call.
import type { InboundFrame, OutboundFrame } from './frames.ts';

export interface MediaCodec {
  /** Parses one websocket text message; never throws. */
  decode(text: string): InboundFrame;
  /** Serialises one frame; carriers that do not need `streamId` on the wire ignore it. */
  encode(frame: OutboundFrame, streamId: string): string;
}

export type WireObject = Record<string, unknown>;

/** The message as a JSON object, or undefined for invalid JSON and non-objects. */
export function parseObject(text: string): WireObject | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return asObject(value);
}

export function asObject(value: unknown): WireObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as WireObject) : undefined;
}

/** A non-empty string, or undefined. */
export function readString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * A non-negative integer sent as a decimal string (the documented form) or as a JSON
 * number (tolerated); -1 otherwise. Digits only: `Number()` would also take " 7",
 * "0x1f" and "1e3".
 */
export function readCount(value: unknown): number {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : -1;
  if (typeof value !== 'string' || value.length === 0 || value.length > 15) return -1;
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const d = value.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * Base64 to bytes, or null when the value is not a string or not base64. Node's
 * decoder silently skips characters outside the alphabet, so a decoded length short
 * of what the text length promises means the text was not base64. The result may be
 * a slice of Node's shared buffer pool.
 */
export function readBase64(value: unknown): Uint8Array | null {
  if (typeof value !== 'string') return null;
  let n = value.length;
  if (n > 0 && value.charCodeAt(n - 1) === 61) n--; // '='
  if (n > 0 && value.charCodeAt(n - 1) === 61) n--;
  if ((n & 3) === 1) return null;
  const bytes = Buffer.from(value, 'base64');
  return bytes.length === (n >> 2) * 3 + ((n & 3) === 0 ? 0 : (n & 3) - 1) ? bytes : null;
}

export function writeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

const KEYS = /^[0-9*#A-D]$/;

/** One DTMF key, upper-cased; undefined for anything else. */
export function readDigit(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length !== 1) return undefined;
  const digit = value.toUpperCase();
  return KEYS.test(digit) ? digit : undefined;
}

/** Carrier A names μ-law `audio/x-mulaw`; carrier B `PCMU` now and `audio/x-mulaw` in older docs. */
export function isMulaw(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const v = value.toLowerCase();
  return v === 'audio/x-mulaw' || v === 'pcmu';
}

/**
 * Custom parameters as a flat string map. Accepts an object (carrier A) or a list of
 * `{name, value}` (the shape carrier B's streaming_start takes; how it echoes them is
 * UNCONFIRMED). Entries whose value is not a string are dropped rather than failing
 * the whole start message.
 */
export function readParameters(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(value)) {
    for (const item of value) {
      const entry = asObject(item);
      if (entry && typeof entry.name === 'string' && typeof entry.value === 'string') out[entry.name] = entry.value;
    }
    return out;
  }
  const obj = asObject(value);
  if (obj) for (const key of Object.keys(obj)) if (typeof obj[key] === 'string') out[key] = obj[key];
  return out;
}
